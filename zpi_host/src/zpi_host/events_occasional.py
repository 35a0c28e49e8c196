"""The events only some runs emit: queued input delivered, warnings, plugins' system
messages, retries, compaction and background tasks. Importable from :mod:`.events` too;
apart so that a plain run does not build their classes."""

from __future__ import annotations

from typing import Any

import attrs

from .events import Event

__all__ = ["CompactionEvent", "InputDelivered", "RetryEvent", "SystemMessageEvent",
           "TaskNotification", "TaskProgress", "TaskStarted", "WarningEvent"]


@attrs.frozen
class InputDelivered(Event):
    """Input queued during a run reached the model at a safe point."""

    text: str
    type: str = "input_delivered"


@attrs.frozen
class WarningEvent(Event):
    """Something the user should know that did not stop the session (a settings file that
    does not parse, a torn transcript line, plugins that changed since the last run)."""

    message: str
    type: str = "warning"


@attrs.frozen
class SystemMessageEvent(Event):
    """A message for the user from a plugin, never sent to the model (a Claude Code hook's
    ``systemMessage``); ``source`` names the plugin."""

    message: str
    source: str | None = None
    type: str = "system"


@attrs.frozen
class RetryEvent(Event):
    """A model request failed before any answer and is sent again after ``delay`` seconds
    (``attempt`` of at most ``attempts``); ``reason`` is short ("rate limited")."""

    reason: str
    delay: float
    attempt: int
    attempts: int
    type: str = "retry"


@attrs.frozen
class CompactionEvent(Event):
    """The history was compacted; ``result`` is the CompactionResult."""

    result: Any
    type: str = "compaction"


@attrs.frozen
class TaskStarted(Event):
    """A background task (a command run with ``run_in_background``) started; ``info`` is
    its :class:`~zpi_host.ports.TaskInfo`."""

    info: Any
    type: str = "task_started"


@attrs.frozen
class TaskProgress(Event):
    """A running background task's output grew (at most every ``progress_seconds``)."""

    info: Any
    type: str = "task_progress"


@attrs.frozen
class TaskNotification(Event):
    """A background task ended: ``info.status`` is ``completed``, ``failed`` or
    ``stopped``."""

    info: Any
    type: str = "task_notification"
