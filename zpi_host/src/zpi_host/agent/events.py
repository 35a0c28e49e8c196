"""Events a session emits while it runs; they drive display, streaming output and plugins."""

from __future__ import annotations

from typing import Any

import attrs

from ..providers.messages import AssistantMessage, ToolResultMessage
from ..support.attrs_methods import FrozenFieldsEq

__all__ = ["CompactionEvent", "Event", "InputDelivered", "MessageEnd", "ReasoningDeltaEvent",
           "RetryEvent", "RunEnd", "RunStart", "SystemMessageEvent", "TaskNotification",
           "TaskProgress", "TaskStarted", "TextDeltaEvent", "ToolEnd", "ToolStart",
           "ToolUpdateEvent", "TurnEnd", "TurnStart", "WarningEvent"]


@attrs.frozen(repr=False, eq=False)
class Event(FrozenFieldsEq):
    """Base of every event; ``type`` is a stable string for JSON consumers."""

    type: str

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self, recurse=True, value_serializer=_serialize,
                            filter=lambda field, _: not field.metadata.get("internal"))


def _serialize(inst: Any, field: Any, value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "__fspath__"):
        return str(value)
    return value


@attrs.frozen(repr=False, eq=False)
class RunStart(Event):
    prompt: str
    type: str = "run_start"


@attrs.frozen(repr=False, eq=False)
class TurnStart(Event):
    turn: int
    type: str = "turn_start"


@attrs.frozen(repr=False, eq=False)
class TextDeltaEvent(Event):
    text: str
    type: str = "text_delta"


@attrs.frozen(repr=False, eq=False)
class ReasoningDeltaEvent(Event):
    text: str
    type: str = "reasoning_delta"


@attrs.frozen(repr=False, eq=False)
class MessageEnd(Event):
    message: AssistantMessage
    type: str = "message_end"


@attrs.frozen(repr=False, eq=False)
class ToolStart(Event):
    call_id: str
    name: str
    arguments: Any
    type: str = "tool_start"


@attrs.frozen(repr=False, eq=False)
class ToolUpdateEvent(Event):
    call_id: str
    text: str
    type: str = "tool_update"


@attrs.frozen(repr=False, eq=False)
class ToolEnd(Event):
    result: ToolResultMessage
    type: str = "tool_end"


@attrs.frozen(repr=False, eq=False)
class TurnEnd(Event):
    turn: int
    type: str = "turn_end"


@attrs.frozen(repr=False, eq=False)
class RunEnd(Event):
    result: Any
    type: str = "run_end"

@attrs.frozen(repr=False, eq=False)
class InputDelivered(Event):
    """Input queued during a run reached the model at a safe point."""

    text: str
    type: str = "input_delivered"


@attrs.frozen(repr=False, eq=False)
class WarningEvent(Event):
    """Something the user should know that did not stop the session (a settings file that
    does not parse, a torn transcript line, plugins that changed since the last run)."""

    message: str
    type: str = "warning"


@attrs.frozen(repr=False, eq=False)
class SystemMessageEvent(Event):
    """A message for the user from a plugin, never sent to the model (a Claude Code hook's
    ``systemMessage``); ``source`` names the plugin."""

    message: str
    source: str | None = None
    type: str = "system"


@attrs.frozen(repr=False, eq=False)
class RetryEvent(Event):
    """A model request failed before any answer and is sent again after ``delay`` seconds
    (``attempt`` of at most ``attempts``); ``reason`` is short ("rate limited")."""

    reason: str
    delay: float
    attempt: int
    attempts: int
    type: str = "retry"


@attrs.frozen(repr=False, eq=False)
class CompactionEvent(Event):
    """The history was compacted; ``result`` is the CompactionResult."""

    result: Any
    type: str = "compaction"


@attrs.frozen(repr=False, eq=False)
class TaskStarted(Event):
    """A background task (a command run with ``run_in_background``) started; ``info`` is
    its :class:`~zpi_host.session.ports.TaskInfo`."""

    info: Any
    type: str = "task_started"


@attrs.frozen(repr=False, eq=False)
class TaskProgress(Event):
    """A running background task's output grew (at most every ``progress_seconds``)."""

    info: Any
    type: str = "task_progress"


@attrs.frozen(repr=False, eq=False)
class TaskNotification(Event):
    """A background task ended: ``info.status`` is ``completed``, ``failed`` or
    ``stopped``."""

    info: Any
    type: str = "task_notification"
