"""Exit codes and JSON output, per event, as Claude Code's hook reference defines them."""

from __future__ import annotations

import json

import pytest

from zpi_compat_claude.hooks.output import EXIT2, MAX_TEXT, cut, interpret
from zpi_compat_claude.hooks.runner import CommandOutcome


def ok(stdout: str = "", stderr: str = "") -> CommandOutcome:
    return CommandOutcome(0, stdout, stderr)


def js(**data) -> CommandOutcome:
    return ok(json.dumps(data))


def specific(event: str, **fields) -> CommandOutcome:
    return js(hookSpecificOutput={"hookEventName": event, **fields})


def exit2(stderr: str = "the reason\n", stdout: str = "") -> CommandOutcome:
    return CommandOutcome(2, stdout, stderr)


# ------------------------------------------------------------------------------ exit 0


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit"])
def test_plain_stdout_is_context_for_session_start_and_prompts(event):
    result = interpret(event, ok("  some context\n"))
    assert result.contexts == ["some context"] and not result.problems


@pytest.mark.parametrize("event", ["PreToolUse", "PostToolUse", "Stop", "SubagentStart",
                                   "Notification", "SessionEnd"])
def test_plain_stdout_is_ignored_elsewhere(event):
    result = interpret(event, ok("chatter\n"))
    assert result.contexts == [] and not result.block and not result.problems


def test_json_is_recognised_after_leading_whitespace():
    result = interpret("SessionStart", ok('\n  {"hookSpecificOutput": {"hookEventName": '
                                          '"SessionStart", "additionalContext": "ctx"}}\n'))
    assert result.contexts == ["ctx"]


def test_invalid_json_is_a_non_blocking_error():
    result = interpret("UserPromptSubmit", ok("{not json"))
    assert result.contexts == [] and not result.block
    assert result.problems and result.problems[0].startswith("printed invalid JSON")


def test_exit_0_with_nothing_is_no_answer():
    result = interpret("PreToolUse", ok())
    assert result.permission is None and not result.problems and not result.contexts


# ------------------------------------------------------------------------------ exit 2


@pytest.mark.parametrize("event", ["PreToolUse", "PermissionRequest"])
def test_exit_2_denies_tool_calls(event):
    result = interpret(event, exit2(stdout='{"hookSpecificOutput": {}}'))
    assert result.permission == "deny" and result.block
    assert result.reason == result.permission_reason == "the reason"


@pytest.mark.parametrize("event", ["UserPromptSubmit", "Stop", "SubagentStop", "PreCompact"])
def test_exit_2_blocks(event):
    result = interpret(event, exit2())
    assert result.block and result.reason == "the reason" and result.permission is None


@pytest.mark.parametrize("event", ["PostToolUse", "PostToolUseFailure"])
def test_exit_2_after_a_tool_shows_stderr_to_the_model(event):
    result = interpret(event, exit2())
    assert not result.block and result.contexts == ["the reason"]


@pytest.mark.parametrize("event", ["SessionStart", "SubagentStart", "PostCompact",
                                   "Notification", "SessionEnd"])
def test_exit_2_elsewhere_shows_stderr_to_the_user(event):
    result = interpret(event, exit2())
    assert not result.block and result.contexts == [] and result.messages == ["the reason"]
    assert event not in EXIT2


def test_exit_2_ignores_stdout_json():
    result = interpret("Stop", exit2("", js(decision="approve").stdout))
    assert result.block and result.reason is None


# ------------------------------------------------------------------------------ other exits


@pytest.mark.parametrize("outcome", [
    CommandOutcome(1, "", "broken\nmore"), CommandOutcome(127, "", ""),
    CommandOutcome(-9), CommandOutcome(None, timed_out=True),
    CommandOutcome(None, error="could not start bash"),
])
def test_other_exits_are_non_blocking_errors(outcome):
    result = interpret("PreToolUse", outcome)
    assert result.permission is None and not result.block and len(result.problems) == 1


def test_describe_names_the_failure():
    assert CommandOutcome(1, "", "broken\nmore").describe() == "exited 1: broken"
    assert CommandOutcome(-9).describe() == "was killed by signal 9"
    assert CommandOutcome(None, timed_out=True).describe().startswith("timed out")
    assert CommandOutcome(3).describe() == "exited 3"


# ------------------------------------------------------------------------------ JSON fields


def test_pre_tool_use_permission_decisions():
    for decision in ("allow", "ask", "deny"):
        result = interpret("PreToolUse", specific(
            "PreToolUse", permissionDecision=decision, permissionDecisionReason="why",
            updatedInput={"command": "ls"}, additionalContext="ctx"))
        assert result.permission == decision and result.permission_reason == "why"
        assert result.updated_input == {"command": "ls"} and result.contexts == ["ctx"]
        assert result.block is (decision == "deny")


