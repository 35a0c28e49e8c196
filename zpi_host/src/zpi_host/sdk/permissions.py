"""``can_use_tool`` in claude-agent-sdk's shape, adapted onto the kernel's approver.

The kernel asks the approver only when its rules and mode say "ask" (docs/permissions.md); the
adapter turns that question into ``can_use_tool(tool_name, input, ToolPermissionContext)`` and
the answer (``PermissionResultAllow`` / ``PermissionResultDeny``) into the kernel's. ``None``
is not a decision: the call is denied with the error code ``SDK_UNSUPPORTED_PERMISSION_NULL``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, Literal

import attrs

from ..permissions import PermissionAllow, PermissionContext, PermissionDeny
from ..support.attrs_methods import FieldsEq

__all__ = [
    "NULL_PERMISSION", "PermissionResult", "PermissionResultAllow", "PermissionResultDeny",
    "PermissionRuleValue", "PermissionUpdate", "ToolPermissionContext", "sdk_approver",
]

#: the error code of a ``can_use_tool`` that returned None
NULL_PERMISSION = "SDK_UNSUPPORTED_PERMISSION_NULL"

_RULE = re.compile(r"^([^()]+?)(?:\((.*)\))?$", re.S)


@attrs.define(repr=False, eq=False, slots=False)
class PermissionRuleValue(FieldsEq):
    tool_name: str
    rule_content: str | None = None

    def rule(self) -> str:
        return self.tool_name if self.rule_content is None else \
            f"{self.tool_name}({self.rule_content})"


@attrs.define(repr=False, eq=False, slots=False)
class PermissionUpdate(FieldsEq):
    """A change to the permissions, as claude-agent-sdk defines it: ``type`` ``addRules``,
    ``replaceRules``, ``removeRules`` (``rules``, ``behavior``), ``setMode`` (``mode``),
    ``addDirectories``, ``removeDirectories`` (``directories``); ``destination`` ``session``
    (default), ``userSettings``, ``projectSettings`` or ``localSettings`` (see
    ``permission_updates.py``)."""

    type: str
    rules: list[PermissionRuleValue] | None = None
    behavior: str | None = None
    mode: str | None = None
    directories: list[str] | None = None
    destination: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.rules is not None:
            out["rules"] = [{"toolName": r.tool_name, "ruleContent": r.rule_content}
                            for r in self.rules]
        for key in ("behavior", "mode", "directories", "destination"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@attrs.define(repr=False, eq=False, slots=False)
class ToolPermissionContext(FieldsEq):
    signal: Any = None
    suggestions: list[PermissionUpdate] = attrs.field(factory=list)
    tool_use_id: str | None = None
    agent_id: str | None = None
    blocked_path: str | None = None
    decision_reason: str | None = None
    #: the prompt's sentence, a short name of the action and a subtitle (None here: the
    #: kernel's question has none)
    title: str | None = None
    display_name: str | None = None
    description: str | None = None


@attrs.define(repr=False, eq=False, slots=False)
class PermissionResultAllow(FieldsEq):
    behavior: Literal["allow"] = "allow"
    updated_input: dict[str, Any] | None = None
    updated_permissions: list[PermissionUpdate] | None = None


@attrs.define(repr=False, eq=False, slots=False)
class PermissionResultDeny(FieldsEq):
    behavior: Literal["deny"] = "deny"
    message: str = ""
    interrupt: bool = False


PermissionResult = PermissionResultAllow | PermissionResultDeny


def suggestion(rule: str) -> PermissionUpdate:
    """A kernel rule string (``Bash(git status:*)``) as an ``addRules`` update."""
    match = _RULE.match(rule.strip())
    name, content = (match.group(1), match.group(2)) if match else (rule, None)
    return PermissionUpdate("addRules", [PermissionRuleValue(name, content)], "allow",
                            destination="session")


def sdk_approver(can_use_tool: Callable[..., Any], session: Callable[[], Any],
                 set_mode: Callable[[str], None]) -> Callable[..., Any]:
    """The kernel approver that asks ``can_use_tool``; ``updated_permissions`` are applied
    to ``session()`` (``permission_updates.py``), ``set_mode`` takes Claude's mode names."""

    async def approve(name: str, arguments: dict[str, Any], context: PermissionContext
                      ) -> PermissionAllow | PermissionDeny:
        asked = ToolPermissionContext(
            suggestions=[suggestion(s) for s in context.suggestions],
            tool_use_id=context.call_id or None,
            blocked_path=context.paths[0] if context.paths else None,
            decision_reason=context.reason)
        answer = can_use_tool(name, dict(arguments), asked)
        if inspect.isawaitable(answer):
            answer = await answer
        if answer is None:
            return PermissionDeny(f"{NULL_PERMISSION}: can_use_tool returned None, which is not "
                                  "a decision; return PermissionResultAllow or "
                                  "PermissionResultDeny")
        if isinstance(answer, PermissionResultDeny):
            return PermissionDeny(answer.message or "denied by can_use_tool",
                                  bool(answer.interrupt))
        if isinstance(answer, PermissionResultAllow):
            if answer.updated_permissions:
                from .options import PERMISSION_MODES
                from .permission_updates import PermissionUpdateError, apply_updates

                live = session()
                try:
                    apply_updates(answer.updated_permissions, live.permissions,
                                  live.settings_manager, set_mode, tuple(PERMISSION_MODES))
                except PermissionUpdateError as exc:
                    return PermissionDeny(f"can_use_tool returned updated_permissions this "
                                          f"host cannot apply (none was applied): {exc}")
            return PermissionAllow(answer.updated_input)
        return PermissionDeny(f"can_use_tool returned {answer!r:.200}; return "
                              "PermissionResultAllow or PermissionResultDeny")

    return approve

