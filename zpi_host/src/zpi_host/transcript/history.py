"""What a transcript means: the active branch, the model's context, and the session's state.

Records form a tree through ``parentUuid``; the conversation is the *active branch*: the last
record of the file and its ancestors (for a file written by one owner, every record). The
context the model sees is the active branch's messages after the last compaction:

    [summary_message(compaction)] + messages of the branch from ``firstKeptUuid`` on

(``firstKeptUuid`` null, or not on the branch: only what follows the compaction record is
kept). Earlier compactions inside the kept range are not shown again. Model, reasoning level
and snapshot are the latest on the branch; title and tags are the latest in the file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..providers.messages import ContextMessage, Message, ToolCallContent
from .records import (
    AssistantRecord,
    CompactionRecord,
    ContextRecord,
    ModelChangeRecord,
    ReasoningLevelRecord,
    Record,
    SnapshotRecord,
    TagRecord,
    TitleRecord,
    ToolResultRecord,
    ToolUseRecord,
    UserRecord,
    record_message,
)

#: The ``source`` of the context message that stands for compacted history.
COMPACTION_SOURCE = "compaction"
#: The ``source`` of the context message that opens, in the people's history, what an
#: ``omit`` migration took out of the model's context; its uuid is the record's + the suffix.
OMITTED_SOURCE = "omitted"
OMITTED_SUFFIX = ".omitted"
SUMMARY_INTRO = ("The earlier part of this conversation was compacted to save context. "
                 "Summary of it:")


def active_branch(records: Sequence[Record], linear: bool = False) -> list[Record]:
    """The last record and its ancestors, oldest first (all records when ``linear``)."""
    if linear or not records:
        return list(records)
    by_uuid = {r.uuid: r for r in records}
    branch: list[Record] = []
    current: Record | None = records[-1]
    while current is not None:
        branch.append(current)
        current = by_uuid.get(current.parent_uuid) if current.parent_uuid else None
    branch.reverse()
    return branch


def summary_message(record: CompactionRecord) -> ContextMessage:
    """What the model sees in place of compacted history: ``SUMMARY_INTRO``, a blank line, the
    summary, then (when known) a line listing the files read and one listing those modified."""
    return summary_context(record.summary, record.read_files, record.modified_files)


def summary_context(summary: str, read_files: Sequence[str] = (),
                    modified_files: Sequence[str] = ()) -> ContextMessage:
    """The summary message for a compaction that is about to be recorded."""
    text = f"{SUMMARY_INTRO}\n\n{summary}"
    if read_files:
        text += "\n\nFiles read: " + ", ".join(read_files)
    if modified_files:
        text += "\n\nFiles modified: " + ", ".join(modified_files)
    return ContextMessage(text, COMPACTION_SOURCE)


def context_start(branch: Sequence[Record]) -> tuple[int, CompactionRecord | None]:
    """Where the model's context starts on ``branch``, and the compaction that decided it."""
    for index in range(len(branch) - 1, -1, -1):
        record = branch[index]
        if isinstance(record, CompactionRecord):
            kept = record.first_kept_uuid
            if kept is not None:
                for k in range(index):
                    if branch[k].uuid == kept:
                        return k, record
            return index + 1, record
    return 0, None


def release_point(branch: Sequence[Record]) -> int:
    """The index of the first record the model's context needs (0 without a compaction):
    its first kept record, or the compaction record itself when it keeps nothing before
    (what an owner may let go of lies before it)."""
    start, compaction = context_start(branch)
    if compaction is not None and start > 0 and branch[start - 1] is compaction:
        return start - 1  # nothing kept before it
    return start


#: the record kinds the session's state is read from (last_model and the rest)
STATE_KINDS = (ModelChangeRecord, ReasoningLevelRecord, SnapshotRecord, TitleRecord, TagRecord)


def state_records(records: Sequence[Record]) -> list[Record]:
    """The latest record of each of ``STATE_KINDS`` in ``records``, in their order; and,
    where no ``model_change`` is among them, the latest assistant record naming its model
    (the fallback :func:`last_model` reads): the records that answer for the state of
    ``records`` once the rest is let go."""
    latest: dict[type[Record], int] = {}
    named = None
    for index, record in enumerate(records):
        if isinstance(record, STATE_KINDS):
            latest[type(record)] = index
        elif isinstance(record, AssistantRecord) and record.message.provider \
                and record.message.model:
            named = index
    if named is not None and ModelChangeRecord not in latest:
        latest[AssistantRecord] = named
    return [records[i] for i in sorted(latest.values())]


def context_messages(branch: Sequence[Record]) -> list[Message]:
    """The messages the model should see (see the module docstring)."""
    return [message for _, message in context_entries(branch)]


