"""SQLiteTranscriptStore: native storage embedded on one machine (the standard library's
``sqlite3``).

One connection per store, guarded by a lock (the session's lease keeper is another thread);
WAL mode, ``synchronous = FULL`` (a committed record survives a power cut, as an acknowledged
record must), and every write a ``BEGIN IMMEDIATE`` transaction, so several processes share one
file safely. The clock for leases is SQLite's (the machine's).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..transcript.native import DEFAULT_LEASE_SECONDS, TranscriptStoreError
from .sqlite_store import open_wal_database
from .transcript_sql import SqlTranscriptStore, schema_statements

__all__ = ["SQLiteTranscriptStore"]


class _Query:
    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, params).fetchall()

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.conn.execute(sql, params).rowcount

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)


class SQLiteTranscriptStore(SqlTranscriptStore):
    """Sessions in the SQLite database at ``path`` (created with its tables on first use)."""

    NOW = "((julianday('now') - 2440587.5) * 86400.0)"

    #: one transaction at a time: the loop's commits share one worker thread per store
    write_threads = 1

    def __init__(self, path: str | Path, *, lease_seconds: float = DEFAULT_LEASE_SECONDS) -> None:
        super().__init__(lease_seconds=lease_seconds)
        self.path = Path(path).expanduser()
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None

    def __repr__(self) -> str:
        return f"<SQLiteTranscriptStore {self.path}>"

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = None
            try:
                conn = open_wal_database(self.path, synchronous="FULL")
                conn.execute("BEGIN IMMEDIATE")
                for statement in schema_statements(""):
                    conn.execute(statement)
                conn.execute("COMMIT")
            except (OSError, sqlite3.Error) as exc:
                if conn is not None:
                    conn.close()
                raise TranscriptStoreError(f"cannot open the transcript store {self.path}: "
                                           f"{exc}; check the path and its permissions") \
                    from None
            self._conn = conn
        return self._conn

    @contextmanager
    def _transaction(self, what: str) -> Iterator[_Query]:
        with self._lock:
            conn = self._connect()
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield _Query(conn)
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise TranscriptStoreError(f"transcript store {self.path}: could not "
                                               f"{what}: {exc}") from None
                raise

    def close(self) -> None:
        """Close the connection (it is opened again when the store is used)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
