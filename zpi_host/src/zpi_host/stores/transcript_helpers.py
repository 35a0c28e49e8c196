"""Session helpers over native storage (a TranscriptStore), and JSONL import and export.

The same jobs as :mod:`zpi_host.transcript.helpers` does for local files: list, info,
messages, rename, tag, fork, delete and sub-agent histories. A change (rename, tag, fork's
new session) goes through a :class:`~zpi_host.transcript.native_session.StoreSessionManager`,
so it takes the session's lease like any owner and is refused while a worker holds it.

Import and export are lossless both ways: a JSONL session's lines are stored verbatim (the
exact bytes come back out), its sub-agent transcripts become sessions of their own linked to
it, and the chain is validated on the way in (the JSONL reader's rules, then the store's).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..errors import UsageError
from ..providers.messages import Message
from ..transcript import history
from ..transcript.codec import dump_line, encode_record
from ..transcript.errors import SessionExistsError
from ..transcript.native import (
    CurrentState,
    TranscriptStore,
    TranscriptStoreError,
    iter_records,
)
from ..transcript.native_session import StoreSessionManager, decode_stored, default_owner
from ..transcript.paths import check_session_id, not_found, subagents_folder
from ..transcript.reader import read_transcript
from ..transcript.records import CompactionRecord, HeaderRecord, Record

__all__ = [
    "delete_session", "export_jsonl", "fork_session", "get_session_info",
    "get_session_messages", "import_jsonl", "list_sessions", "rename_session",
    "subagent_histories", "tag_session",
]

#: records per transaction when a session is imported
IMPORT_BATCH = 500


def list_sessions(store: TranscriptStore) -> list[CurrentState]:
    """Every session's state (not sub-agents'), newest first: title, tags, first prompt,
    record count, model and times, read without any history."""
    return list(store.sessions())


def get_session_info(store: TranscriptStore, session_id: str) -> CurrentState | None:
    return store.current_state(check_session_id(session_id))


def get_session_messages(store: TranscriptStore, session_id: str, limit: int | None = None,
                         offset: int = 0) -> list[Message]:
    """The conversation for people (compactions as their summaries), read a page at a time;
    ``[]`` if there is no such session."""
    sid = check_session_id(session_id)
    state = store.current_state(sid)
    if state is None:
        return []
    records = [decode_stored(r, sid) for r in iter_records(store, sid)]
    messages = history.history_messages(history.active_branch(records, state.linear))
    end = None if limit is None else offset + limit
    return messages[offset:end]


def subagent_histories(store: TranscriptStore, session_id: str) -> dict[str, list[Message]]:
    """The conversation of each sub-agent the session started, by agent id."""
    subagents = getattr(store, "subagents", None)
    if subagents is None:
        return {}
    return {child.session_id: get_session_messages(store, child.session_id)
            for child in subagents(check_session_id(session_id))}


def rename_session(store: TranscriptStore, session_id: str, title: str, *,
                   owner: str | None = None) -> None:
    with StoreSessionManager.open_in(store, session_id, owner=owner, recover=False) as manager:
        manager.set_title(title)


def tag_session(store: TranscriptStore, session_id: str, tags: Iterable[str], *,
                owner: str | None = None) -> None:
    with StoreSessionManager.open_in(store, session_id, owner=owner, recover=False) as manager:
        manager.set_tags(tags)


def delete_session(store: TranscriptStore, session_id: str) -> bool:
    """Remove a session and its sub-agents' transcripts (refused while a worker owns it)."""
    sid = check_session_id(session_id)
    subagents = getattr(store, "subagents", None)
    for child in subagents(sid) if subagents is not None else ():
        store.delete(child.session_id)
    return store.delete(sid)


