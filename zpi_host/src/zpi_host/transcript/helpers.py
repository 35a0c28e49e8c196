"""Session helpers: list, inspect, rename, tag, fork and delete saved sessions.

Every helper takes ``agent_dir`` (default: :func:`.paths.agent_dir`) and an optional ``cwd``
(the project to look in first; ids are unique, so every project is searched). A session open
in this process is changed only through its owner (one writer per file): renaming, deleting
or forking the tail of a *running* session is refused with :class:`SessionBusyError`; one
locked by another process cannot be renamed, tagged or deleted (:class:`TranscriptLockedError`).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs

from ..errors import UsageError
from ..providers.messages import (
    Message,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from ..support.attrs_methods import FrozenFieldsEq
from . import history
from .errors import (
    RecordError,
    SessionBusyError,
    SessionExistsError,
    SessionNotFoundError,
    TranscriptError,
)
from .lock import FileLock
from .owners import open_owner
from .paths import (
    CHECKPOINT_NAMESPACE,
    SUBAGENT_NAMESPACE,
    check_session_id,
    find_session,
    is_agent_id,
    iter_session_files,
    new_session_id,
    not_found,
    subagents_folder,
)
from .reader import read_transcript
from .records import (
    FORMAT_VERSION,
    AssistantRecord,
    CompactionRecord,
    CustomRecord,
    ForkOrigin,
    HeaderRecord,
    Record,
    ToolResultRecord,
    ToolUseRecord,
    UserRecord,
    record_message,
)
from .store import SessionManager

#: ``first_prompt`` is cut to this many characters.
FIRST_PROMPT_LIMIT = 200
_MESSAGE_LINES = (b'\n{"type":"user"', b'\n{"type":"assistant"', b'\n{"type":"tool_result"',
                  b'\n{"type":"context"')


@attrs.frozen(repr=False, eq=False, slots=False)
class SessionInfo(FrozenFieldsEq):
    """What a listing shows about a session. ``message_count`` counts the user, assistant, tool
    result and context records of the file; ``first_prompt`` is the text of the first user
    message (cut to 200 characters). ``problem`` is set, and most fields empty, when the file
    cannot be read."""

    session_id: str
    path: Path
    cwd: Path | None
    title: str | None
    tags: tuple[str, ...]
    created_at: str | None
    modified_at: str
    message_count: int
    first_prompt: str | None
    forked_from: str | None = None
    problem: str | None = None


# --------------------------------------------------------------------------------- reading


def list_sessions(cwd: Path | str | None = None, *,
                  agent_dir: Path | str | None = None) -> list[SessionInfo]:
    """Sessions of the project at ``cwd`` (``None``: of every project), newest first.

    Cheap: reads each file's header and scans its lines' prefixes for titles, tags and message
    counts instead of validating every record (opening a session validates it)."""
    agent = _agent(agent_dir)
    wanted = os.path.abspath(cwd) if cwd is not None else None
    infos = []
    for path in iter_session_files(agent, wanted):
        info = _summarize(path)
        if info is None:
            continue  # deleted meanwhile
        if wanted is not None and info.cwd is not None and str(info.cwd) != wanted:
            continue  # another directory with the same project key
        infos.append(info)
    infos.sort(key=lambda i: (i.modified_at, i.session_id), reverse=True)
    return infos


def get_session_info(session_id: str, *, agent_dir: Path | str | None = None,
                     cwd: Path | str | None = None) -> SessionInfo | None:
    """The listing entry of one session, or None if there is no such session."""
    path = _find(session_id, agent_dir, cwd)
    return _summarize(path) if path is not None else None


def get_session_messages(
    session_id: str, limit: int | None = None, offset: int = 0, *,
    agent_dir: Path | str | None = None, cwd: Path | str | None = None,
) -> list[Message]:
    """The conversation of a session for people: every message of its active branch,
    compactions shown as their summaries (``[]`` if there is no such session). The file is
    validated; a damaged one raises :class:`TranscriptError`."""
    return [message for _, message in get_session_entries(
        session_id, limit, offset, agent_dir=agent_dir, cwd=cwd)]


def get_session_entries(
    session_id: str, limit: int | None = None, offset: int = 0, *,
    agent_dir: Path | str | None = None, cwd: Path | str | None = None,
) -> list[tuple[str, Message]]:
    """:func:`get_session_messages` with each message's record uuid."""
    if offset < 0 or (limit is not None and limit < 0):
        raise UsageError(f"offset and limit must not be negative (got {offset}, {limit})")
    path = _find(session_id, agent_dir, cwd)
    if path is None:
        return []
    owner = open_owner(path)
    if owner is not None:
        entries = owner.history_entries()
    else:
        transcript = read_transcript(path)
        entries = history.history_entries(
            history.active_branch(transcript.records, transcript.linear))
    return entries[offset:] if limit is None else entries[offset:offset + limit]