def test_pre_tool_use_legacy_decision_fields():
    approve = interpret("PreToolUse", js(decision="approve", reason="fine"))
    block = interpret("PreToolUse", js(decision="block", reason="no"))
    assert (approve.permission, approve.permission_reason) == ("allow", "fine")
    assert (block.permission, block.reason) == ("deny", "no")
    newer = interpret("PreToolUse", js(decision="block", hookSpecificOutput={
        "hookEventName": "PreToolUse", "permissionDecision": "allow"}))
    assert newer.permission == "allow"  # hookSpecificOutput wins over the legacy fields


def test_pre_tool_use_bad_values_are_reported():
    result = interpret("PreToolUse", specific("PreToolUse", permissionDecision="maybe",
                                              updatedInput="ls"))
    assert result.permission is None and result.updated_input is None
    assert len(result.problems) == 2
    deferred = interpret("PreToolUse", specific("PreToolUse", permissionDecision="defer"))
    assert deferred.permission is None and not deferred.problems


def test_a_mismatched_event_name_ignores_hook_specific_output():
    result = interpret("PreToolUse", specific("PostToolUse", permissionDecision="deny"))
    assert result.permission is None
    assert "hookEventName is 'PostToolUse' but the event is PreToolUse" in result.problems[0]
    missing = interpret("PreToolUse", js(hookSpecificOutput={"permissionDecision": "deny"}))
    assert missing.permission == "deny"  # hookEventName may be left out
    bad = interpret("PreToolUse", js(hookSpecificOutput=["deny"]))
    assert bad.problems == ["hookSpecificOutput must be an object; ignored"]


def test_permission_request_decision_behavior():
    allow = interpret("PermissionRequest", specific(
        "PermissionRequest", decision={"behavior": "allow", "updatedInput": {"command": "x"}}))
    assert allow.permission == "allow" and allow.updated_input == {"command": "x"}
    deny = interpret("PermissionRequest", specific(
        "PermissionRequest", decision={"behavior": "deny", "message": "nope",
                                       "interrupt": True}))
    assert deny.permission == "deny" and deny.reason == "nope"
    assert "interrupt is not supported" in deny.problems[0]
    odd = interpret("PermissionRequest", specific("PermissionRequest",
                                                  decision={"behavior": "ask"}))
    assert odd.permission is None and odd.problems
    flat = interpret("PermissionRequest", specific("PermissionRequest",
                                                   permissionDecision="allow"))
    assert flat.permission is None  # PermissionRequest answers with decision.behavior


@pytest.mark.parametrize("event", ["UserPromptSubmit", "Stop", "SubagentStop", "PreCompact"])
def test_decision_block_with_reason(event):
    result = interpret(event, js(decision="block", reason="because"))
    assert result.block and result.reason == "because"
    unknown = interpret(event, js(decision="maybe"))
    assert not unknown.block and "unknown decision 'maybe'" in unknown.problems[0]


def test_post_tool_use_block_reason_context_and_replaced_output():
    result = interpret("PostToolUse", js(decision="block", reason="look again",
                                         hookSpecificOutput={
                                             "hookEventName": "PostToolUse",
                                             "additionalContext": "more",
                                             "updatedToolOutput": "replaced"}))
    assert result.contexts == ["look again", "more"] and result.updated_output == "replaced"
    mcp = interpret("PostToolUse", specific("PostToolUse",
                                            updatedMCPToolOutput={"content": [1]}))
    assert mcp.updated_output == '{"content": [1]}'


def test_common_fields():
    result = interpret("PostToolUse", js(**{"continue": False}, stopReason="halt",
                                         suppressOutput=True, systemMessage="hi user"))
    assert result.stop and result.stop_reason == "halt"
    assert result.suppress_output and result.system_messages == ["hi user"]
    assert result.messages == []  # stderr for the user is a warning, this is a message
    assert not interpret("Stop", js(**{"continue": True})).stop


def test_additional_context_only_where_claude_reads_it():
    assert interpret("SubagentStart", specific("SubagentStart",
                                               additionalContext="x")).contexts == ["x"]
    assert interpret("Stop", specific("Stop", additionalContext="x")).contexts == []
    assert interpret("Notification", specific("Notification",
                                              additionalContext="x")).contexts == []


def test_long_strings_are_cut_with_a_notice():
    text = "x" * (MAX_TEXT + 5)
    result = interpret("UserPromptSubmit", ok(text))
    (context,) = result.contexts
    assert context.startswith("x" * MAX_TEXT) and "cut at 10,000 characters; 5 more" in context
    denied = interpret("PreToolUse", exit2("y" * 20_000))
    assert len(denied.reason or "") < 10_100
    assert cut("short") == "short"


def test_dropped_output_is_reported():
    result = interpret("Stop", CommandOutcome(0, "", "", dropped_bytes=12))
    assert "12 bytes were dropped" in result.problems[0]
