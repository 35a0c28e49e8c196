"""SQLiteSessionStore: the embedded session store for several processes on one machine.

Standard-library ``sqlite3`` run in a worker thread (``anyio.to_thread``), one connection per
store guarded by a lock. The database is in WAL mode; every append is one ``BEGIN IMMEDIATE``
transaction (entries, the key's mtime and the folded summary commit together), and a busy
database is waited for (``busy_timeout``), so concurrent writers in several processes are
safe. Entries are unique per key by ``uuid`` (a duplicate is skipped); entries without a uuid
are always appended. Order is the commit order (an autoincrement row id), and so are the
mtimes: one clock for the whole database, always growing.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .session_store import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStoreEntry,
    SessionStoreError,
    SessionStoreListEntry,
    SessionSummaryEntry,
    check_entries,
    check_key,
    entry_json,
    fold_session_summary,
    store_clock_ms,
)

__all__ = ["SQLiteSessionStore"]

T = TypeVar("T")

#: how long a writer waits for another process's transaction, in milliseconds
BUSY_TIMEOUT_MS = 30_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    subpath TEXT NOT NULL,
    uuid TEXT,
    entry TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS entries_uuid
    ON entries (project_key, session_id, subpath, uuid);
CREATE INDEX IF NOT EXISTS entries_key ON entries (project_key, session_id, subpath, seq);
CREATE TABLE IF NOT EXISTS transcripts (
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    subpath TEXT NOT NULL,
    mtime INTEGER NOT NULL,
    PRIMARY KEY (project_key, session_id, subpath)
);
CREATE INDEX IF NOT EXISTS transcripts_mtime ON transcripts (mtime);
CREATE TABLE IF NOT EXISTS summaries (
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    mtime INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
"""


def open_wal_database(path: Path, *, synchronous: str) -> sqlite3.Connection:
    """A connection to the SQLite file at ``path`` (its folder made), in autocommit mode, usable
    from any thread, waiting ``BUSY_TIMEOUT_MS`` for other writers, in WAL mode with
    ``synchronous`` (``NORMAL`` for a mirror, ``FULL`` for an authority). Raises what sqlite3
    or the file system raise; the connection is closed then."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                           check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        enter_wal(conn)
        conn.execute(f"PRAGMA synchronous = {synchronous}")
    except BaseException:
        conn.close()
        raise
    return conn


def enter_wal(conn: sqlite3.Connection) -> None:
    """Put the database in WAL mode, waiting out other processes that are opening it too.

    Switching the journal mode needs the database to itself, and SQLite reports that as
    "database is locked" at once, without its busy handler; so the switch is retried until
    ``BUSY_TIMEOUT_MS`` has passed. The mode is stored in the file: a database already in WAL
    mode is only read.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    pause = 0.001
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if mode != "wal":
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorcode", sqlite3.SQLITE_BUSY) & 0xFF != sqlite3.SQLITE_BUSY \
                    or time.monotonic() + pause > deadline:
                raise
        else:
            if mode != "wal":  # the file system or the file refuses WAL: no use waiting
                raise sqlite3.OperationalError(f"the database cannot use WAL mode (it stays "
                                               f"in {mode!r} mode)")
            return
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