# -------------------------------------------------------------------------------- changing


def rename_session(session_id: str, title: str, *, agent_dir: Path | str | None = None,
                   cwd: Path | str | None = None) -> None:
    """Set a session's title (a ``title`` record; the last one wins)."""
    if not isinstance(title, str) or not title.strip():
        raise UsageError("a session title must be a non-empty string")
    _change(session_id, agent_dir, cwd, "rename", lambda m: m.set_title(title),
            refuse_running=True)


def tag_session(session_id: str, tags: Iterable[str], *, agent_dir: Path | str | None = None,
                cwd: Path | str | None = None) -> None:
    """Replace a session's tags (a ``tag`` record with the whole list; ``[]`` clears them).
    Allowed while the session runs in this process: its owner appends the record."""
    tags = list(tags)
    if not all(isinstance(t, str) and t.strip() for t in tags):
        raise UsageError(f"tags must be non-empty strings, got {tags!r}")
    _change(session_id, agent_dir, cwd, "tag", lambda m: m.set_tags(tags), refuse_running=False)


def delete_session(session_id: str, *, agent_dir: Path | str | None = None,
                   cwd: Path | str | None = None) -> None:
    """Delete a session's file, its sub-agents' transcripts and its spill folder; a missing
    session is not an error."""
    from ..fs.spill import remove_spill_folder, spill_folder

    path = _find(session_id, agent_dir, cwd)
    if path is None:
        remove_spill_folder(spill_folder(_agent(agent_dir), check_session_id(session_id)))
        return
    owner = open_owner(path)
    if owner is not None:
        state = "running" if owner.running else "open"
        raise SessionBusyError(f"session {session_id} is {state} in this process; close it "
                               "before deleting it")
    lock = FileLock.acquire(path)
    try:
        _remove_subagents(path)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        remove_spill_folder(spill_folder(_agent(agent_dir), check_session_id(session_id)))
    finally:
        lock.release()


