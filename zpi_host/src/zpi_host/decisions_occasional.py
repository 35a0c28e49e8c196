"""The hook answers only some runs build: the answer types plugins return to decision hooks
(tool calls, prompts, results, stops, compaction) and the combined answers of the tool, result
and compaction hooks. Importable from :mod:`.decisions` too; apart so that a run whose plugins
answer no decision hook and that calls no tool does not build their classes. The rules that
check and combine them are in :mod:`.decisions`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .decisions import _OPTIONAL_TEXT, Behavior
from .hookcalls import Attributed

__all__ = ["CombinedCompactDecision", "CombinedResultPatch", "CombinedToolDecision",
           "CompactDecision", "PromptDecision", "StopDecision", "ToolDecision",
           "ToolResultPatch"]


@attrs.frozen
class ToolDecision:
    """A plugin's verdict on one tool call. ``behavior`` None (:meth:`context_only`): no
    verdict, only context for the model, which reaches it with the call's result however the
    call is then decided."""

    behavior: Behavior | None
    reason: str | None = None
    updated_input: Mapping[str, Any] | None = None
    context: str | None = None

    @classmethod
    def allow(cls, reason: str | None = None, *, updated_input: Mapping[str, Any] | None = None,
              context: str | None = None) -> ToolDecision:
        return cls("allow", reason, updated_input, context)

    @classmethod
    def ask(cls, reason: str | None = None, *, context: str | None = None) -> ToolDecision:
        return cls("ask", reason, None, context)

    @classmethod
    def deny(cls, reason: str, *, context: str | None = None) -> ToolDecision:
        return cls("deny", reason, None, context)

    @classmethod
    def context_only(cls, context: str) -> ToolDecision:
        return cls(None, None, None, context)


@attrs.frozen
class PromptDecision:
    """Answer to a user prompt: block it (reason shown to the user) and/or add context."""

    block: bool = False
    reason: str | None = None
    context: str | None = None


@attrs.frozen
class ToolResultPatch:
    """Answer after a successful tool call: add context and/or replace what the model sees."""

    context: str | None = None
    content: str | None = None


@attrs.frozen
class StopDecision:
    """Answer when the agent would stop: ``continue_with`` becomes the next user input."""

    continue_with: str


@attrs.frozen
class CompactDecision:
    """Answer before compaction: cancel it, or supply the summary instead of the model."""

    cancel: bool = False
    reason: str | None = None
    summary: str | None = None


@attrs.frozen
class CombinedToolDecision:
    """The outcome of ``zpi_before_tool`` / ``zpi_permission_request`` over all plugins."""

    behavior: Behavior | None
    reasons: tuple[Attributed, ...] = ()
    updated_input: Mapping[str, Any] | None = None
    contexts: tuple[Attributed, ...] = ()

    @property
    def reason(self) -> str | None:
        return "; ".join(a.value for a in self.reasons) or None


@attrs.frozen
class CombinedResultPatch:
    content: str | None = None
    contexts: tuple[Attributed, ...] = ()


@attrs.frozen
class CombinedCompactDecision:
    cancel: bool
    reason: str | None = None
    summary: str | None = None
    summary_from: str | None = None


#: Each answer type here: its fields and the types each may hold.
FIELDS: dict[type, dict[str, tuple[type, ...]]] = {
    ToolDecision: {"behavior": (str, type(None)), "reason": _OPTIONAL_TEXT,
                   "updated_input": (Mapping, type(None)), "context": _OPTIONAL_TEXT},
    PromptDecision: {"block": (bool,), "reason": _OPTIONAL_TEXT, "context": _OPTIONAL_TEXT},
    ToolResultPatch: {"context": _OPTIONAL_TEXT, "content": _OPTIONAL_TEXT},
    StopDecision: {"continue_with": (str,)},
    CompactDecision: {"cancel": (bool,), "reason": _OPTIONAL_TEXT, "summary": _OPTIONAL_TEXT},
}
