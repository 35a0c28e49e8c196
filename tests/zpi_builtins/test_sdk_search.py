"""Glob and Grep through the Claude-style SDK, written as a claude-agent-sdk program would be,
against the loopback model server (Anthropic format): the model sees Claude's schemas, its
calls run builtins:search's tools, and a path rule names them as Claude does."""

from __future__ import annotations

import pytest
from helpers.builtins import loopback_sdk_options

from zpi_host.sdk import AgentOptions, ResultMessage, SystemMessage, UserMessage, query

pytestmark = pytest.mark.anyio


def options(server, cwd, **fields) -> AgentOptions:
    return loopback_sdk_options(server, cwd, **fields)


async def test_glob_and_grep_with_claudes_parameters(zpi_env, zpi_model_server, tmp_path):
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("x = 1\nTODO: fix\n")
    (ws / "src" / "b.ts").write_text("// todo later\n")
    (ws / "secret").mkdir()
    (ws / "secret" / "c.py").write_text("TODO secret\n")
    server = zpi_model_server
    server.add_turns(
        {"tool_calls": [{"name": "Glob", "arguments": {"pattern": "src/**/*.{py,ts}"}},
                        {"name": "Grep", "arguments": {"pattern": "todo", "-i": True,
                                                       "output_mode": "content", "-n": True,
                                                       "glob": "*.py", "path": "src"}}]},
        {"tool_calls": [{"name": "Grep", "arguments": {"pattern": "TODO",
                                                       "path": "secret"}}]},
        {"text": "One TODO in Python."})
    messages = [m async for m in query(prompt="find the TODOs", options=options(
        server, ws, disallowed_tools=["Grep(secret/**)", "Grep(secret)"]))]
    init = next(m for m in messages if isinstance(m, SystemMessage))
    assert {"Glob", "Grep"} <= set(init.data["tools"])
    assert not {"glob", "grep"} & set(init.data["tools"])
    results = [b for m in messages if isinstance(m, UserMessage) for b in m.content
               if hasattr(b, "tool_use_id")]
    listed, found, denied = results
    assert set(listed.content.splitlines()) == {"src/a.py", "src/b.ts"}
    assert found.content == "src/a.py:2:TODO: fix" and not found.is_error
    assert denied.is_error and "Grep(secret" in denied.content
    assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error
    sent = server.requests[0].json["tools"]
    grep_schema = next(t for t in sent if t["name"] == "Grep")["input_schema"]
    assert {"-i", "-n", "-A", "-B", "-C", "head_limit", "multiline", "output_mode",
            "glob", "type"} <= set(grep_schema["properties"])