def fork_session(session_id: str, up_to: str | None = None, *,
                 agent_dir: Path | str | None = None, cwd: Path | str | None = None,
                 new_id: str | None = None) -> str:
    """Copy a session's history, up to and including record ``up_to`` (default: all of it),
    into a new session beside it; returns the new session's id (``new_id`` if given: it must
    not name the source or any saved session).

    The copy gets new record uuids, its own session id, a header naming where it came from
    (``forkedFrom``), and new tool call ids (consistently across assistant tool calls,
    ``tool_use``, ``tool_result`` and the sub-agent records). The sub-agents started in the
    copied part are copied too (their transcripts read and validated first), linked to the
    fork. Timestamps and unknown fields are kept. The spilled tool output the copied results
    point at is copied into the fork's own spill folder (and the results point there). A call
    left without result at the cut is closed as interrupted when the fork is first opened."""
    path = _find(session_id, agent_dir, cwd)
    if path is None:
        raise not_found(session_id, agent_dir)
    if new_id is not None:
        new_id = check_session_id(new_id)
        if new_id == check_session_id(session_id):
            raise UsageError(f"a fork never reuses the id of the session it copies "
                             f"({session_id}); give another id, or none for a new one")
        if _find(new_id, agent_dir, None) is not None:
            raise SessionExistsError(f"cannot fork into session id {new_id}: a session with "
                                     "that id exists already; give another id, or none for a "
                                     "new one")
    owner = open_owner(path)
    if owner is not None:
        records: Sequence[Record] = owner.records
        if owner.running and up_to in (None, owner.leaf_uuid):
            raise SessionBusyError(f"session {session_id} is running in this process; fork it "
                                   "from an earlier record (up_to), or after the run")
    else:
        records = read_transcript(path).records
    target = up_to if up_to is not None else records[-1].uuid
    by_uuid = {r.uuid: r for r in records}
    if target not in by_uuid:
        raise SessionNotFoundError(f"session {session_id} has no record {up_to!r} to fork at")
    branch = _ancestors(by_uuid, target)
    header = branch[0]
    assert isinstance(header, HeaderRecord)
    children = _subagent_transcripts(path, branch)  # read (and validated) before any write
    new_id = new_id or new_session_id()
    new_path = path.parent / f"{new_id}.jsonl"
    origin = ForkOrigin(session_id=header.session_id, uuid=target)
    fork = SessionManager.create(header.cwd, session_id=new_id, path=new_path,
                                 forked_from=origin)
    agent = _agent(agent_dir)
    try:
        remap = _Remap(_fork_spill_files(agent, header.session_id, new_id, branch))
        for record in branch[1:]:
            if isinstance(record, CustomRecord) and record.namespace == CHECKPOINT_NAMESPACE:
                continue  # a fork starts with no file checkpoints
            copy = fork._copy(record, **remap.changes(record))
            remap.uuids[record.uuid] = copy.uuid
        for name, records in children.items():
            _copy_subagent(records, subagents_folder(new_path) / name, new_id, remap)
        fork.close()
    except BaseException:
        from ..fs.spill import remove_spill_folder, spill_folder

        fork.close()
        _remove_subagents(new_path)
        new_path.unlink(missing_ok=True)
        remove_spill_folder(spill_folder(agent, new_id))
        raise
    return new_id


def _fork_spill_files(agent: Path, source_id: str, new_id: str, branch: Sequence[Record]
                      ) -> dict[str, str]:
    """The source's spilled tool output that the copied results point at, copied into the
    fork's own spill folder (the fork may read only its own; the source's goes when it is
    deleted). Returns old path -> new path for each file copied."""
    import re

    from ..fs.spill import copy_spill_files, spill_folder

    old, new = spill_folder(agent, source_id), spill_folder(agent, new_id)
    pattern = re.compile(re.escape(str(old)) + r"/([A-Za-z0-9_.-]+\.log)")
    names: set[str] = set()
    for record in branch:
        if isinstance(record, ToolResultRecord):
            names.update(m.group(1) for text in _result_strings(record.message)
                         for m in pattern.finditer(text))
    copied = copy_spill_files(old, new, sorted(names)) if names else set()
    return {f"{old}/{name}": f"{new}/{name}" for name in copied}


def _result_strings(message: ToolResultMessage) -> list[str]:
    texts = [c.text for c in message.content if isinstance(c, TextContent)]
    return texts + [v for v in (message.details or {}).values() if isinstance(v, str)]


# ------------------------------------------------------------------------------- internals


def _subagent_transcripts(session_file: Path, branch: Sequence[Record]
                          ) -> dict[str, Sequence[Record]]:
    """The records of each sub-agent started in ``branch`` whose transcript exists, by file
    name (a damaged one raises, so a fork never copies half a tree)."""
    out: dict[str, Sequence[Record]] = {}
    for record in branch:
        data = record.data if isinstance(record, CustomRecord) and \
            record.namespace == SUBAGENT_NAMESPACE else None
        if not isinstance(data, dict) or data.get("event") != "start":
            continue
        agent_id = data.get("agent_id")
        if not is_agent_id(agent_id):
            continue
        child = subagents_folder(session_file) / f"agent-{agent_id}.jsonl"
        if child.is_file():
            out[child.name] = read_transcript(child).records
    return out


