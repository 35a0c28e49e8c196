"""can_use_tool programs written as for claude-agent-sdk."""

from __future__ import annotations

import pytest

from zpi_host.sdk import (
    NULL_PERMISSION,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionRuleValue,
    PermissionUpdate,
    ResultMessage,
    ToolPermissionContext,
    UserMessage,
    query,
)

from .conftest import collect

pytestmark = pytest.mark.anyio


def results(messages):
    return [b for m in messages if isinstance(m, UserMessage) for b in m.content]


async def test_a_callback_that_rewrites_input(backend):
    asked: list[tuple[str, dict, ToolPermissionContext]] = []

    async def can_use_tool(tool_name, input_data, context):
        asked.append((tool_name, input_data, context))
        if tool_name == "Write":
            return PermissionResultAllow(updated_input={**input_data,
                                                        "file_path": "sandbox/out.txt"})
        return PermissionResultDeny(message="no shell today")

    (backend.cwd / "sandbox").mkdir()
    backend.turns({"tool_calls": [
        {"name": "Write", "arguments": {"file_path": "out.txt", "content": "data"}},
        {"name": "Bash", "arguments": {"command": "echo hi"}}]}, "ok")
    messages = await collect(query("go", backend.options(can_use_tool=can_use_tool)))
    write, bash = results(messages)
    assert (backend.cwd / "sandbox" / "out.txt").read_text() == "data"
    assert not (backend.cwd / "out.txt").exists()
    assert not write.is_error
    assert bash.is_error and "no shell today" in bash.content
    (name, data, context), (name2, data2, context2) = asked
    assert (name, data) == ("Write", {"file_path": "out.txt", "content": "data"})
    assert (name2, data2) == ("Bash", {"command": "echo hi"})
    assert context.tool_use_id and context.decision_reason
    assert context2.suggestions == [PermissionUpdate(
        "addRules", [PermissionRuleValue("Bash", "echo hi:*")], "allow", destination="session")]
    result = messages[-1]
    assert [d["tool_name"] for d in result.permission_denials] == ["Bash"]


async def test_a_rewritten_input_is_checked_against_deny_rules(scripted):
    async def can_use_tool(tool_name, input_data, context):
        return PermissionResultAllow(updated_input={"command": "rm -rf /tmp/x"})

    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "ls"}}]}, "ok")
    options = scripted.options(can_use_tool=can_use_tool, disallowed_tools=["Bash(rm:*)"])
    bash, = results(await collect(query("go", options)))
    assert bash.is_error and "Bash(rm:*)" in bash.content


async def test_none_is_not_a_decision(backend):
    async def can_use_tool(tool_name, input_data, context):
        return None

    backend.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "echo hi > f"}}]},
                  "ok")
    messages = await collect(query("go", backend.options(can_use_tool=can_use_tool)))
    bash, = results(messages)
    assert bash.is_error and NULL_PERMISSION in bash.content
    assert NULL_PERMISSION == "SDK_UNSUPPORTED_PERMISSION_NULL"
    assert not (backend.cwd / "f").exists()
    assert messages[-1].permission_denials[0]["tool_name"] == "Bash"


async def test_deny_with_interrupt_ends_the_input(scripted):
    async def can_use_tool(tool_name, input_data, context):
        return PermissionResultDeny(message="stop everything", interrupt=True)

    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "true"}}]},
                   "never sent")
    result = (await collect(query("go", scripted.options(can_use_tool=can_use_tool))))[-1]
    assert isinstance(result, ResultMessage)
    assert (result.subtype, result.is_error) == ("error_during_execution", True)
    assert "stop everything" in result.errors[0]
    assert len(scripted.scripted.requests) == 1


async def test_updated_permissions_add_rules_for_the_session(scripted):
    calls = []

    async def can_use_tool(tool_name, input_data, context):
        calls.append(input_data["command"])
        return PermissionResultAllow(updated_permissions=context.suggestions)

    scripted.turns(
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "echo one"}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "echo one two"}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "printf three"}}]}, "ok")
    messages = await collect(query("go", scripted.options(can_use_tool=can_use_tool)))
    assert [r.is_error for r in results(messages)] == [False, False, False]
    assert calls == ["echo one", "printf three"]  # "echo one two" matched the added rule


async def test_unsupported_updates_and_answers_deny_clearly(scripted):
    async def can_use_tool(tool_name, input_data, context):
        if input_data["command"] == "a":
            return PermissionResultAllow(updated_permissions=[PermissionUpdate(
                "addDirectory", directories=["/"])])
        return "yes"

    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "a"}},
                                   {"name": "Bash", "arguments": {"command": "b"}}]}, "ok")
    a, b = results(await collect(query("go", scripted.options(can_use_tool=can_use_tool))))
    assert a.is_error and "'addDirectory'" in a.content and "unknown type" in a.content
    assert b.is_error and "PermissionResultAllow or PermissionResultDeny" in b.content


async def test_a_set_mode_update_changes_the_mode(scripted):
    calls = []

    async def can_use_tool(tool_name, input_data, context):
        calls.append(tool_name)
        return PermissionResultAllow(updated_permissions=[PermissionUpdate(
            "setMode", mode="bypassPermissions")])

    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "true"}}]},
                   {"tool_calls": [{"name": "Write", "arguments": {
                       "file_path": "w.txt", "content": "x"}}]}, "ok")
    await collect(query("go", scripted.options(can_use_tool=can_use_tool)))
    assert calls == ["Bash"]
    assert (scripted.cwd / "w.txt").exists()


async def test_dont_ask_denies_without_asking(scripted):
    calls = []

    async def can_use_tool(tool_name, input_data, context):
        calls.append(tool_name)
        return PermissionResultAllow()

    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "true"}},
                                   {"name": "Bash", "arguments": {"command": "ls"}}]}, "ok")
    options = scripted.options(can_use_tool=can_use_tool, permission_mode="dontAsk",
                               allowed_tools=["Bash(ls)"])
    first, second = results(await collect(query("go", options)))
    assert first.is_error and "dontAsk" in first.content
    assert not second.is_error
    assert calls == []


async def test_a_failing_callback_denies_the_call(scripted):
    async def can_use_tool(tool_name, input_data, context):
        raise RuntimeError("callback bug")

    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "true"}}]}, "ok")
    messages = await collect(query("go", scripted.options(can_use_tool=can_use_tool)))
    bash, = results(messages)
    assert bash.is_error and "callback bug" in bash.content
    assert messages[-1].subtype == "success"
