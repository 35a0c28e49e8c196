"""SessionManager: the one writable owner of a session (a JSONL file, or memory only).

Writes are append-only: each record is one ``write`` of one line to a file opened with
``O_APPEND`` (so it is flushed as soon as it returns). ``fsync`` happens in :meth:`sync` (the
session calls it at the end of each turn) and in :meth:`close`; ``fsync="record"`` also syncs
after every record. The owner holds ``<file>.lock`` for as long as it is open, repairs a torn
final line before its first write, and on open closes tool calls a crash left unfinished by
appending an "interrupted" result (the model is told; the tool is not re-run).

Owners open in this process are registered (:mod:`.owners`), so the session helpers can
refuse to touch a running session and append through an idle owner instead of opening a second
one.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import attrs

from ..errors import UsageError
from ..fs.durable import fsync_dir, write_all
from ..providers.messages import Message, TextContent, ToolResultMessage
from ..support.listview import ListView
from . import history
from .codec import build_record, decode_record, dump_line, encode_record
from .errors import RecordError, SessionExistsError, TranscriptError
from .lock import FileLock
from .owners import OwnerHandles, acquire, register_owner
from .paths import agent_dir as default_agent_dir
from .paths import check_session_id, locate, new_session_id, not_found, session_path
from .reader import Transcript, check_record, read_transcript
from .records import (
    FORMAT_VERSION,
    RECORD_TYPES,
    CompactionRecord,
    CustomRecord,
    ForkOrigin,
    HeaderRecord,
    Record,
    TagRecord,
    TitleRecord,
    ToolUseRecord,
    WarningRecord,
    message_fields,
    new_uuid,
    now,
)

if TYPE_CHECKING:
    from ..support.redaction import Redactor

Fsync = Literal["turn", "record"]
FSYNC_POLICIES = ("turn", "record")

INTERRUPTED_TEXT = ("the tool call was interrupted (the session ended before it finished); "
                    "it was not re-run")
NOT_STARTED_TEXT = ("the tool call was not run (the session ended before it started); "
                    "it was not run on resume either")


#: per worker thread: ``deferred`` is a list while :mod:`.offloop` runs a write in it
worker = threading.local()


class SessionManager:
    """Records of one session: appended (and persisted, unless in memory) and read back as the
    model's context. Make one with :meth:`create`, :meth:`open` or :meth:`in_memory`."""

    #: Set by the session while a run is in progress: helpers refuse to rename, delete or fork
    #: the tail of a running session.
    running: bool

    def __init__(
        self, transcript: Transcript, *, path: Path | None = None,
        handles: OwnerHandles | None = None, fsync: Fsync = "turn", new_file: bool = False,
    ) -> None:
        _check_fsync(fsync)
        self.running = False
        #: set by the session: keys are replaced in every record before it is written
        self.redactor: Redactor | None = None
        #: called with each record and its line once the line is written (the session store
        #: mirror hangs here: a record is mirrored only after it is persisted locally)
        self.on_commit: Callable[[Record, bytes], None] | None = None
        self.path = path
        self.warnings: list[str] = list(transcript.warnings)
        self._header = transcript.header
        self._records: list[Record] = list(transcript.records)
        #: the active branch: the records list itself when every record's parent is the one
        #: before it (appends extend both), so a long linear session holds one list, not two
        self._branch = (self._records if transcript.linear
                        else history.active_branch(self._records))
        self._uuids = transcript.uuids or {r.uuid for r in self._records}
        #: records a compaction took out of the context, let go (see _release_compacted):
        #: how many the file holds that memory does not, and how many of those are kept
        #: anyway, after the header, for the session's state (``_carried``)
        self._released = 0
        self._carried = 0
        self._fsync_each = fsync == "record"
        self._handles = handles
        self._closed = False
        self._unsynced = False
        self._sync_dir = new_file
        self._new_file = new_file
        self._valid_size = transcript.valid_size
        self._torn = transcript.size > transcript.valid_size
        self._needs_newline = transcript.needs_newline
        self._finalizer = (weakref.finalize(self, handles.release) if handles is not None
                           else None)
        # one write at a time: :mod:`.offloop` runs blocking writes in a worker thread while
        # a plugin may append from the loop (re-entrant: a subclass's _append calls this one's)
        self._lock = threading.RLock()
        self._order: Any = None  # offloop: the event set when the last write asked is done
        self._thread_slot: Any = None  # offloop: this session's worker-thread limiter
        self._release_compacted()

    # ----------------------------------------------------------------------- making one

    @classmethod
    def create(
        cls, cwd: Path | str, *, agent_dir: Path | str | None = None,
        session_id: str | None = None, path: Path | str | None = None, fsync: Fsync = "turn",
        forked_from: ForkOrigin | None = None,
    ) -> SessionManager:
        """A new session file (``<agent dir>/sessions/<project key>/<id>.jsonl`` unless
        ``path`` is given), locked, with its header written."""
        _check_fsync(fsync)
        sid = check_session_id(session_id) if session_id is not None else new_session_id()
        cwd = Path(os.path.abspath(cwd))
        agent = Path(agent_dir) if agent_dir is not None else default_agent_dir()
        target = Path(path) if path is not None else session_path(sid, cwd, agent)
        exists = SessionExistsError(f"session file {target} already exists; resume it, or "
                                    "choose another session id")
        with _os_errors(target, "create the session folder"):
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if target.exists():
            raise exists
        header = _header(sid, cwd, forked_from)
        line = dump_line(encode_record(header))
        with _os_errors(target, "lock the session file"):
            lock = acquire(target)
        try:
            with _os_errors(target, "create the session file"):
                try:
                    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL
                                 | os.O_CLOEXEC, 0o600)
                except FileExistsError:
                    raise exists from None
                try:
                    write_all(fd, line)
                except BaseException:
                    os.close(fd)
                    os.unlink(target)
                    raise
        except BaseException:
            lock.release()
            raise
        transcript = Transcript(target, (header,), valid_size=len(line), size=len(line))
        manager = cls._register(transcript, target, fd, lock, fsync, new_file=True)
        if fsync == "record":
            manager._unsynced = True
            manager.sync()  # the header and the folder entry, before any record is trusted
        return manager

    @classmethod
    def open(
        cls, session: str | Path, *, agent_dir: Path | str | None = None,
        cwd: Path | str | None = None, fsync: Fsync = "turn", recover: bool = True,
    ) -> SessionManager:
        """Open an existing session for writing: by id (looked up under ``agent_dir``, in
        ``cwd``'s project or any project) or by path. Validates the whole file; with ``recover``
        closes tool calls left unfinished by a crash."""
        _check_fsync(fsync)
        target = locate(session, agent_dir=agent_dir, cwd=cwd)
        if target is None:
            raise not_found(session, agent_dir)
        with _os_errors(target, "lock the session file"):
            lock = acquire(target)
        try:
            with _os_errors(target, "read the session file"):
                transcript = read_transcript(target)
            with _os_errors(target, "open the session file for writing"):
                fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        except BaseException:
            lock.release()
            raise
        manager = cls._register(transcript, target, fd, lock, fsync)
        if recover:
            try:
                manager.recover()
            except BaseException:
                manager.close()
                raise
        return manager

    @classmethod
    def in_memory(cls, cwd: Path | str, *, session_id: str | None = None) -> SessionManager:
        """The same API with no file and no lock: nothing is persisted."""
        sid = check_session_id(session_id) if session_id is not None else new_session_id()
        header = _header(sid, Path(os.path.abspath(cwd)), None)
        return cls(Transcript(None, (header,)))

    @classmethod
    def _register(cls, transcript: Transcript, path: Path, fd: int, lock: FileLock,
                  fsync: Fsync, new_file: bool = False) -> SessionManager:
        handles = OwnerHandles(fd, lock, path)
        try:
            manager = cls(transcript, path=path, handles=handles, fsync=fsync,
                          new_file=new_file)
        except BaseException:
            handles.release()
            raise
        register_owner(handles, manager)
        return manager

    # ------------------------------------------------------------------------- state

    @property
    def session_id(self) -> str:
        return self._header.session_id

    @property
    def cwd(self) -> Path:
        return Path(self._header.cwd)

    @property
    def header(self) -> HeaderRecord:
        return self._header

    @property
    def fsync(self) -> Fsync:
        """The fsync policy (a sub-agent's transcript gets its parent's)."""
        return "record" if self._fsync_each else "turn"

    @property
    def writes_block(self) -> bool:
        """True when one append waits on something slow (an fsync per record; a database's
        round trip in native storage): the loop runs such writes in a worker thread."""
        return self._fsync_each

    @property
    def sync_pending(self) -> bool:
        """True when :meth:`sync` has an fsync to do."""
        handles = self._handles
        return handles is not None and handles.fd is not None and (
            self._unsynced or self._sync_dir)

    @property
    def in_memory_only(self) -> bool:
        return self.path is None

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def records(self) -> Sequence[Record]:
        """Every record in file order, as they are now: a copy-free view, or, once a
        compaction let older records go, a list with those read back from the file (or
        the store)."""
        return _RecordsView(self._every_record() if self._released else self._records)

    @property
    def held_records(self) -> Sequence[Record]:
        """The records held in memory, in file order, without reading anything: every
        record, or, once a compaction let older ones go, the header, the state records kept
        and the context's (what a resume's housekeeping looks through: a killed run's calls
        are after the last compaction)."""
        return _RecordsView(self._records)

    @property
    def leaf_uuid(self) -> str:
        """The uuid of the last record: the parent of the next one."""
        return self._branch[-1].uuid

    def context_entries(self) -> list[tuple[str, Message]]:
        """The model's context as (record uuid, message) pairs."""
        return history.context_entries(self._branch)

    def messages(self) -> list[Message]:
        """The model's context: after the last compaction, its summary and the kept messages."""
        return history.context_messages(self._branch)

    def history(self) -> list[Message]:
        """Every message of the conversation, compactions shown as their summaries."""
        return history.history_messages(self._whole_branch())

    def history_entries(self) -> list[tuple[str, Message]]:
        """:meth:`history` with each message's record uuid."""
        return history.history_entries(self._whole_branch())

    def last_model(self) -> tuple[str, str] | None:
        return history.last_model(self._branch)

    def last_reasoning_level(self) -> str | None:
        return history.last_reasoning_level(self._branch)

    def latest_snapshot(self) -> Mapping[str, Any] | None:
        return history.latest_snapshot(self._branch)

    @property
    def title(self) -> str | None:
        return history.title(self._records)

    @property
    def tags(self) -> tuple[str, ...]:
        return history.tags(self._records)

    # ------------------------------------------------------------------------ writing

    def append(self, type: str, **fields: Any) -> Record:
        """Append a record of ``type`` with ``fields`` (attribute names: ``call_id``, not
        ``callId``); the envelope is filled in. Raises RecordError for a bad record."""
        cls = RECORD_TYPES.get(type)
        if cls is None or cls is HeaderRecord:
            known = ", ".join(t for t in RECORD_TYPES if t != "header")
            raise RecordError(f"cannot append a {type!r} record (record types: {known})")
        return self._append(cls, fields)

    def append_message(self, message: Message) -> Record:
        """Append a user, assistant, tool result or context message."""
        cls, fields = message_fields(message)
        return self._append(cls, fields)

    def append_tool_use(self, call_id: str, name: str, arguments: Mapping[str, Any]) -> Record:
        """Journal a call before it runs (see :meth:`recover`)."""
        return self._append(ToolUseRecord, {"call_id": call_id, "name": name,
                                            "arguments": dict(arguments)})

    def append_compaction(
        self, summary: str, first_kept_uuid: str | None, tokens_before: int, tokens_after: int,
        read_files: Iterable[str] = (), modified_files: Iterable[str] = (),
        migration: str | None = None,
    ) -> Record:
        fields = {"summary": summary, "first_kept_uuid": first_kept_uuid,
                  "tokens_before": tokens_before, "tokens_after": tokens_after,
                  "read_files": tuple(read_files), "modified_files": tuple(modified_files)}
        if migration is not None:  # a hand-off's: the people's history reads it
            fields["migration"] = migration
        return self._append(CompactionRecord, fields)

    def append_custom(self, namespace: str, data: Any = None) -> Record:
        """Plugin data under ``namespace`` (``plugin.name`` or ``name``)."""
        return self._append(CustomRecord, {"namespace": namespace, "data": data})

    def set_title(self, title: str) -> Record:
        title = title.strip() if isinstance(title, str) else title
        if not title or not isinstance(title, str):
            raise RecordError("a session title must be a non-empty string")
        return self._append(TitleRecord, {"title": title})

    def set_tags(self, tags: Iterable[str]) -> Record:
        """Replace the session's tags (an empty list removes them all)."""
        tags = tuple(dict.fromkeys(tags))
        if not all(isinstance(t, str) and t.strip() for t in tags):
            raise RecordError(f"tags must be non-empty strings, got {list(tags)!r}")
        return self._append(TagRecord, {"tags": tags})

    def recover(self) -> list[Record]:
        """Close every tool call of the context left without a result: an error result saying
        it was interrupted (journaled as started) or not run. Returns the records written."""
        written = []
        unfinished = history.unfinished_calls(self._branch)
        for call_id, name, started in unfinished:
            text = INTERRUPTED_TEXT if started else NOT_STARTED_TEXT
            message = ToolResultMessage(call_id, name, (TextContent(text),), True,
                                        {"interrupted": True})
            written.append(self.append_message(message))
        if unfinished:
            names = ", ".join(f"{name} ({cid})" for cid, name, _ in unfinished)
            self.warnings.append(f"{self.path}: closed {len(unfinished)} tool call(s) left "
                                 f"unfinished when the session last ended: {names}; they "
                                 "were not re-run")
            self.sync()
        return written

    def sync(self) -> None:
        """Make everything appended so far durable (fsync); cheap when nothing changed."""
        with self._lock:
            self._sync()

    def _sync(self) -> None:
        handles = self._handles
        if handles is None or handles.fd is None:
            return
        if self._unsynced:
            with _os_errors(self.path, "sync the session file to disk"):
                os.fsync(handles.fd)
            self._unsynced = False
        if self._sync_dir and self.path is not None:
            self._sync_dir = False
            fsync_dir(self.path.parent)

    def close(self) -> None:
        """Sync, release the file and its lock. Idempotent; appending afterwards is an error."""
        if self._closed:
            return
        empty = self._new_file and self.path is not None and len(self._records) == 1
        try:
            if empty:  # created and never used: leave no empty session behind
                with contextlib.suppress(OSError):
                    os.unlink(self.path)  # type: ignore[arg-type]
            else:
                self.sync()
        finally:
            self._closed = True
            if self._finalizer is not None:
                self._finalizer()

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self.path if self.path is not None else "memory"
        count = self._released + len(self._records) - self._carried
        return f"<SessionManager {self.session_id} {where} records={count}>"

    # ---------------------------------------------------------------------- internals

    def _append(self, cls: type[Record], fields: Mapping[str, Any],
                envelope: Mapping[str, Any] | None = None) -> Record:
        with self._lock:
            if self._closed:
                raise UsageError(f"session {self.session_id} was closed; open it again to "
                                 "append")
            if self._torn or self._needs_newline:
                self._repair()
            if cls is CompactionRecord and self._released:
                self._hold_again(fields.get("first_kept_uuid"))
            return self._write(*self._make(cls, fields, envelope))

    def _make(self, cls: type[Record], fields: Mapping[str, Any],
              envelope: Mapping[str, Any] | None) -> tuple[Record, bytes]:
        """The record to append and its line, checked exactly as a reader will check it."""
        base = {"uuid": new_uuid(), "parent_uuid": self.leaf_uuid,
                "session_id": self.session_id, "timestamp": now()}
        if envelope:
            base.update(envelope)
        record = build_record(cls, {**fields, **base})
        data = encode_record(record)
        if self.redactor:
            data = self.redactor.value(data)
        try:
            record = decode_record(data, cls)
        except ValueError as exc:
            raise RecordError(f"invalid {cls.TYPE!r} record: {exc}") from None
        problem = check_record(record, self._uuids)
        if problem:
            raise RecordError(problem)
        return record, dump_line(data)

    def _write(self, record: Record, line: bytes) -> Record:
        handles = self._handles
        if handles is not None:
            assert handles.fd is not None
            try:
                write_all(handles.fd, line)
            except OSError as exc:
                self._torn = True  # part of the line may be on disk: cut it before the next
                raise TranscriptError(f"could not append a {record.TYPE!r} record: {exc}",
                                      path=self.path, hint="the record was not saved; check "
                                      "free disk space and permissions") from None
            self._valid_size += len(line)
            if self._fsync_each:
                os.fsync(handles.fd)
            else:
                self._unsynced = True
        self._records.append(record)
        if self._branch is not self._records:
            self._branch.append(record)
        self._uuids.add(record.uuid)
        if self.on_commit is not None:
            deferred = getattr(worker, "deferred", None)
            if deferred is not None:  # in offloop's thread: the callback runs on the loop
                deferred.append((self.on_commit, record, line))
            else:
                self.on_commit(record, line)
        if type(record) is CompactionRecord:
            self._release_compacted()
        return record

    def _release_compacted(self) -> None:
        """Let go of the records the last compaction took out of the model's context, in a
        session with a file and one branch: the file keeps them, :attr:`records` and
        :meth:`history` read them back, and the latest record of each kind the session's
        state is answered from (model, reasoning level, snapshot, title, tags) stays, after
        the header. A session compacted again and again then holds about one context."""
        records = self._records
        if not self._reads_back or self._branch is not records:
            return
        cut = history.release_point(records)
        if cut <= 1 + self._carried:
            return
        carried = history.state_records(records[1:cut])
        self._released += cut - 1 - self._carried
        self._carried = len(carried)
        # a new list: a view handed out before keeps what it saw
        self._records = self._branch = [records[0], *carried, *records[cut:]]

    def _hold_again(self, uuid: Any) -> None:
        """Before a compaction that keeps from a record already let go (a plugin may name
        any earlier record; the host's own compactions keep from the context), read every
        record back into memory, so the context starts where a reader of the file will
        start it."""
        if uuid not in self._uuids or any(r.uuid == uuid for r in self._records):
            return
        self._records = self._branch = self._every_record()
        self._released = self._carried = 0

    def _whole_branch(self) -> list[Record]:
        """The active branch with any released records read back."""
        return self._every_record() if self._released else self._branch

    @property
    def _reads_back(self) -> bool:
        """Whether records let go can be read back (from the file; a store's owner: from
        the store)."""
        return self.path is not None

    def _stored_records(self) -> Sequence[Record]:
        """Every record as persisted (records may be appended meanwhile)."""
        assert self.path is not None
        with _os_errors(self.path, "read back the session's compacted records"):
            return read_transcript(self.path).records

    def _every_record(self) -> list[Record]:
        """Every record: the released ones read back, then those in memory (as they were
        when asked: the read does not hold up appends). This owner alone writes the session
        (it holds the lock or the lease), so a file or store that does not start with what
        was released and go on with what is in memory was changed by someone else."""
        with self._lock:
            kept = self._records[1 + self._carried:]
            released = self._released
        stored = self._stored_records()
        if len(stored) < 1 + released + len(kept) or stored[0].uuid != self._header.uuid \
                or (kept and stored[1 + released].uuid != kept[0].uuid) \
                or (kept and stored[released + len(kept)].uuid != kept[-1].uuid):
            raise TranscriptError(
                f"session {self.session_id} was changed by something else while this owner "
                f"held it ({len(stored)} records stored, {1 + released + len(kept)} "
                "written)", path=self.path,
                hint="nothing was lost from memory since the last compaction; close the "
                "session, check its file or store (a copy may have been restored over it) "
                "and resume it")
        return [*stored[:1 + released], *kept]

    def _repair(self) -> None:
        """Cut a torn final line (or end the last line) before writing after it."""
        handles = self._handles
        assert handles is not None and handles.fd is not None
        if self._needs_newline:
            write_all(handles.fd, b"\n")
            self._valid_size += 1
            self._needs_newline = False
            return
        size = os.fstat(handles.fd).st_size
        os.ftruncate(handles.fd, self._valid_size)
        self._torn = False
        self._unsynced = True
        if size > self._valid_size:
            self._write(*self._make(WarningRecord, {
                "code": "torn_line_removed",
                "text": f"removed a torn final line ({size - self._valid_size} bytes) left by "
                        "an interrupted write"}, None))

    def _copy(self, record: Record, **changes: Any) -> Record:
        """Append a copy of another session's record (fork): fields, extras and timestamp
        kept; uuid, parent and session id are this session's."""
        fields = {a: getattr(record, a) for a in _field_names(type(record))}
        fields.update(changes)
        envelope = {"timestamp": record.timestamp, "extra": dict(record.extra)}
        return self._append(type(record), fields, envelope)