class SQLiteSessionStore:
    """Sessions in the SQLite database at ``path`` (created with its schema on first use)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def __repr__(self) -> str:
        return f"<SQLiteSessionStore {self.path}>"

    # ------------------------------------------------------------------ plumbing

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = None
            try:
                conn = open_wal_database(self.path, synchronous="NORMAL")
                conn.executescript(SCHEMA)
            except (OSError, sqlite3.Error) as exc:
                if conn is not None:
                    conn.close()
                hint = ("another process kept it busy; try again" if "locked" in str(exc)
                        else "check the path and its permissions")
                raise SessionStoreError(f"cannot open the session store database {self.path}: "
                                        f"{exc}; {hint}") from None
            self._conn = conn
        return self._conn

    async def _run(self, what: str, fn: Callable[[sqlite3.Connection], T]) -> T:
        import anyio

        def call() -> T:
            with self._lock:
                conn = self._connect()
                try:
                    return fn(conn)
                except BaseException as exc:
                    if conn.in_transaction:  # never leave a write lock behind
                        conn.execute("ROLLBACK")
                    if isinstance(exc, sqlite3.Error):
                        raise SessionStoreError(f"session store {self.path}: {what} failed: "
                                                f"{exc}") from None
                    raise

        return await anyio.to_thread.run_sync(call)

    def close(self) -> None:
        """Close the connection (the store reopens it when used again)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # ------------------------------------------------------------------ protocol

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        check_key(key)
        check_entries(entries)
        if not entries:
            return
        slot = (key["project_key"], key["session_id"], key.get("subpath", ""))
        rows = [(*slot, e.get("uuid") if isinstance(e.get("uuid"), str) else None,
                 entry_json(e)) for e in entries]

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            fresh = []
            for row, entry in zip(rows, entries, strict=True):
                cursor = conn.execute(
                    "INSERT INTO entries (project_key, session_id, subpath, uuid, entry) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", row)
                if cursor.rowcount:
                    fresh.append(entry)
            # one clock for the whole database, read inside the write lock: mtimes follow
            # the commit order, so two sessions never tie for "the newest"
            mtime = store_clock_ms(conn.execute("SELECT max(mtime) FROM transcripts").fetchone()[0])
            conn.execute("INSERT INTO transcripts VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE "
                         "SET mtime = excluded.mtime", (*slot, mtime))
            if not slot[2]:
                self._fold(conn, key, fresh, mtime)
            conn.execute("COMMIT")

        await self._run("append", write)

    def _decode(self, text: Any, what: str) -> Any:
        """A JSON column's value. A damaged one (not JSON, or nested too deeply to read) is a
        SessionStoreError naming it: the store may be shared, and a row written by something
        else must not end a host with a traceback."""
        try:
            return json.loads(text)
        except (ValueError, TypeError, RecursionError) as exc:
            problem = "nested too deeply to read" if isinstance(exc, RecursionError) else \
                f"not valid JSON ({exc})"
            raise SessionStoreError(
                f"session store {self.path}: {what} is {problem}; it was not written by this "
                "store: delete that session from the store (`zpi-host sessions delete ID "
                "--store sqlite:PATH`) or restore the database") from None

    def _fold(self, conn: sqlite3.Connection, key: SessionKey,
              fresh: list[SessionStoreEntry], mtime: int) -> None:
        found = conn.execute("SELECT mtime, data FROM summaries WHERE project_key = ? AND "
                             "session_id = ?", (key["project_key"], key["session_id"])).fetchone()
        prev: SessionSummaryEntry | None = None
        if found is not None:
            what = f"the summary of session {key['session_id']}"
            prev = {"session_id": key["session_id"], "mtime": found[0],
                    "data": self._decode(found[1], what)}
        summary = fold_session_summary(prev, key, fresh)
        conn.execute("INSERT INTO summaries VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
                     "mtime = excluded.mtime, data = excluded.data",
                     (key["project_key"], key["session_id"], mtime,
                      entry_json(summary["data"])))

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        check_key(key)
        slot = (key["project_key"], key["session_id"], key.get("subpath", ""))

        def read(conn: sqlite3.Connection) -> list[SessionStoreEntry] | None:
            rows = conn.execute("SELECT entry FROM entries WHERE project_key = ? AND "
                                "session_id = ? AND subpath = ? ORDER BY seq", slot).fetchall()
            if not rows:
                return None
            sub = f" ({slot[2]})" if slot[2] else ""
            return [self._decode(r[0], f"entry {n} of session {slot[1]}{sub}")
                    for n, r in enumerate(rows, 1)]

        return await self._run("load", read)

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        rows = await self._run("list_sessions", lambda conn: conn.execute(
            "SELECT session_id, mtime FROM transcripts WHERE project_key = ? AND subpath = ''",
            (project_key,)).fetchall())
        return [{"session_id": sid, "mtime": mtime} for sid, mtime in rows]

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        rows = await self._run("list_session_summaries", lambda conn: conn.execute(
            "SELECT session_id, mtime, data FROM summaries WHERE project_key = ?",
            (project_key,)).fetchall())
        return [{"session_id": sid, "mtime": mtime,
                 "data": self._decode(data, f"the summary of session {sid}")}
                for sid, mtime, data in rows]

    async def delete(self, key: SessionKey) -> None:
        check_key(key)
        where = "project_key = ? AND session_id = ?"
        params: tuple[Any, ...] = (key["project_key"], key["session_id"])
        if "subpath" in key:
            where += " AND subpath = ?"
            params += (key["subpath"],)

        def remove(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(f"DELETE FROM entries WHERE {where}", params)
            conn.execute(f"DELETE FROM transcripts WHERE {where}", params)
            if "subpath" not in key:
                conn.execute(f"DELETE FROM summaries WHERE {where}", params)
            conn.execute("COMMIT")

        await self._run("delete", remove)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        check_key(key, subpath_allowed=False)
        rows = await self._run("list_subkeys", lambda conn: conn.execute(
            "SELECT subpath FROM transcripts WHERE project_key = ? AND session_id = ? AND "
            "subpath != '' ORDER BY subpath", (key["project_key"], key["session_id"])).fetchall())
        return [r[0] for r in rows]
