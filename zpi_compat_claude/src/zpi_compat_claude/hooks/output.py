"""What a handler's exit code and output mean, per event, as Claude Code's reference says.

``interpret`` turns one :class:`~.runner.CommandOutcome` into a :class:`HandlerResult` (the
same fields whatever the event); :mod:`.plugin` combines the results of all handlers of one
event into the kernel's answer. Nothing here runs processes or touches a session.

- Exit 0: stdout is parsed as JSON when its first non-blank character is ``{``; otherwise,
  for SessionStart and UserPromptSubmit only, plain stdout becomes context.
- Exit 2: a blocking error; stdout is ignored and stderr is the reason, used by the event
  (see ``EXIT2``).
- Any other exit, a timeout, or JSON that does not parse: a non-blocking error, reported as
  a diagnostic; the event goes on as if the handler had not answered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs

from zpi_host.support.attrs_methods import FieldsEq

from ..dialect import CLAUDE, Dialect

if TYPE_CHECKING:
    from .runner import CommandOutcome

#: Longest string a hook may hand to the model or the user; longer ones are cut.
MAX_TEXT = 10_000

#: What exit code 2 does per event; events not listed show stderr to the user only.
EXIT2: Mapping[str, str] = {
    "PreToolUse": "deny",  # the call is denied, stderr is the reason the model reads
    "PermissionRequest": "deny",  # the permission is denied (Claude's reference)
    "UserPromptSubmit": "block",  # the prompt is dropped, stderr goes to the user
    "Stop": "block",  # the run goes on, stderr is the next input
    "SubagentStop": "block",
    "PreCompact": "block",  # the compaction is cancelled
    "PostToolUse": "context",  # the tool already ran: stderr goes to the model
    "PostToolUseFailure": "context",  # the tool already failed: stderr goes to the model
}

#: Events whose plain (non-JSON) stdout on exit 0 becomes context for the model (Claude's;
#: a dialect may have others).
PLAIN_STDOUT_CONTEXT = CLAUDE.plain_stdout_context

#: Events where ``decision: "block"`` with ``reason`` blocks (legacy top-level fields).
DECISION_BLOCK = frozenset({"UserPromptSubmit", "PostToolUse", "Stop", "SubagentStop",
                            "PreCompact"})

#: Events whose ``hookSpecificOutput.additionalContext`` is used.
ADDITIONAL_CONTEXT = frozenset({"SessionStart", "UserPromptSubmit", "PreToolUse",
                                "PostToolUse", "PostToolUseFailure", "SubagentStart"})

Permission = Literal["allow", "ask", "deny"]


def cut(text: str, limit: int = MAX_TEXT) -> str:
    """``text``, or its first ``limit`` characters and a notice saying how much was cut."""
    if len(text) <= limit:
        return text
    return (f"{text[:limit]}\n[hook output cut at {limit:,} characters; "
            f"{len(text) - limit:,} more not shown]")


@attrs.define(repr=False, eq=False, slots=False)
class HandlerResult(FieldsEq):
    """One handler's answer, whatever the event; ``plugin.py`` decides what applies."""

    #: exit 2 or ``decision: "block"``: blocks what the event guards (see ``EXIT2``)
    block: bool = False
    reason: str | None = None
    #: PreToolUse ``permissionDecision`` / PermissionRequest ``decision.behavior``
    permission: Permission | None = None
    permission_reason: str | None = None
    updated_input: Mapping[str, Any] | None = None
    #: texts for the model (additionalContext, plain stdout, exit-2 stderr after a tool)
    contexts: list[str] = attrs.field(factory=list)
    #: PostToolUse ``updatedToolOutput``: replaces what the model sees
    updated_output: str | None = None
    #: the block came from exit code 2 (``reason`` is stderr)
    exit2: bool = False
    #: ``continue: false``: stop, with ``stopReason``
    stop: bool = False
    stop_reason: str | None = None
    suppress_output: bool = False
    #: stderr meant for the user (exit 2 where it blocks nothing): shown as warnings
    messages: list[str] = attrs.field(factory=list)
    #: ``systemMessage``: shown to the user as a message (not a problem), never the model
    system_messages: list[str] = attrs.field(factory=list)
    #: non-blocking errors: shown as diagnostics
    problems: list[str] = attrs.field(factory=list)
    #: the handler answers in the background (``async``): awaiting this gives its answer
    later: Any = None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False)
    return cut(value)


def interpret(event: str, outcome: CommandOutcome, dialect: Dialect = CLAUDE) -> HandlerResult:
    """Apply the exit-code and output rules of ``event`` (in ``dialect``) to one handler's
    outcome."""
    result = HandlerResult()
    if outcome.dropped_bytes:
        result.problems.append(f"its output was over the capture limit; "
                               f"{outcome.dropped_bytes:,} bytes were dropped")
    code = outcome.exit_code
    if code == 2:
        _exit2(event, outcome, result)
    elif code == 0:
        _exit0(event, outcome, result, dialect)
    else:
        result.problems.append(outcome.describe())
    return result


def interpret_answer(event: str, data: Mapping[str, Any]) -> HandlerResult:
    """A decoded JSON answer by the rules of ``event``: what exit 0 with that JSON on stdout
    means (the SDK's Python hook callbacks answer this way)."""
    result = HandlerResult()
    _fields(event, data, result)
    return result