class _RecordsView(ListView[Record]):
    """Read-only and copy-free: later appends do not show in an existing view."""

    __slots__ = ()
    what = "record"


@contextlib.contextmanager
def _os_errors(path: Path | None, doing: str) -> Iterator[None]:
    """OSErrors as TranscriptErrors naming the file and what was being done."""
    try:
        yield
    except OSError as exc:
        raise TranscriptError(f"cannot {doing}: {exc.strerror or exc}", path=path,
                              hint="check the path, its permissions and free disk space") \
            from exc


def _check_fsync(fsync: str) -> None:
    if fsync not in FSYNC_POLICIES:
        raise UsageError(f"fsync must be one of {', '.join(FSYNC_POLICIES)}, not {fsync!r}")


def _header(session_id: str, cwd: Path, forked_from: ForkOrigin | None) -> HeaderRecord:
    stamp = now()
    return HeaderRecord(uuid=new_uuid(), parent_uuid=None, session_id=session_id,
                        timestamp=stamp, version=FORMAT_VERSION, cwd=str(cwd),
                        created_at=stamp, forked_from=forked_from)


def _field_names(cls: type[Record]) -> list[str]:
    skip = {"uuid", "parent_uuid", "session_id", "timestamp", "extra"}
    return [a.name for a in attrs.fields(cls) if a.name not in skip]


__all__ = ["INTERRUPTED_TEXT", "NOT_STARTED_TEXT", "SessionManager", "locate", "not_found"]