def fork_session(store: TranscriptStore, session_id: str, up_to: str | None = None, *,
                 new_id: str | None = None) -> str:
    """Copy a session's history up to and including record ``up_to`` (default: all of it)
    into a new session of the store; returns its id. Records get new uuids (a compaction's
    kept part follows them); fields, extras and timestamps are kept."""
    from ..transcript.records import ForkOrigin

    sid = check_session_id(session_id)
    state = store.current_state(sid)
    if state is None:
        raise not_found(sid, None)
    if new_id is not None and check_session_id(new_id) == sid:
        raise UsageError(f"a fork never reuses the id of the session it copies ({sid})")
    records = [decode_stored(r, sid) for r in iter_records(store, sid)]
    target = up_to if up_to is not None else state.head_uuid
    by_uuid = {r.uuid: r for r in records}
    if target not in by_uuid:
        raise TranscriptStoreError(f"session {sid} has no record {up_to!r} to fork at")
    branch = history.active_branch(records[:records.index(by_uuid[target]) + 1], state.linear)
    header = branch[0]
    assert isinstance(header, HeaderRecord)
    fork = StoreSessionManager.create_in(store, header.cwd, session_id=new_id,
                                         forked_from=ForkOrigin(session_id=sid, uuid=target))
    try:
        uuids: dict[str, str] = {}
        for record in branch[1:]:
            changes = {}
            if isinstance(record, CompactionRecord) and record.first_kept_uuid is not None:
                changes["first_kept_uuid"] = uuids.get(record.first_kept_uuid)
            uuids[record.uuid] = fork._copy(record, **changes).uuid
    finally:
        fork.close()
    return fork.session_id


# ------------------------------------------------------------------------ import, export

def import_jsonl(path: Path | str, store: TranscriptStore, *,
                 owner: str | None = None) -> CurrentState:
    """Store the JSONL session at ``path`` (and its sub-agents) under its own id; returns its
    state. The file is validated first; a session already in the store is an error."""
    path = Path(path)
    state = _import_one(path, store, owner, None)
    folder = subagents_folder(path)
    for child in sorted(folder.glob("agent-*.jsonl")) if folder.is_dir() else ():
        _import_one(child, store, owner, state.session_id)
    return state


def _import_one(path: Path, store: TranscriptStore, owner: str | None,
                parent: str | None) -> CurrentState:
    transcript = read_transcript(path)
    data = path.read_bytes()[:transcript.valid_size]
    lines = data.decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    records: list[Record] = list(transcript.records)
    if len(lines) != len(records):  # not one record a line: write each as this host would
        lines = [dump_line(encode_record(r)).decode("ascii").rstrip("\n") for r in records]
    header = records[0]
    assert isinstance(header, HeaderRecord)
    state, lease = store.create(header, lines[0], owner or default_owner(),
                                parent_session_id=parent)
    try:
        after = header.uuid
        pairs = list(zip(records[1:], lines[1:], strict=True))
        for start in range(0, len(pairs), IMPORT_BATCH):
            batch = pairs[start:start + IMPORT_BATCH]
            state = store.append(header.session_id, batch, after=after, lease=lease,
                                 **({} if transcript.linear else {"linear": False}))
            after = batch[-1][0].uuid
    except BaseException:
        store.release(lease)
        store.delete(header.session_id)
        raise
    store.release(lease)
    return state


def export_jsonl(store: TranscriptStore, session_id: str, path: Path | str) -> Path:
    """Write a stored session (and its sub-agents, beside it as the JSONL layout has them) to
    ``path``, byte for byte as it was stored. An existing file is never overwritten."""
    sid = check_session_id(session_id)
    if store.current_state(sid) is None:
        raise not_found(sid, None)
    target = Path(path)
    _write_new(target, (row.line for row in iter_records(store, sid)))
    subagents = getattr(store, "subagents", None)
    for child in subagents(sid) if subagents is not None else ():
        folder = subagents_folder(target)
        folder.mkdir(parents=True, exist_ok=True)
        _write_new(folder / f"agent-{child.session_id}.jsonl",
                   (row.line for row in iter_records(store, child.session_id)))
    return target


def _write_new(target: Path, lines: Iterable[str]) -> None:
    if target.exists():
        raise SessionExistsError(f"{target} exists already; export to a new path")
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(temp, "x", encoding="ascii", newline="\n") as out:
            for line in lines:
                out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.link(temp, target)  # refuses to replace a file that appeared meanwhile
    except FileExistsError:
        raise SessionExistsError(f"{target} exists already; export to a new path") from None
    finally:
        temp.unlink(missing_ok=True)
