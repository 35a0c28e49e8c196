"""The other services through the Claude-style SDK's ``query()``: /init, title, notify and the
behaviour instructions (ask has its own file: test_sdk_ask.py)."""

from __future__ import annotations

import json
import sys

import pytest

from zpi_host.sdk import AgentOptions, query
from zpi_host.testing import ScriptedModel
from zpi_host.transcript import list_sessions

pytestmark = pytest.mark.anyio


async def test_init_title_notify_and_instructions_through_query(zpi_env, tmp_path):
    log = tmp_path / "notified.txt"
    notify = [sys.executable, "-c",
              f"import sys; open({str(log)!r}, 'a').write(' | '.join(sys.argv[1:]))"]
    (zpi_env.agent_dir / "settings.json").write_text(json.dumps({"plugins": {"builtins": {
        "notify": {"command": notify, "min_run_seconds": 0},
        "instructions": {"disabled": ["reporting"]}}}}))
    (tmp_path / "Makefile").write_text("test:\n\tpytest\n")
    model = ScriptedModel([
        {"tool_calls": [{"name": "read", "arguments": {"path": "Makefile"}}]},
        "# AGENTS.md\n\nRun `make test`.",
        {"purpose": "title", "text": "Writing AGENTS.md"}])
    options = AgentOptions(model="scripted:memory", provider=model, cwd=tmp_path)
    messages = [m async for m in query(prompt="/init", options=options)]
    result = messages[-1]
    assert not result.is_error and result.result.startswith("# AGENTS.md")
    assert (tmp_path / "AGENTS.md").read_text() == "# AGENTS.md\n\nRun `make test`.\n"
    (info,) = list_sessions(tmp_path, agent_dir=zpi_env.agent_dir)
    assert info.title == "Writing AGENTS.md"
    assert log.read_text().startswith("zpi | the run finished after")
    prompt = model.requests[0].system_prompt
    assert "# Verifying your work" in prompt and "# Reporting" not in prompt