def context_entries(branch: Sequence[Record]) -> list[tuple[str, Message]]:
    """``context_messages`` with the uuid of the record each message comes from (the
    compaction record's for the summary), so a later compaction can name its first kept
    record."""
    start, compaction = context_start(branch)
    entries: list[tuple[str, Message]] = (
        [] if compaction is None else [(compaction.uuid, summary_message(compaction))])
    append = entries.append
    for record in branch[start:] if start else branch:
        cls = type(record)
        if cls is UserRecord or cls is AssistantRecord or cls is ToolResultRecord:
            append((record.uuid, record.message))  # type: ignore[attr-defined]
        elif cls is ContextRecord:
            append((record.uuid,
                    ContextMessage(record.text, record.source)))  # type: ignore[attr-defined]
    return entries


def history_entries(branch: Sequence[Record]) -> list[tuple[str, Message]]:
    """Every message of the branch with its record's uuid, for people, each compaction shown
    as its summary message where it happened. A hand-off's migration (the compaction
    record's ``migration``): ``omit`` keeps what it took out of the context and opens that
    part with an ``OMITTED_SOURCE`` context message (uuid: the record's + ``OMITTED_SUFFIX``);
    ``prune`` drops everything before it from this history too (the file keeps it)."""
    entries: list[tuple[str, Message]] = []
    start = 0  # where the model's context began: after the last compaction's summary
    for record in branch:
        is_summary = isinstance(record, CompactionRecord)
        m = summary_message(record) if is_summary else record_message(record)  # type: ignore[arg-type]
        if is_summary and record.migration == "prune":  # type: ignore[attr-defined]
            entries.clear()
        elif is_summary and record.migration == "omit":  # type: ignore[attr-defined]
            count = len(entries) - start
            entries.insert(start, (record.uuid + OMITTED_SUFFIX, ContextMessage(
                f"Omitted from the model's context by a hand-off (omit): the {count} "
                f"message(s) from here to the summary below stay in the history only.",
                OMITTED_SOURCE)))
        if m is not None:
            entries.append((record.uuid, m))
        if is_summary:
            start = len(entries)
    return entries


def history_messages(branch: Sequence[Record]) -> list[Message]:
    """:func:`history_entries` without the uuids."""
    return [message for _, message in history_entries(branch)]


def last_model(branch: Sequence[Record]) -> tuple[str, str] | None:
    """(provider, model) of the last ``model_change``; without one, of the last assistant
    message that names them; else None."""
    fallback: tuple[str, str] | None = None
    for record in reversed(branch):
        if isinstance(record, ModelChangeRecord):
            return record.provider, record.model
        if fallback is None and isinstance(record, AssistantRecord):
            m = record.message
            if m.provider and m.model:
                fallback = (m.provider, m.model)
    return fallback


def last_reasoning_level(branch: Sequence[Record]) -> str | None:
    for record in reversed(branch):
        if isinstance(record, ReasoningLevelRecord):
            return record.level
    return None


def latest_snapshot(branch: Sequence[Record]) -> Mapping[str, Any] | None:
    for record in reversed(branch):
        if isinstance(record, SnapshotRecord):
            return record.snapshot
    return None


def title(records: Sequence[Record]) -> str | None:
    for record in reversed(records):
        if isinstance(record, TitleRecord):
            return record.title
    return None


def tags(records: Sequence[Record]) -> tuple[str, ...]:
    for record in reversed(records):
        if isinstance(record, TagRecord):
            return record.tags
    return ()


def unfinished_calls(branch: Sequence[Record]) -> list[tuple[str, str, bool]]:
    """Tool calls in the model's context without a result, in call order, as (call id, tool
    name, started): ``started`` when a ``tool_use`` journal record says it began running.

    A journaled call that no assistant message holds (a read-only call started while the
    model was still streaming, then a crash before the message was written) is not closed:
    a result for a call the model never made would make the history invalid."""
    start, _ = context_start(branch)
    open_calls: dict[str, tuple[str, bool]] = {}
    journaled: set[str] = set()
    for record in branch[start:] if start else branch:
        cls = type(record)
        if cls is ToolResultRecord:
            open_calls.pop(record.call_id, None)  # type: ignore[attr-defined]
        elif cls is ToolUseRecord:
            call_id = record.call_id  # type: ignore[attr-defined]
            journaled.add(call_id)
            if call_id in open_calls:
                open_calls[call_id] = (open_calls[call_id][0], True)
        elif cls is AssistantRecord:
            for block in record.message.content:  # type: ignore[attr-defined]
                if type(block) is ToolCallContent:
                    open_calls.setdefault(block.id, (block.name, block.id in journaled))
    return [(cid, name, started) for cid, (name, started) in open_calls.items()]


__all__ = [
    "COMPACTION_SOURCE", "OMITTED_SOURCE", "OMITTED_SUFFIX", "STATE_KINDS", "SUMMARY_INTRO",
    "active_branch", "context_entries", "context_messages", "summary_context",
    "context_start", "history_messages", "last_model", "last_reasoning_level", "latest_snapshot",
    "release_point", "state_records", "summary_message", "tags", "title", "unfinished_calls",
]
