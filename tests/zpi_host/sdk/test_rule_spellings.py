"""The user's settings rules apply in SDK sessions in either spelling: ``bash(rm:*)`` and
``read(.env)`` (this host's names) stop the SDK's ``Bash`` and ``Read``."""

from __future__ import annotations

import json

import pytest

from zpi_host.sdk import UserMessage, query

from .conftest import collect

pytestmark = pytest.mark.anyio


def results(messages):
    return [b for m in messages if isinstance(m, UserMessage) for b in m.content]


async def test_user_settings_deny_rules_in_host_spelling_stop_the_sdk_tools(scripted):
    (scripted.agent_dir / "settings.json").write_text(json.dumps(
        {"permissions": {"deny": ["bash(rm:*)", "read(.env)"]}}))
    (scripted.cwd / "x").write_text("keep me\n")
    (scripted.cwd / ".env").write_text("TOKEN=hunter2\n")
    (scripted.cwd / "notes.txt").write_text("notes\n")
    scripted.turns({"tool_calls": [
        {"name": "Bash", "arguments": {"command": "rm -f x"}},
        {"name": "Read", "arguments": {"file_path": ".env"}},
        {"name": "Read", "arguments": {"file_path": "notes.txt"}}]}, "ok")
    messages = await collect(query("go", scripted.options(
        permission_mode="bypassPermissions")))
    bash, env, notes = results(messages)
    assert bash.is_error and "denied by rule 'bash(rm:*)'" in bash.content
    assert env.is_error and "denied by rule 'read(.env)'" in env.content
    assert "hunter2" not in env.content
    assert not notes.is_error and "notes" in notes.content  # the rules name only these
    assert (scripted.cwd / "x").read_text() == "keep me\n"
    assert [d["tool_name"] for d in messages[-1].permission_denials] == ["Bash", "Read"]


async def test_option_rules_in_claude_spelling_keep_their_pattern_semantics(scripted):
    """``Bash(rm:*)`` is a command prefix (``rm`` inside a compound line too), not a match on
    the whole input; ``disallowed_tools`` in this host's spelling works as well."""
    (scripted.cwd / "x").write_text("keep me\n")
    scripted.turns({"tool_calls": [
        {"name": "Bash", "arguments": {"command": "echo hi && rm x"}},
        {"name": "Write", "arguments": {"file_path": "out.txt", "content": "data"}}]}, "ok")
    messages = await collect(query("go", scripted.options(
        permission_mode="bypassPermissions", disallowed_tools=["Bash(rm:*)", "write(out*)"])))
    bash, write = results(messages)
    assert bash.is_error and "Bash(rm:*)" in bash.content
    assert write.is_error and "write(out*)" in write.content
    assert (scripted.cwd / "x").exists() and not (scripted.cwd / "out.txt").exists()


async def test_a_bare_name_in_either_spelling_removes_the_standard_tool(scripted):
    scripted.turns("ok")
    messages = await collect(query("go", scripted.options(
        disallowed_tools=["bash", "Write", "read(.env)"])))
    tools = messages[0].data["tools"]
    assert "Bash" not in tools and "Write" not in tools and "bash" not in tools
    assert "Read" in tools and "Edit" in tools  # read(.env) is a rule, not a removal
