"""StoreSessionManager: a session's writable owner over a :class:`~.native.TranscriptStore`.

The same API as the JSONL :class:`~.store.SessionManager` (the loop cannot tell them apart),
with the seed's ``fromStore`` rules: the owner takes the session's lease (one owner across
machines), reads lazily (the current state, then only the records from where the model's
context starts; the whole history is read a page at a time when asked for), keeps a write
barrier (after a write whose outcome is unknown, or after losing the lease, it accepts no
more), and recovers (tool calls left open by a killed worker are closed as interrupted, never
re-run). Every append is one transaction; a record is acknowledged (``on_commit``) only once
committed. The loop runs each append in a worker thread (:mod:`.offloop`), so a commit's round
trip holds only its own session. An unreachable database is waited for, up to ``reconnect_seconds``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid as uuidlib
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from .codec import decode_record, dump_line, encode_record
from .native import (
    DEFAULT_RECONNECT_SECONDS,
    ChainError,
    CurrentState,
    LeaseLostError,
    StoredRecord,
    StoreUnavailableError,
    TranscriptStore,
    TranscriptStoreError,
    WriteBarrierError,
    iter_records,
)
from .paths import check_session_id, new_session_id
from .reader import Transcript
from .records import RECORD_TYPES, ForkOrigin, HeaderRecord, Record
from .store import SessionManager, _header

__all__ = ["StoreSessionManager", "default_owner", "decode_stored"]


def default_owner() -> str:
    """This worker's name in leases: host, process and a random part (unique per run)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuidlib.uuid4().hex[:8]}"


def decode_stored(row: StoredRecord, session_id: str) -> Record:
    """A stored line as its record; a damaged one is a TranscriptStoreError naming it."""
    try:
        data = json.loads(row.line)
        cls = RECORD_TYPES[data["type"]]
        return decode_record(data, cls)
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise TranscriptStoreError(
            f"record {row.seq} ({row.uuid}) of session {session_id} cannot be read: {exc}; it "
            "was not written by this host: export what can be read, or restore the "
            "database") from None


