"""hooks={event: [HookMatcher(...)]} programs written as for claude-agent-sdk; the answers
are decoded by the Claude adapter's engine."""

from __future__ import annotations

import anyio
import pytest

from zpi_host.errors import UsageError
from zpi_host.providers.messages import ContextMessage, ToolResultMessage
from zpi_host.sdk import HookMatcher, ResultMessage, SystemMessage, UserMessage, query

from .conftest import collect

pytestmark = pytest.mark.anyio


def results(messages):
    return [b for m in messages if isinstance(m, UserMessage) for b in m.content]


async def test_pre_tool_use_denies_and_sees_claude_input(backend):
    seen = []

    async def check_bash(input_data, tool_use_id, context):
        seen.append((input_data, tool_use_id, context))
        if "rm" in input_data["tool_input"]["command"]:
            return {"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "deny",
                "permissionDecisionReason": "no deleting"}}
        return {}

    backend.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "rm -f x"}},
                                  {"name": "Bash", "arguments": {"command": "echo ok"}}]},
                  "done")
    options = backend.options(permission_mode="bypassPermissions", hooks={
        "PreToolUse": [HookMatcher(matcher="Bash", hooks=[check_bash])]})
    messages = await collect(query("go", options))
    rm, echo = results(messages)
    assert rm.is_error and "no deleting" in rm.content
    assert not echo.is_error and "ok" in echo.content
    first, tool_use_id, context = seen[0]
    assert first["hook_event_name"] == "PreToolUse"
    assert first["tool_name"] == "Bash"
    assert first["tool_input"] == {"command": "rm -f x"}
    assert first["tool_use_id"] == tool_use_id == rm.tool_use_id
    assert first["session_id"] == messages[-1].session_id
    assert first["cwd"] == str(backend.cwd)
    assert first["permission_mode"] == "bypassPermissions"
    assert context == {"signal": None}


async def test_pre_tool_use_rewrites_input(scripted):
    async def redirect(input_data, tool_use_id, context):
        return {"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "allow",
            "updatedInput": {**input_data["tool_input"], "file_path": "elsewhere.txt"}}}

    scripted.turns({"tool_calls": [{"name": "Write", "arguments": {
        "file_path": "here.txt", "content": "x"}}]}, "ok")
    options = scripted.options(hooks={"PreToolUse": [HookMatcher("Write|Edit", [redirect])]})
    await collect(query("go", options))
    assert (scripted.cwd / "elsewhere.txt").read_text() == "x"
    assert not (scripted.cwd / "here.txt").exists()


async def test_a_matcher_that_does_not_match_is_not_called(scripted):
    called = []

    async def hook(input_data, tool_use_id, context):
        called.append(input_data["tool_name"])
        return {}

    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "true"}}]}, "ok")
    options = scripted.options(permission_mode="bypassPermissions", hooks={
        "PreToolUse": [HookMatcher("Write", [hook])],
        "PostToolUse": [HookMatcher(None, [hook])]})
    await collect(query("go", options))
    assert called == ["Bash"]


async def test_post_tool_use_adds_context_for_the_model(scripted):
    async def remind(input_data, tool_use_id, context):
        assert input_data["tool_response"]["stdout"].strip() == "hi"
        return {"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                       "additionalContext": "remember the tests"}}

    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "echo hi"}}]},
                   "ok")
    options = scripted.options(permission_mode="bypassPermissions", hooks={
        "PostToolUse": [HookMatcher("Bash", [remind])]})
    await collect(query("go", options))
    second = scripted.scripted.requests[1]
    # inside the tool result, as Claude Code places it
    result = next(m for m in second.messages if isinstance(m, ToolResultMessage))
    assert result.content[-1].text == "<system-reminder>\nremember the tests\n</system-reminder>"
    assert not any(isinstance(m, ContextMessage) for m in second.messages)


async def test_user_prompt_submit_blocks(backend):
    async def block(input_data, tool_use_id, context):
        assert input_data["prompt"] == "deploy now"
        return {"decision": "block", "reason": "no deploys on Friday"}

    options = backend.options(hooks={"UserPromptSubmit": [HookMatcher(hooks=[block])]})
    result = (await collect(query("deploy now", options)))[-1]
    assert isinstance(result, ResultMessage)
    assert (result.subtype, result.is_error) == ("error_during_execution", True)
    assert "no deploys on Friday" in result.errors[0]
    assert backend.requests() == []


async def test_stop_hook_asks_to_go_on_once_then_continue_false_stops(scripted):
    stops = []

    async def stop(input_data, tool_use_id, context):
        stops.append(input_data["stop_hook_active"])
        if not input_data["stop_hook_active"]:
            return {"decision": "block", "reason": "also run the tests"}
        return {"continue_": False, "stopReason": "enough"}

    scripted.turns("first", "second")
    options = scripted.options(hooks={"Stop": [HookMatcher(hooks=[stop])]})
    messages = await collect(query("go", options))
    assert stops == [False, True]
    feedback = scripted.scripted.requests[1].messages[-1]
    assert isinstance(feedback, ContextMessage)
    assert feedback.text == "Stop hook feedback: also run the tests"
    assert messages[-1].result == "second"


