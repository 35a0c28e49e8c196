"""builtins:memory through the Claude-style SDK's ``query()``: the index in the system prompt,
the ``memory`` tool and a batch at the end of the query."""

from __future__ import annotations

import json

import pytest

from zpi_builtins.memory_store import render
from zpi_host.sdk import AgentOptions, query
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


async def test_memory_tool_index_and_batch_through_query(zpi_env, tmp_path):
    user = zpi_env.agent_dir / "memory"
    user.mkdir()
    (user / "style.md").write_bytes(render("user", "style", "the user's style", "Tabs."))
    model = ScriptedModel([
        {"tool_calls": [{"name": "memory", "arguments": {
            "action": "add", "scope": "project", "name": "test-command",
            "description": "how to run the tests", "content": "`make check`"}}]},
        "Saved.",
        {"purpose": "memory", "text": json.dumps([
            {"action": "replace", "scope": "user", "name": "style", "content": "Spaces."}])}])
    options = AgentOptions(model="scripted:memory", provider=model, cwd=tmp_path,
                           allowed_tools=["memory"], settings=json.dumps({"plugins": {"builtins": {
                               "memory": {"batch": True}}}}))
    messages = [m async for m in query(prompt="remember how to test", options=options)]
    result = messages[-1]
    assert not result.is_error and result.result == "Saved."
    assert "- [user] style: the user's style" in model.requests[0].system_prompt
    saved = (tmp_path / ".zpi" / "memory" / "test-command.md").read_text()
    assert "description: \"how to run the tests\"" in saved and "`make check`" in saved
    assert (user / "style.md").read_text().endswith("\n\nSpaces.\n")
    assert model.remaining == 0

