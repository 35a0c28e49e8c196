"""Events a session emits while it runs; they drive display, streaming output and plugins.

The events of every run are defined here; those only some runs emit (queued input, warnings,
retries, compaction, background tasks) are in :mod:`.events_occasional`, built the first
time one is imported (from either module) rather than at every start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from .lazy import lazy_attributes
from .messages import AssistantMessage, ToolResultMessage

if TYPE_CHECKING:
    from .events_occasional import (
        CompactionEvent,
        InputDelivered,
        RetryEvent,
        SystemMessageEvent,
        TaskNotification,
        TaskProgress,
        TaskStarted,
        WarningEvent,
    )


__all__ = ["CompactionEvent", "Event", "InputDelivered", "MessageEnd", "ReasoningDeltaEvent",
           "RetryEvent", "RunEnd", "RunStart", "SystemMessageEvent", "TaskNotification",
           "TaskProgress", "TaskStarted", "TextDeltaEvent", "ToolEnd", "ToolStart",
           "ToolUpdateEvent", "TurnEnd", "TurnStart", "WarningEvent"]


@attrs.frozen
class Event:
    """Base of every event; ``type`` is a stable string for JSON consumers."""

    type: str

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self, recurse=True, value_serializer=_serialize)


def _serialize(inst: Any, field: Any, value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "__fspath__"):
        return str(value)
    return value


@attrs.frozen
class RunStart(Event):
    prompt: str
    type: str = "run_start"


@attrs.frozen
class TurnStart(Event):
    turn: int
    type: str = "turn_start"


@attrs.frozen
class TextDeltaEvent(Event):
    text: str
    type: str = "text_delta"


@attrs.frozen
class ReasoningDeltaEvent(Event):
    text: str
    type: str = "reasoning_delta"


@attrs.frozen
class MessageEnd(Event):
    message: AssistantMessage
    type: str = "message_end"


@attrs.frozen
class ToolStart(Event):
    call_id: str
    name: str
    arguments: Any
    type: str = "tool_start"


@attrs.frozen
class ToolUpdateEvent(Event):
    call_id: str
    text: str
    type: str = "tool_update"


@attrs.frozen
class ToolEnd(Event):
    result: ToolResultMessage
    type: str = "tool_end"


@attrs.frozen
class TurnEnd(Event):
    turn: int
    type: str = "turn_end"


@attrs.frozen
class RunEnd(Event):
    result: Any
    type: str = "run_end"


#: the occasional events, imported on first use
__getattr__, __dir__ = lazy_attributes(__name__, dict.fromkeys((
    "CompactionEvent", "InputDelivered", "RetryEvent", "SystemMessageEvent", "TaskNotification",
    "TaskProgress", "TaskStarted", "WarningEvent"), "events_occasional"), globals(),
    parent="zpi_host")
