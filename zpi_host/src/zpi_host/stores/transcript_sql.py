"""What the SQLite and PostgreSQL transcript stores share: the schema and every transaction.

Three tables: ``zpi_native_sessions`` (one row per session: head, state as JSON, mtime),
``zpi_native_records`` (each record's exact line, keyed by session and seq, unique by uuid) and
``zpi_native_leases`` (owner, fencing token, expiry; a row is never deleted while its session
exists, so tokens only grow). An append locks the session's row, checks the lease's token and
the head, inserts, folds the state (:func:`~zpi_host.transcript.native.advance`) and updates the
row, all in one transaction. Statements are written with ``?`` placeholders; a backend gives
the transaction, its clock (epoch seconds, the database's: one clock for every worker) and
``FOR UPDATE`` where it has row locks.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ..transcript.errors import SessionExistsError
from ..transcript.native import (
    DEFAULT_LEASE_SECONDS,
    PAGE_SIZE,
    ChainError,
    CurrentState,
    Lease,
    LeaseLostError,
    SessionOwnedError,
    StoredRecord,
    TranscriptStoreError,
    advance,
    new_state,
)
from ..transcript.records import HeaderRecord, Record

__all__ = ["Query", "SqlTranscriptStore", "schema_statements"]


def schema_statements(prefix: str) -> list[str]:
    """The tables, each name given ``prefix`` (a schema and a dot, or nothing)."""
    return [
        f"""CREATE TABLE IF NOT EXISTS {prefix}zpi_native_sessions (
            session_id TEXT PRIMARY KEY,
            parent_session_id TEXT,
            head_uuid TEXT NOT NULL,
            head_seq BIGINT NOT NULL,
            state TEXT NOT NULL,
            mtime DOUBLE PRECISION NOT NULL)""",
        f"""CREATE TABLE IF NOT EXISTS {prefix}zpi_native_records (
            session_id TEXT NOT NULL,
            seq BIGINT NOT NULL,
            uuid TEXT NOT NULL,
            parent_uuid TEXT,
            type TEXT NOT NULL,
            line TEXT NOT NULL,
            PRIMARY KEY (session_id, seq),
            UNIQUE (session_id, uuid))""",
        f"""CREATE TABLE IF NOT EXISTS {prefix}zpi_native_leases (
            session_id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            token BIGINT NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL)""",
    ]


class Query(Protocol):
    """One open transaction of a backend."""

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute; the number of rows changed."""
        ...

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Execute once per row (pipelined where the backend can)."""
        ...


class SqlTranscriptStore:
    """A :class:`~zpi_host.transcript.native.TranscriptStore` over a backend's transactions
    (subclasses give :meth:`_transaction`, ``NOW``, ``FOR_UPDATE`` and the table prefix)."""

    NOW = ""
    FOR_UPDATE = ""

    def __init__(self, *, lease_seconds: float = DEFAULT_LEASE_SECONDS, prefix: str = "") -> None:
        if not isinstance(lease_seconds, int | float) or lease_seconds <= 0:
            raise TranscriptStoreError(f"lease_seconds must be a positive number of seconds, "
                                       f"got {lease_seconds!r}")
        self.lease_seconds = float(lease_seconds)
        self._p = prefix

    def _transaction(self, what: str) -> AbstractContextManager[Query]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ sessions

    def create(self, header: HeaderRecord, line: str, owner: str, *,
               parent_session_id: str | None = None) -> tuple[CurrentState, Lease]:
        sid = header.session_id
        state = new_state(header, parent_session_id)
        with self._transaction("create a session") as q:
            (now,) = q.rows(f"SELECT {self.NOW}")[0]
            state = _stamped(state, now)
            added = q.run(f"INSERT INTO {self._p}zpi_native_sessions VALUES (?, ?, ?, 0, ?, ?) "
                          "ON CONFLICT DO NOTHING",
                          (sid, parent_session_id, header.uuid, _dump(state), now))
            if not added:
                raise SessionExistsError(f"session {sid} already exists in {self!r}; resume "
                                         "it, or choose another session id")
            q.run(f"INSERT INTO {self._p}zpi_native_records VALUES (?, 0, ?, NULL, ?, ?)",
                  (sid, header.uuid, header.TYPE, line))
            lease = self._take(q, sid, owner)
        return state, lease

    def current_state(self, session_id: str) -> CurrentState | None:
        with self._transaction("read a session's state") as q:
            rows = q.rows(f"SELECT state FROM {self._p}zpi_native_sessions WHERE "
                          "session_id = ?", (session_id,))
        return _load(rows[0][0], session_id) if rows else None

    def sessions(self, *, subagents: bool = False) -> list[CurrentState]:
        where = "" if subagents else " WHERE parent_session_id IS NULL"
        with self._transaction("list the sessions") as q:
            rows = q.rows(f"SELECT session_id, state FROM {self._p}zpi_native_sessions{where} "
                          "ORDER BY mtime DESC")
        return [_load(state, sid) for sid, state in rows]

    def subagents(self, session_id: str) -> list[CurrentState]:
        """The states of the sub-agent transcripts ``session_id`` started."""
        with self._transaction("list the sub-agents") as q:
            rows = q.rows(f"SELECT session_id, state FROM {self._p}zpi_native_sessions WHERE "
                          "parent_session_id = ? ORDER BY mtime", (session_id,))
        return [_load(state, sid) for sid, state in rows]

    def read(self, session_id: str, *, from_seq: int = 0,
             limit: int = PAGE_SIZE) -> list[StoredRecord]:
        with self._transaction("read records") as q:
            rows = q.rows(f"SELECT seq, uuid, parent_uuid, type, line FROM "
                          f"{self._p}zpi_native_records WHERE session_id = ? AND seq >= ? "
                          "ORDER BY seq LIMIT ?", (session_id, from_seq, limit))
        return [StoredRecord(*r) for r in rows]

    def record(self, session_id: str, uuid: str) -> StoredRecord | None:
        with self._transaction("read a record") as q:
            rows = q.rows(f"SELECT seq, uuid, parent_uuid, type, line FROM "
                          f"{self._p}zpi_native_records WHERE session_id = ? AND uuid = ?",
                          (session_id, uuid))
        return StoredRecord(*rows[0]) if rows else None

    def delete(self, session_id: str, *, lease: Lease | None = None) -> bool:
        with self._transaction("delete a session") as q:
            q.rows(f"SELECT 1 FROM {self._p}zpi_native_sessions WHERE session_id = ?"
                   f"{self.FOR_UPDATE}", (session_id,))
            if lease is not None:
                self._check_lease(q, lease, renew=False)
            else:
                self._check_unowned(q, session_id)
            for table in ("zpi_native_records", "zpi_native_leases"):
                q.run(f"DELETE FROM {self._p}{table} WHERE session_id = ?", (session_id,))
            return q.run(f"DELETE FROM {self._p}zpi_native_sessions WHERE session_id = ?",
                         (session_id,)) > 0

    # ------------------------------------------------------------------ appending

    def append(self, session_id: str, records: Sequence[tuple[Record, str]], *, after: str,
               lease: Lease | None, linear: bool = True) -> CurrentState:
        """See the protocol; ``linear=False`` (importing a file with branches) only asks that
        each parent be a record of the session."""
        with self._transaction("append records") as q:
            # locks in one order everywhere (the session's row, then its lease): no deadlock
            found = q.rows(f"SELECT head_uuid, state FROM {self._p}zpi_native_sessions WHERE "
                           f"session_id = ?{self.FOR_UPDATE}", (session_id,))
            if not found:
                raise TranscriptStoreError(f"session {session_id} is not in {self!r} (deleted?)")
            if lease is not None:
                self._check_lease(q, lease, renew=True)
            else:
                self._check_unowned(q, session_id)
            head, state_text = found[0]
            state = _load(state_text, session_id)
            if not records:
                return state
            if head != after:
                if self._already_there(q, session_id, records, head):
                    return state  # a retried commit whose answer was lost
                raise ChainError(f"session {session_id} moved on: its head is {head}, and "
                                 f"this write follows {after} (another writer appended; "
                                 "resume the session to see its records)")
            batch: dict[str, int] = {}
            parent, seq = after, state.head_seq
            (now,) = q.rows(f"SELECT {self.NOW}")[0]
            known = self._known(q, session_id, {r.uuid for r, _ in records} | (
                set() if linear else {r.parent_uuid for r, _ in records if r.parent_uuid}))
            rows = []
            for record, line in records:
                seq += 1
                if linear and record.parent_uuid != parent:
                    raise ChainError(f"record {record.uuid} of session {session_id} names "
                                     f"parent {record.parent_uuid}, not {parent}")
                if not linear and record.parent_uuid is not None and \
                        record.parent_uuid not in batch and record.parent_uuid not in known:
                    raise ChainError(f"record {record.uuid} names parent "
                                     f"{record.parent_uuid}, not a record of {session_id}")
                if record.uuid in batch or record.uuid in known:
                    raise ChainError(f"record {record.uuid} is already in {session_id}")
                rows.append((session_id, seq, record.uuid, record.parent_uuid, record.TYPE,
                             line))
                state = advance(state, record, seq, lambda u: batch.get(u)
                                if u in batch else self._seq_of(q, session_id, u))
                batch[record.uuid] = seq
                parent = record.uuid
            q.many(f"INSERT INTO {self._p}zpi_native_records VALUES (?, ?, ?, ?, ?, ?)", rows)
            state = _stamped(state, now)
            q.run(f"UPDATE {self._p}zpi_native_sessions SET head_uuid = ?, head_seq = ?, "
                  "state = ?, mtime = ? WHERE session_id = ?",
                  (state.head_uuid, state.head_seq, _dump(state), now, session_id))
        return state

    def _known(self, q: Query, session_id: str, uuids: set[str]) -> set[str]:
        """Which of ``uuids`` are records of the session already (one query per 500)."""
        found: set[str] = set()
        wanted = sorted(uuids)
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            marks = ", ".join("?" * len(chunk))
            found.update(r[0] for r in q.rows(
                f"SELECT uuid FROM {self._p}zpi_native_records WHERE session_id = ? AND "
                f"uuid IN ({marks})", (session_id, *chunk)))
        return found

    def _seq_of(self, q: Query, session_id: str, uuid: str) -> int | None:
        rows = q.rows(f"SELECT seq FROM {self._p}zpi_native_records WHERE session_id = ? AND "
                      "uuid = ?", (session_id, uuid))
        return int(rows[0][0]) if rows else None

    def _already_there(self, q: Query, session_id: str, records: Sequence[tuple[Record, str]],
                       head: str) -> bool:
        if records[-1][0].uuid != head:
            return False
        return all(self._seq_of(q, session_id, r.uuid) is not None for r, _ in records)

    # ------------------------------------------------------------------ leases

    def acquire(self, session_id: str, owner: str) -> Lease:
        with self._transaction("take a session's lease") as q:
            if not q.rows(f"SELECT 1 FROM {self._p}zpi_native_sessions WHERE session_id = ?"
                          f"{self.FOR_UPDATE}", (session_id,)):
                from ..transcript.paths import not_found

                raise not_found(session_id, None)
            return self._take(q, session_id, owner)

    def _take(self, q: Query, session_id: str, owner: str) -> Lease:
        rows = q.rows(f"SELECT owner, token, expires_at, {self.NOW} FROM "
                      f"{self._p}zpi_native_leases WHERE session_id = ?{self.FOR_UPDATE}",
                      (session_id,))
        if not rows:
            (now,) = q.rows(f"SELECT {self.NOW}")[0]
            token = 1
            q.run(f"INSERT INTO {self._p}zpi_native_leases VALUES (?, ?, ?, ?)",
                  (session_id, owner, token, now + self.lease_seconds))
            return Lease(session_id, owner, token, now + self.lease_seconds)
        holder, token, expires, now = rows[0]
        if holder != owner and expires > now:
            raise SessionOwnedError(session_id, holder, expires - now)
        token = int(token) + (0 if holder == owner and expires > now else 1)
        q.run(f"UPDATE {self._p}zpi_native_leases SET owner = ?, token = ?, expires_at = ? "
              "WHERE session_id = ?", (owner, token, now + self.lease_seconds, session_id))
        return Lease(session_id, owner, token, now + self.lease_seconds)

    def _check_lease(self, q: Query, lease: Lease, *, renew: bool) -> Lease:
        """The lease renewed if its token is still the session's; else LeaseLostError."""
        rows = q.rows(f"SELECT owner, token, {self.NOW} FROM {self._p}zpi_native_leases "
                      f"WHERE session_id = ?{self.FOR_UPDATE}", (lease.session_id,))
        if not rows or rows[0][0] != lease.owner or int(rows[0][1]) != lease.token:
            holder = f"{rows[0][0]!r} (token {rows[0][1]})" if rows else "nobody"
            raise LeaseLostError(
                f"{lease.owner!r} lost the lease on session {lease.session_id} (its token "
                f"{lease.token}; now held by {holder}): it was taken over after expiring, "
                "and this worker may no longer write to it")
        now = rows[0][2]
        if renew:
            q.run(f"UPDATE {self._p}zpi_native_leases SET expires_at = ? WHERE session_id = ?",
                  (now + self.lease_seconds, lease.session_id))
        return Lease(lease.session_id, lease.owner, lease.token, now + self.lease_seconds)

    def _check_unowned(self, q: Query, session_id: str) -> None:
        rows = q.rows(f"SELECT owner, expires_at, {self.NOW} FROM {self._p}zpi_native_leases "
                      f"WHERE session_id = ?{self.FOR_UPDATE}", (session_id,))
        if rows and rows[0][1] > rows[0][2]:  # a live lease: only its owner may change it
            raise SessionOwnedError(session_id, rows[0][0], rows[0][1] - rows[0][2])

    def renew(self, lease: Lease) -> Lease:
        with self._transaction("renew a lease") as q:
            return self._check_lease(q, lease, renew=True)

    def release(self, lease: Lease) -> None:
        with self._transaction("release a lease") as q:
            q.run(f"UPDATE {self._p}zpi_native_leases SET expires_at = 0 WHERE "
                  "session_id = ? AND owner = ? AND token = ?",
                  (lease.session_id, lease.owner, lease.token))


def _dump(state: CurrentState) -> str:
    return json.dumps(state.to_json(), separators=(",", ":"))


def _load(text: str, session_id: str) -> CurrentState:
    try:
        return CurrentState.from_json(json.loads(text))
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise TranscriptStoreError(f"the state of session {session_id} cannot be read "
                                   f"({exc}); it was not written by this host") from None


def _stamped(state: CurrentState, now: float) -> CurrentState:
    import attrs

    return attrs.evolve(state, mtime=float(now))
