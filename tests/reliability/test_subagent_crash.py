"""A host killed while a sub-agent works: the parent resumes, the child's transcript reads
(the call it was running closed as interrupted, like the parent's), and the child's spend (recorded by the parent only when the child ends) is restored from the
child's own transcript."""

from __future__ import annotations

import json
import signal

import pytest
from helpers.host_process import open_calls, session_file, start_run, wait_until

from zpi_host.sdk import AgentOptions, get_subagent_messages, list_subagents, query
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def _child_started_its_command(agent_dir) -> bool:
    for path in (agent_dir / "sessions").rglob("agent-*.jsonl"):
        return '"tool_use"' in path.read_text()
    return False


async def test_a_kill_during_a_sub_agent_loses_neither_history_nor_spend(tmp_path, zpi_env):
    agent_dir, work = tmp_path / "agent", tmp_path / "work"
    work.mkdir()
    script = tmp_path / "script.jsonl"
    turns = [{"tool_calls": [{"name": "task", "arguments": {
                 "agent_type": "general-purpose", "description": "d", "prompt": "wait"}}],
              "usage": {"input_tokens": 1, "output_tokens": 1}},
             {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 3"}}],
              "usage": {"input_tokens": 7, "output_tokens": 3}},
             {"text": "never reached"}]
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    host = start_run(["--model", f"scripted:{script}", "--permission-mode", "bypass", "go"],
                     cwd=work, agent_dir=agent_dir)
    try:
        assert wait_until(lambda: _child_started_its_command(agent_dir)), \
            host.stderr.read().decode() if host.poll() is not None else "no child started"
    finally:
        host.send_signal(signal.SIGKILL)
        host.wait()
    parent = session_file(agent_dir)
    sid = parent.stem
    (agent_id,) = list_subagents(sid, str(work), agent_dir=agent_dir)
    child = get_subagent_messages(sid, agent_id, str(work), agent_dir=agent_dir)
    assert [m.type for m in child] == ["user", "assistant"]  # the call it was running

    zpi_env.set("ZPI_AGENT_DIR", str(agent_dir))
    options = AgentOptions(resume=sid, cwd=work, agent_dir=agent_dir, model="scripted:memory",
                           provider=ScriptedModel(["resumed"]))
    result = [m async for m in query(prompt="again", options=options)][-1]
    assert result.result == "resumed"
    assert result.model_usage[f"scripted/{script}"]["inputTokens"] == 1 + 7
    assert open_calls(parent) == []  # the task call cut off by the kill is closed
    (child_file,) = parent.parent.rglob("agent-*.jsonl")
    assert open_calls(child_file) == []  # and so is the child's command, as interrupted
    assert get_subagent_messages(sid, agent_id, str(work), agent_dir=agent_dir)[-1].type == \
        "user"