def _copy_subagent(records: Sequence[Record], target: Path, parent_id: str,
                   parent_remap: _Remap) -> None:
    """A sub-agent's transcript copied for a fork of its parent: new record uuids, its link
    naming the fork and the fork's id of the call that started it."""
    header = records[0]
    assert isinstance(header, HeaderRecord)
    child = SessionManager.create(header.cwd, session_id=header.session_id, path=target)
    try:
        remap = _Remap()
        for record in records[1:]:
            changes = remap.changes(record)
            data = record.data if isinstance(record, CustomRecord) and \
                record.namespace == SUBAGENT_NAMESPACE else None
            if isinstance(data, dict) and data.get("event") == "link":
                call = data.get("tool_call_id")
                changes["data"] = {**data, "parent_session_id": parent_id, "tool_call_id":
                                   parent_remap.call(call) if call else call}
            copy = child._copy(record, **changes)
            remap.uuids[record.uuid] = copy.uuid
    finally:
        child.close()


def _remove_subagents(session_file: Path) -> None:
    """The sub-agent transcripts of a session being deleted, and their folders when empty."""
    import shutil

    from .paths import subagents_folder

    folder = subagents_folder(session_file)
    shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):
        folder.parent.rmdir()  # <id>/, unless something else lives there


def _agent(agent_dir: Path | str | None) -> Path:
    from .paths import agent_dir as default

    return Path(agent_dir) if agent_dir is not None else default()


def _find(session_id: str, agent_dir: Path | str | None, cwd: Path | str | None) -> Path | None:
    """A session's file by id only (helpers never take paths: ids are checked UUIDs)."""
    return find_session(check_session_id(session_id), _agent(agent_dir), cwd)


def _change(session_id: str, agent_dir: Path | str | None, cwd: Path | str | None,
            action: str, change: Callable[[SessionManager], object],
            refuse_running: bool) -> None:
    path = _find(session_id, agent_dir, cwd)
    if path is None:
        raise not_found(session_id, agent_dir)
    owner = open_owner(path)
    if owner is not None:
        if owner.running and refuse_running:
            raise SessionBusyError(f"cannot {action} session {session_id} while it is running "
                                   "in this process; try again after the run")
        change(owner)
        if not owner.running:
            owner.sync()
        return
    with SessionManager.open(path, recover=False) as manager:
        change(manager)


def _ancestors(by_uuid: dict[str, Record], uuid: str) -> list[Record]:
    chain = []
    current: Record | None = by_uuid[uuid]
    while current is not None:
        chain.append(current)
        current = by_uuid.get(current.parent_uuid) if current.parent_uuid else None
    chain.reverse()
    return chain


class _Remap:
    """New tool call ids (same prefix style, e.g. ``toolu_``) and record uuids for a fork, and
    the spill files' new paths in tool results."""

    def __init__(self, paths: Mapping[str, str] | None = None) -> None:
        self.calls: dict[str, str] = {}
        self.uuids: dict[str, str] = {}
        self.paths = dict(paths or {})

    def _moved(self, text: str) -> str:
        for old, new in self.paths.items():
            text = text.replace(old, new)
        return text

    def result(self, message: ToolResultMessage, call_id: str) -> ToolResultMessage:
        if not self.paths:
            return attrs.evolve(message, call_id=call_id)
        content = tuple(attrs.evolve(c, text=self._moved(c.text))
                        if isinstance(c, TextContent) else c for c in message.content)
        details = None if message.details is None else {
            k: self._moved(v) if isinstance(v, str) else v for k, v in message.details.items()}
        return attrs.evolve(message, call_id=call_id, content=content, details=details)

    def call(self, old: str) -> str:
        new = self.calls.get(old)
        if new is None:
            prefix, sep, _ = old.partition("_")
            prefix = prefix + "_" if sep and prefix.isalpha() else "call_"
            new = self.calls[old] = prefix + new_session_id().replace("-", "")[:24]
        return new

    def changes(self, record: Record) -> dict[str, Any]:
        if isinstance(record, AssistantRecord):
            content = tuple(attrs.evolve(c, id=self.call(c.id))
                            if isinstance(c, ToolCallContent) else c
                            for c in record.message.content)
            return {"message": attrs.evolve(record.message, content=content)}
        if isinstance(record, ToolUseRecord):
            return {"call_id": self.call(record.call_id)}
        if isinstance(record, ToolResultRecord):
            new = self.call(record.call_id)
            return {"call_id": new, "message": self.result(record.message, new)}
        if isinstance(record, CompactionRecord) and record.first_kept_uuid is not None:
            return {"first_kept_uuid": self.uuids.get(record.first_kept_uuid)}
        if isinstance(record, CustomRecord) and record.namespace == SUBAGENT_NAMESPACE and \
                isinstance(record.data, dict) and record.data.get("tool_call_id"):
            return {"data": {**record.data,
                             "tool_call_id": self.call(record.data["tool_call_id"])}}
        return {}


