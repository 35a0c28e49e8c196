"""The records of a transcript (format version 2): one JSON object per line.

Every record has ``type``, ``uuid``, ``parentUuid``, ``sessionId`` and ``timestamp`` (ISO 8601,
UTC). JSON keys are the camelCase of the attribute names (``call_id`` -> ``callId``), inside
messages too. Top-level fields a record type does not know are kept in ``extra`` and written
back when the record is copied (a newer version-2 writer may add fields); unknown fields inside
a message object are ignored. An unknown record ``type`` is an error.

The JSON codec lives in :mod:`.codec`; these classes are plain attrs (no cattrs at import).
"""

from __future__ import annotations

import re
import uuid as _uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, ClassVar

import attrs

from ..providers.messages import (
    AssistantMessage,
    ContextMessage,
    Message,
    ToolResultMessage,
    UserMessage,
)
from ..support.attrs_methods import FrozenFieldsEq

FORMAT_VERSION = 2

#: ``plugin.name`` or ``name``: letters, digits, ``_`` and ``-``, starting with a letter.
NAMESPACE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)?$")


#: ``extra`` of a record without unknown fields: one read-only empty mapping shared by all
#: (an empty dict per record was a twentieth of a resumed session's memory)
NO_EXTRA: Mapping[str, Any] = MappingProxyType({})


def new_uuid() -> str:
    return str(_uuid.uuid4())


def now() -> str:
    """The current time as the transcripts write it: ``2025-01-31T12:00:00.123Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Record(FrozenFieldsEq):
    """What every record has. ``extra`` holds unknown top-level fields read from a file."""

    TYPE: ClassVar[str] = ""

    uuid: str
    parent_uuid: str | None
    session_id: str
    timestamp: str
    extra: Mapping[str, Any] = attrs.field(default=NO_EXTRA, repr=False)

    @property
    def type(self) -> str:
        return self.TYPE


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ForkOrigin(FrozenFieldsEq):
    """Where a forked session came from: the source session and the last record copied."""

    session_id: str
    uuid: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class HeaderRecord(Record):
    """The first record of every file, and only there."""

    TYPE: ClassVar[str] = "header"
    version: int = FORMAT_VERSION
    cwd: str
    created_at: str
    forked_from: ForkOrigin | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class UserRecord(Record):
    TYPE: ClassVar[str] = "user"
    message: UserMessage


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AssistantRecord(Record):
    TYPE: ClassVar[str] = "assistant"
    message: AssistantMessage


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolUseRecord(Record):
    """Journal: a call about to run. Written before the tool starts, so a crash leaves it
    pending; the next owner closes it as interrupted and never re-runs it."""

    TYPE: ClassVar[str] = "tool_use"
    call_id: str
    name: str
    arguments: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolResultRecord(Record):
    TYPE: ClassVar[str] = "tool_result"
    call_id: str
    message: ToolResultMessage


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ContextRecord(Record):
    """A synthetic context message a plugin added for the model."""

    TYPE: ClassVar[str] = "context"
    text: str
    source: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class SnapshotRecord(Record):
    """The frozen plugin snapshot: opaque JSON produced by the session."""

    TYPE: ClassVar[str] = "snapshot"
    snapshot: Mapping[str, Any]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ModelChangeRecord(Record):
    TYPE: ClassVar[str] = "model_change"
    provider: str
    model: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ReasoningLevelRecord(Record):
    TYPE: ClassVar[str] = "reasoning_level"
    level: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CompactionRecord(Record):
    """History before ``first_kept_uuid`` is replaced by ``summary`` in the model's context
    (``None``: everything before this record is). See :func:`.history.summary_message`."""

    TYPE: ClassVar[str] = "compaction"
    summary: str
    first_kept_uuid: str | None
    tokens_before: int
    tokens_after: int
    read_files: tuple[str, ...] = ()
    modified_files: tuple[str, ...] = ()
    #: a hand-off's migration (``omit`` or ``prune``) that wrote it; None for a compaction
    migration: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TitleRecord(Record):
    """The session's title; the last one in the file wins."""

    TYPE: ClassVar[str] = "title"
    title: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TagRecord(Record):
    """The session's complete tag list; the last one in the file wins (an empty list clears)."""

    TYPE: ClassVar[str] = "tag"
    tags: tuple[str, ...]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CustomRecord(Record):
    """Plugin data: ``namespace`` is ``plugin.name`` or ``name``; ``data`` any JSON value."""

    TYPE: ClassVar[str] = "custom"
    namespace: str
    data: Any = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class WarningRecord(Record):
    """Something the host noticed about the file itself (a repaired torn line ...)."""

    TYPE: ClassVar[str] = "warning"
    code: str
    text: str


RECORD_TYPES: dict[str, type[Record]] = {
    cls.TYPE: cls
    for cls in (
        HeaderRecord, UserRecord, AssistantRecord, ToolUseRecord, ToolResultRecord,
        ContextRecord, SnapshotRecord, ModelChangeRecord, ReasoningLevelRecord,
        CompactionRecord, TitleRecord, TagRecord, CustomRecord, WarningRecord,
    )
}

#: Record types that carry one message of the conversation.
MESSAGE_TYPES = frozenset({"user", "assistant", "tool_result", "context"})


def record_message(record: Record) -> Message | None:
    """The conversation message a record carries, if any."""
    cls = type(record)
    if cls is UserRecord or cls is AssistantRecord or cls is ToolResultRecord:
        return record.message  # type: ignore[attr-defined,no-any-return]
    if cls is ContextRecord:
        return ContextMessage(record.text, record.source)  # type: ignore[attr-defined]
    return None


def message_fields(message: Message) -> tuple[type[Record], dict[str, Any]]:
    """The record type and fields that store ``message``."""
    if isinstance(message, UserMessage):
        return UserRecord, {"message": message}
    if isinstance(message, AssistantMessage):
        return AssistantRecord, {"message": message}
    if isinstance(message, ToolResultMessage):
        return ToolResultRecord, {"call_id": message.call_id, "message": message}
    if isinstance(message, ContextMessage):
        return ContextRecord, {"text": message.text, "source": message.source}
    raise TypeError(f"not a message: {message!r}")