async def test_a_slow_or_failing_callback_is_reported_and_ignored(scripted):
    async def slow(input_data, tool_use_id, context):
        await anyio.sleep(30)
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                       "permissionDecision": "deny"}}

    async def broken(input_data, tool_use_id, context):
        raise ValueError("hook bug")

    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "echo ran"}}]},
                   "ok")
    options = scripted.options(permission_mode="bypassPermissions", hooks={
        "PreToolUse": [HookMatcher("Bash", [slow], timeout=0.05),
                       HookMatcher("Bash", [broken])]})
    messages = await collect(query("go", options))
    bash, = results(messages)
    assert not bash.is_error and "ran" in bash.content
    warnings = [m.data["message"] for m in messages
                if isinstance(m, SystemMessage) and m.subtype == "warning"]
    assert any("timed out" in w for w in warnings), warnings
    assert any("ValueError: hook bug" in w for w in warnings), warnings


@pytest.mark.parametrize(("hooks", "match"), [
    ({"BeforeEverything": []}, "unknown event 'BeforeEverything'"),
    ({"PreToolUse": HookMatcher()}, "list of HookMatcher"),
    ({"PreToolUse": [{"matcher": "Bash"}]}, "must be a HookMatcher"),
    ({"PreToolUse": [HookMatcher("Bash(", [])]}, "not a valid regular expression"),
    ({"PreToolUse": [HookMatcher("Bash", ["not callable"])]}, "async callable"),
    ({"PreToolUse": [HookMatcher("Bash", [], on_failure="block")]}, "on_failure"),
])
async def test_bad_hook_configuration_is_refused(scripted, hooks, match):
    with pytest.raises(UsageError, match=match):
        await collect(query("go", scripted.turns("x").options(hooks=hooks)))


@pytest.fixture
def fresh_engine_lookup():
    """The engine's entry point is looked up once per process: these tests look again."""
    from zpi_host.sdk import hook_callbacks

    hook_callbacks._factory.cache_clear()
    yield
    hook_callbacks._factory.cache_clear()


async def test_without_the_claude_adapter_hooks_are_refused_by_name(scripted, monkeypatch,
                                                                    fresh_engine_lookup):
    import sys

    from zpi_host.sdk import UnsupportedOptionError

    monkeypatch.delitem(sys.modules, "zpi_compat_claude.sdk_hooks", raising=False)
    monkeypatch.setitem(sys.modules, "zpi_compat_claude.hooks.config", None)

    async def hook(input_data, tool_use_id, context):
        return {}

    options = scripted.turns("x").options(hooks={"Stop": [HookMatcher(hooks=[hook])]})
    with pytest.raises(UnsupportedOptionError, match="install zpi-compat-claude"):
        await collect(query("go", options))


async def test_without_the_engine_entry_point_hooks_are_refused_by_name(
        scripted, monkeypatch, fresh_engine_lookup):
    import importlib.metadata

    from zpi_host.sdk import UnsupportedOptionError

    real = importlib.metadata.entry_points

    def without_engine(**select):
        if select.get("group") == "zpi.sdk_hooks":
            return importlib.metadata.EntryPoints(())
        return real(**select)

    monkeypatch.setattr(importlib.metadata, "entry_points", without_engine)

    async def hook(input_data, tool_use_id, context):
        return {}

    options = scripted.turns("x").options(hooks={"Stop": [HookMatcher(hooks=[hook])]})
    with pytest.raises(UnsupportedOptionError, match="install zpi-compat-claude"):
        await collect(query("go", options))


def test_the_engine_is_looked_up_once_per_process(fresh_engine_lookup, monkeypatch):
    import importlib.metadata

    from zpi_host.sdk.hook_callbacks import callback_hooks_plugin

    calls = []
    real = importlib.metadata.entry_points

    def counting(**select):
        calls.append(select.get("group"))
        return real(**select)

    monkeypatch.setattr(importlib.metadata, "entry_points", counting)
    for _ in range(3):
        callback_hooks_plugin({})
    assert calls == ["zpi.sdk_hooks"]


async def test_include_hook_events_reports_each_callback_run(scripted):
    from zpi_host.sdk import HookEventMessage

    async def deny_rm(input_data, tool_use_id, context):
        if "rm" in input_data["tool_input"]["command"]:
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                           "permissionDecision": "deny",
                                           "permissionDecisionReason": "no deleting"}}
        return {}

    async def broken(input_data, tool_use_id, context):
        raise RuntimeError("hook bug")

    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "rm -f x"}}]},
                   "done")
    hooks = {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[deny_rm])],
             "Stop": [HookMatcher(hooks=[broken])]}
    messages = await collect(query("go", scripted.options(
        permission_mode="bypassPermissions", hooks=hooks, include_hook_events=True)))
    events = [m for m in messages if isinstance(m, HookEventMessage)]
    assert [(m.subtype, m.hook_event_name) for m in events] == [
        ("hook_started", "PreToolUse"), ("hook_response", "PreToolUse"),
        ("hook_started", "Stop"), ("hook_response", "Stop")]
    pre = events[1].data
    assert pre["outcome"] == "success" and pre["exit_code"] == 0
    assert "no deleting" in pre["output"] and pre["hook_id"] == events[0].data["hook_id"]
    assert events[3].data["outcome"] == "error" and "hook bug" in events[3].data["output"]
    assert events[0].session_id == messages[-1].session_id
    assert isinstance(events[0], SystemMessage)  # as in claude-agent-sdk
    (denied,) = results(messages)
    assert denied.is_error and "no deleting" in denied.content
    assert messages.index(events[1]) < messages.index(
        next(m for m in messages if isinstance(m, UserMessage)))


async def test_hook_events_are_not_sent_unless_asked(scripted):
    from zpi_host.sdk import HookEventMessage

    async def nothing(input_data, tool_use_id, context):
        return {}

    scripted.turns("done")
    messages = await collect(query("go", scripted.options(
        hooks={"Stop": [HookMatcher(hooks=[nothing])]})))
    assert not [m for m in messages if isinstance(m, HookEventMessage)]