def _iso(timestamp: float) -> str:
    moment = datetime.fromtimestamp(timestamp, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _summarize(path: Path) -> SessionInfo | None:
    try:
        modified = _iso(path.stat().st_mtime)
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return _broken(path, _iso(0), f"cannot read {path}: {exc}")
    try:
        info = _scan(path, data, modified)
    except (ValueError, TypeError, KeyError, AttributeError, RecordError):
        info = None  # not the shape this writer produces: read it properly
    return info if info is not None else _summarize_full(path, data, modified)


def _scan(path: Path, data: bytes, modified: str) -> SessionInfo | None:
    """Listing facts from line prefixes (every line this writer makes starts with
    ``{"type":"<type>"``), parsing only the header, the last title and tag lines and the
    first user line. None when the file does not have that shape."""
    if not data.startswith(b'{"type":"header"'):
        return None
    end = data.rfind(b"\n") + 1
    if end < len(data):
        try:
            json.loads(data[end:])
            data, end = data + b"\n", len(data) + 1
        except ValueError:
            pass  # a torn final line: ignored, like the reader does
    header = json.loads(data[: data.index(b"\n")])
    if header.get("version") != FORMAT_VERSION:
        return None
    count = sum(data.count(prefix, 0, end) for prefix in _MESSAGE_LINES)
    title = _line(data, b'\n{"type":"title"', end, last=True)
    tags = _line(data, b'\n{"type":"tag"', end, last=True)
    first = _line(data, b'\n{"type":"user"', end, last=False)
    prompt = None
    if first is not None:
        from .codec import message_from_json

        message = message_from_json(first["message"])
        assert isinstance(message, UserMessage)
        prompt = _cut(message.text_content)
    origin = header.get("forkedFrom")
    title_text = title["title"] if title is not None else None
    tag_list = tuple(tags["tags"]) if tags is not None else ()
    if not isinstance(title_text, str | None) or not all(isinstance(t, str) for t in tag_list):
        return None
    return SessionInfo(
        session_id=header["sessionId"], path=path, cwd=Path(header["cwd"]), title=title_text,
        tags=tag_list, created_at=header["createdAt"], modified_at=modified,
        message_count=count, first_prompt=prompt,
        forked_from=origin.get("sessionId") if isinstance(origin, dict) else None)


def _line(data: bytes, prefix: bytes, end: int, *, last: bool) -> Any:
    start = data.rfind(prefix, 0, end) if last else data.find(prefix, 0, end)
    if start < 0:
        return None
    stop = data.index(b"\n", start + 1)
    return json.loads(data[start + 1:stop])


def _summarize_full(path: Path, data: bytes, modified: str) -> SessionInfo:
    from .reader import parse_transcript

    try:
        transcript = parse_transcript(data, path)
    except TranscriptError as exc:
        return _broken(path, modified, str(exc))
    records = transcript.records
    header = transcript.header
    first = next((r for r in records if isinstance(r, UserRecord)), None)
    return SessionInfo(
        session_id=header.session_id, path=path, cwd=Path(header.cwd),
        title=history.title(records), tags=history.tags(records), created_at=header.created_at,
        modified_at=modified,
        message_count=sum(1 for r in records if record_message(r) is not None),
        first_prompt=_cut(first.message.text_content) if first is not None else None,
        forked_from=header.forked_from.session_id if header.forked_from else None)


def _broken(path: Path, modified: str, problem: str) -> SessionInfo:
    return SessionInfo(session_id=path.name.removesuffix(".jsonl"), path=path, cwd=None,
                       title=None, tags=(), created_at=None, modified_at=modified,
                       message_count=0, first_prompt=None, problem=problem)


def _cut(text: str) -> str:
    return text if len(text) <= FIRST_PROMPT_LIMIT else text[: FIRST_PROMPT_LIMIT - 1] + "…"
