"""What a permission check answers, what an approver is asked and may answer, and the record
of a denial that the run keeps (transcript and result)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias

import attrs

from ..support.attrs_methods import FrozenFieldsEq
from . import matching, paths
from .modes import MODES, SOURCES, PermissionMode, Source
from .rules import Dimension

__all__ = ["MODES", "SOURCES", "ApproverAnswer", "CanUseTool", "Denial", "PermissionAllow",
           "PermissionContext", "PermissionDeny", "PermissionMode", "PermissionResult", "Source",
           "input_text", "summarize_input"]

INPUT_SUMMARY_LIMIT = 200


@attrs.frozen(repr=False, eq=False, slots=False)
class PermissionAllow(FrozenFieldsEq):
    """An approver's yes. ``updated_input`` replaces the call's input (it is validated again
    and deny rules are checked against it); ``add_rules`` are allow rules (strings) kept for
    the rest of the session, e.g. for an "always allow" button."""

    updated_input: Mapping[str, Any] | None = None
    add_rules: Sequence[str] = ()


@attrs.frozen(repr=False, eq=False, slots=False)
class PermissionDeny(FrozenFieldsEq):
    """An approver's no. ``message`` goes to the model; ``interrupt`` also ends the run."""

    message: str = "denied by the approver"
    interrupt: bool = False


@attrs.frozen(repr=False, eq=False, slots=False)
class PermissionContext(FrozenFieldsEq):
    """What an approver is told about a call it is asked about."""

    cwd: Path
    mode: PermissionMode
    reason: str
    suggestions: tuple[str, ...] = ()
    tool: str = ""
    call_id: str = ""
    source: Source = "mode"
    dimension: Dimension = "tools"
    paths: tuple[str, ...] = ()
    #: what the call would change, when its tool can tell (the diff of a write or an edit)
    preview: str = ""


ApproverAnswer: TypeAlias = "PermissionAllow | PermissionDeny | bool"
CanUseTool: TypeAlias = Callable[
    [str, dict[str, Any], PermissionContext], "ApproverAnswer | Awaitable[ApproverAnswer]"
]


@attrs.frozen(repr=False, eq=False, slots=False)
class PermissionResult(FrozenFieldsEq):
    """The verdict on one call. ``updated_input`` (allow only) replaces the call's input;
    ``interrupt`` (deny only) asks the loop to end the run after recording the denial;
    ``judged`` (allow only): the call's paths as the check resolved them, which the file
    tools open exactly; ``worded`` (deny only): the text a ``zpi_permission_request`` hook
    gave for its deny, which the model reads as it was worded (as a ``zpi_before_tool``
    deny's)."""

    behavior: Literal["allow", "deny"]
    reason: str
    source: Source
    updated_input: Mapping[str, Any] | None = None
    interrupt: bool = False
    judged: tuple[paths.JudgedPath, ...] = ()
    worded: str | None = None
    #: (deny only) the call needed approval and there was nobody to ask
    unapproved: bool = False

    @property
    def allowed(self) -> bool:
        return self.behavior == "allow"

    def message(self, tool_name: str) -> str:
        """The error text the model sees for a denied call: a hook's own words, else the
        host's wording that says what denied it."""
        return self.worded or f"permission denied for {tool_name}: {self.reason}"

    def details(self) -> dict[str, Any]:
        """``details`` for the error ToolResult of a denied call."""
        return {"denied": True, "permission_source": self.source, "interrupt": self.interrupt}

    def denial(self, tool_name: str, call_id: str, arguments: Any) -> Denial:
        return Denial(tool_name, call_id, summarize_input(tool_name, arguments), self.reason,
                      self.source)


@attrs.frozen(repr=False, eq=False, slots=False)
class Denial(FrozenFieldsEq):
    """One denied call, as recorded in the transcript and listed in the run's result."""

    tool: str
    call_id: str
    input_summary: str
    reason: str
    source: Source

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "call_id": self.call_id, "input_summary": self.input_summary,
                "reason": self.reason, "source": self.source}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Denial:
        return cls(str(data["tool"]), str(data["call_id"]), str(data.get("input_summary", "")),
                   str(data["reason"]), data["source"])


def summarize_input(tool_name: str, arguments: Any, limit: int = INPUT_SUMMARY_LIMIT) -> str:
    """A short readable form of a call's input (:func:`input_text` on one line), cut to
    ``limit``: for a denial's record, not for what a person approves."""
    text = " ".join(input_text(tool_name, arguments).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def input_text(tool_name: str, arguments: Any) -> str:
    """A call's input, whole: the command of a shell tool (every line), the paths of a file
    tool, the rule argument or compact JSON of anything else."""
    if not isinstance(arguments, Mapping):
        return repr(arguments)
    if tool_name in matching.COMMAND_ARGUMENTS:
        return str(arguments.get(matching.COMMAND_ARGUMENTS[tool_name], ""))
    if found := paths.paths_of(tool_name, arguments):
        return ", ".join(found)
    if tool_name in matching.RULE_ARGUMENTS:
        return matching.canonical_argument(tool_name, arguments)
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=str)