class StoreSessionManager(SessionManager):
    """Records of one session kept in a TranscriptStore. Make one with :meth:`create_in` or
    :meth:`open_in`."""

    def __init__(self, store: TranscriptStore, state: CurrentState, transcript: Transcript,
                 lease: Any, *, reconnect_seconds: float = DEFAULT_RECONNECT_SECONDS,
                 new: bool = False) -> None:
        super().__init__(transcript)
        self.transcript_store = store
        self.state = state
        self.lease = lease
        self.reconnect_seconds = reconnect_seconds
        self._new = new
        self._barrier: str | None = None
        self._snapshot: Mapping[str, Any] | None = None
        self._stop = threading.Event()
        # the keeper holds the manager weakly: one dropped without close() stops renewing,
        # and its lease expires (it is never kept alive by its own thread)
        self._keeper = threading.Thread(target=_keep_lease, args=(weakref.ref(self), self._stop),
                                        daemon=True, name=f"zpi-lease-{state.session_id[:8]}")
        weakref.finalize(self, self._stop.set)
        self._keeper.start()

    # ----------------------------------------------------------------------- making one

    @classmethod
    def create_in(cls, store: TranscriptStore, cwd: str | os.PathLike[str], *,
                  session_id: str | None = None, owner: str | None = None,
                  forked_from: ForkOrigin | None = None, parent_session_id: str | None = None,
                  reconnect_seconds: float = DEFAULT_RECONNECT_SECONDS) -> StoreSessionManager:
        """A new session in ``store``, leased to ``owner`` (default: this process);
        ``parent_session_id``: the session whose sub-agent this is."""
        sid = check_session_id(session_id) if session_id is not None else new_session_id()
        header = _header(sid, _abspath(cwd), forked_from)
        line = dump_line(encode_record(header)).decode("ascii").rstrip("\n")
        state, lease = store.create(header, line, owner or default_owner(),
                                    parent_session_id=parent_session_id)
        return cls(store, state, Transcript(None, (header,)), lease,
                   reconnect_seconds=reconnect_seconds, new=True)

    @classmethod
    def open_in(cls, store: TranscriptStore, session_id: str, *, owner: str | None = None,
                expected: CurrentState | None = None, recover: bool = True,
                reconnect_seconds: float = DEFAULT_RECONNECT_SECONDS) -> StoreSessionManager:
        """Own and open an existing session: the lease first (SessionOwnedError while another
        worker holds it), then its state and the records of the model's context. ``expected``:
        the state the host read; a session that moved on since is a ChainError."""
        from .paths import not_found

        sid = check_session_id(session_id)
        lease = store.acquire(sid, owner or default_owner())
        try:
            state = store.current_state(sid)
            if state is None:
                raise not_found(sid, None)
            if expected is not None and expected.head_uuid != state.head_uuid:
                raise ChainError(
                    f"session {sid} moved on since its state was read (head "
                    f"{expected.head_uuid} then, {state.head_uuid} now): read the state again")
            rows = store.read(sid, from_seq=0, limit=1)  # the header alone
            header = decode_stored(rows[0], sid)
            if not isinstance(header, HeaderRecord):
                raise TranscriptStoreError(f"session {sid} does not start with its header")
            start = 1 if not state.linear else max(1, state.context_seq)
            tail = [decode_stored(r, sid) for r in iter_records(store, sid, start)]
            records = (header, *tail)
            linear = state.linear
            transcript = Transcript(None, records, linear=linear,
                                    uuids={r.uuid for r in records})
            manager = cls(store, state, transcript, lease, reconnect_seconds=reconnect_seconds)
            manager._released += start - 1  # before the context: read back when asked
        except BaseException:
            store.release(lease)
            raise
        if recover:
            try:
                manager.recover()
            except BaseException:
                manager.close()
                raise
        return manager

    # ------------------------------------------------------------------------- state

    @property
    def in_memory_only(self) -> bool:
        return False

    @property
    def writes_block(self) -> bool:
        """Always: every append is a transaction's round trip (see :mod:`.offloop`)."""
        return True

    @property
    def title(self) -> str | None:
        return self.state.title

    @property
    def tags(self) -> tuple[str, ...]:
        return self.state.tags

    def last_model(self) -> tuple[str, str] | None:
        return self.state.model

    def last_reasoning_level(self) -> str | None:
        return self.state.reasoning_level

    def latest_snapshot(self) -> Mapping[str, Any] | None:
        ref = self.state.snapshot_uuid
        if ref is None:
            return None
        if self._snapshot is None:
            row = self.transcript_store.record(self.session_id, ref)
            if row is not None:
                self._snapshot = getattr(decode_stored(row, self.session_id), "snapshot", None)
        return self._snapshot

    def all_records(self) -> list[Record]:
        """Every record of the session, read from the store a page at a time."""
        return [decode_stored(r, self.session_id)
                for r in iter_records(self.transcript_store, self.session_id)]

    @property
    def _reads_back(self) -> bool:
        return True

    def _stored_records(self) -> Sequence[Record]:
        return self.all_records()

    # ------------------------------------------------------------------------ writing

    def _append(self, cls: type[Record], fields: Mapping[str, Any],
                envelope: Mapping[str, Any] | None = None) -> Record:
        with self._lock:
            if self._barrier is not None:
                raise WriteBarrierError(
                    f"session {self.session_id} accepts no more records: {self._barrier}; "
                    "resume it (another worker may already have)")
            return super()._append(cls, fields, envelope)

    def _write(self, record: Record, line: bytes) -> Record:
        text = line.decode("ascii").rstrip("\n")
        self.state = self._commit(record, text)
        self._new = False
        return super()._write(record, line)

    def _commit(self, record: Record, text: str) -> CurrentState:
        """Append one record, waiting out an unreachable database up to the bound. A retry of
        a commit whose answer was lost finds the record already there (the store says so)."""
        deadline = time.monotonic() + self.reconnect_seconds
        pause = 0.05
        while True:
            try:
                return self.transcript_store.append(
                    self.session_id, [(record, text)], after=self.leaf_uuid, lease=self.lease)
            except StoreUnavailableError as exc:
                if time.monotonic() + pause > deadline:
                    self._barrier = f"the database was unreachable for {self.reconnect_seconds} s"
                    raise StoreUnavailableError(
                        f"could not append a {record.TYPE!r} record to session "
                        f"{self.session_id}: {exc}; waited {self.reconnect_seconds} s "
                        "(reconnect_seconds). Every record acknowledged before is kept; "
                        "resume the session when the database is back") from None
                time.sleep(pause)
                pause = min(pause * 2, 1.0)
            except (LeaseLostError, ChainError) as exc:
                self._barrier = str(exc)
                raise

    def _repair(self) -> None:  # nothing torn in a database
        self._torn = self._needs_newline = False

    def _renew(self) -> bool:
        """One renewal (False: the lease was taken over, and the write barrier closed)."""
        try:
            self.lease = self.transcript_store.renew(self.lease)
        except LeaseLostError as exc:
            self._barrier = str(exc)
            return False
        except TranscriptStoreError:
            pass  # unreachable for now: the next append waits, or says so
        return True

    def close(self) -> None:
        """Release the lease (a created session that holds only its header is removed)."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._keeper.is_alive() and self._keeper is not threading.current_thread():
            self._keeper.join()
        store = self.transcript_store
        # never raises: a database gone at the end costs a header-only session left behind
        # and a lease that expires on its own, never the caller's dispose()
        with contextlib.suppress(TranscriptStoreError):
            if self._new and len(self._records) == 1 and self._barrier is None:
                store.delete(self.session_id, lease=self.lease)
        with contextlib.suppress(TranscriptStoreError):
            store.release(self.lease)

    def subagent_manager(self, agent_id: str) -> StoreSessionManager:
        """A sub-agent's transcript: a session of its own in the same store."""
        return StoreSessionManager.create_in(self.transcript_store, self.cwd,
                                             session_id=agent_id, owner=self.lease.owner,
                                             parent_session_id=self.session_id,
                                             reconnect_seconds=self.reconnect_seconds)

    def __repr__(self) -> str:
        return (f"<StoreSessionManager {self.session_id} {self.transcript_store!r} "
                f"head={self.state.head_seq}>")


def _keep_lease(ref: weakref.ref[StoreSessionManager], stop: threading.Event) -> None:
    """Renew a manager's lease three times per lease length, so a long tool call or model
    request does not lose it."""
    manager = ref()
    if manager is None:
        return
    interval = max(manager.transcript_store.lease_seconds / 3, 0.05)
    del manager
    while not stop.wait(interval):
        manager = ref()
        if manager is None or not manager._renew():
            return
        del manager


def _abspath(cwd: str | os.PathLike[str]) -> Any:
    from pathlib import Path

    return Path(os.path.abspath(cwd))