def _exit2(event: str, outcome: CommandOutcome, result: HandlerResult) -> None:
    reason = cut(outcome.stderr.strip())
    effect = EXIT2.get(event)
    if effect in ("deny", "block"):
        result.block = result.exit2 = True
        result.reason = reason or None
        if effect == "deny":
            result.permission, result.permission_reason = "deny", reason or None
    elif effect == "context":
        if reason:
            result.contexts.append(reason)
    elif reason:
        result.messages.append(reason)


def _exit0(event: str, outcome: CommandOutcome, result: HandlerResult,
           dialect: Dialect = CLAUDE) -> None:
    stdout = outcome.stdout
    stripped = stdout.strip()
    if not stripped:
        return
    if not stripped.startswith("{"):
        if event in dialect.plain_stdout_context:
            result.contexts.append(cut(stripped))
        return
    try:
        data = json.loads(stripped)
    except (ValueError, RecursionError) as exc:
        result.problems.append(f"printed invalid JSON ({exc}); its output was ignored")
        return
    if not isinstance(data, dict):  # pragma: no cover - text starting with "{" is an object
        result.problems.append("printed JSON that is not an object; its output was ignored")
        return
    _fields(event, data, result, dialect)


def _fields(event: str, data: Mapping[str, Any], result: HandlerResult,
            dialect: Dialect = CLAUDE) -> None:
    """The JSON output fields (common ones first, then the event's own)."""
    if data.get("continue") is False:
        result.stop = True
        result.stop_reason = _text(data.get("stopReason"))
    if data.get("suppressOutput") is True:
        result.suppress_output = True
    message = _text(data.get("systemMessage"))
    if message:
        result.system_messages.append(message)
    decision = data.get("decision")
    reason = _text(data.get("reason"))
    specific = data.get("hookSpecificOutput")
    if specific is not None:
        if not isinstance(specific, Mapping):
            result.problems.append("hookSpecificOutput must be an object; ignored")
            specific = None
        elif specific.get("hookEventName", event) != event:
            result.problems.append(
                f"hookSpecificOutput.hookEventName is {specific.get('hookEventName')!r} but "
                f"the event is {event}; hookSpecificOutput ignored")
            specific = None
    specific = specific or {}
    if event == "PreToolUse":
        _pre_tool_use(specific, decision, reason, result)
    elif event == "PermissionRequest":
        _permission_request(specific, result)
    elif event in DECISION_BLOCK and decision is not None:
        if decision == "block":
            result.block = True
            result.reason = reason
            if event == "PostToolUse" and reason:
                result.contexts.append(reason)
        elif decision != "approve":
            result.problems.append(f"unknown decision {decision!r} ignored (use \"block\")")
    if event in ADDITIONAL_CONTEXT:
        context = _text(specific.get("additionalContext"))
        if context:
            result.contexts.append(context)
        if dialect.top_level_context:
            for key in ("additionalContext", "additional_context"):
                context = _text(data.get(key))
                if context:
                    result.contexts.append(context)
    if event == "PostToolUse":
        for key in ("updatedToolOutput", "updatedMCPToolOutput"):
            if key in specific and specific[key] is not None:
                if not dialect.replaces_tool_output:
                    result.problems.append(f"{dialect.product} hooks cannot replace a tool's "
                                           f"output: {key} ignored")
                    break
                result.updated_output = _text(specific[key])
                break
    if event == "UserPromptSubmit" and result.stop and dialect.prompt_continue_blocks:
        # ZCode: continue: false drops the prompt (with reason), the session goes on
        result.stop, result.block = False, True
        result.reason = result.reason or reason or result.stop_reason


def _pre_tool_use(specific: Mapping[str, Any], decision: Any, reason: str | None,
                  result: HandlerResult) -> None:
    permission = specific.get("permissionDecision")
    why = _text(specific.get("permissionDecisionReason"))
    if permission is None and decision is not None:  # legacy: approve / block
        permission = {"approve": "allow", "block": "deny"}.get(decision, decision)
        why = why or reason
    if permission in ("allow", "ask", "deny"):
        result.permission, result.permission_reason = permission, why
        if permission == "deny":
            result.block, result.reason = True, why
    elif permission not in (None, "defer"):
        result.problems.append(f"unknown permissionDecision {permission!r} ignored (use "
                               "allow, ask or deny)")
    updated = specific.get("updatedInput")
    if updated is not None:
        if isinstance(updated, Mapping):
            result.updated_input = updated
        else:
            result.problems.append("updatedInput must be an object (the whole new input); "
                                   "ignored")


def _permission_request(specific: Mapping[str, Any], result: HandlerResult) -> None:
    decision = specific.get("decision")
    if decision is None:
        return
    if not isinstance(decision, Mapping):
        result.problems.append("hookSpecificOutput.decision must be an object with "
                               "\"behavior\"; ignored")
        return
    behavior = decision.get("behavior")
    if behavior == "allow":
        result.permission = "allow"
        updated = decision.get("updatedInput")
        if isinstance(updated, Mapping):
            result.updated_input = updated
        elif updated is not None:
            result.problems.append("decision.updatedInput must be an object; ignored")
    elif behavior == "deny":
        result.permission = "deny"
        result.block = True
        result.reason = result.permission_reason = _text(decision.get("message"))
        if decision.get("interrupt") is True:
            result.problems.append("decision.interrupt is not supported: the call is denied "
                                   "and the run goes on")
    else:
        result.problems.append(f"unknown decision.behavior {behavior!r} ignored (use allow or "
                               "deny)")
