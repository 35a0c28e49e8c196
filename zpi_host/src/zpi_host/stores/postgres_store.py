"""PostgresSessionStore: the session store for many hosts sharing sessions (psycopg 3).

Install with ``pip install 'zpi-host[postgres]'``. Connections come from a pool
(``psycopg_pool.AsyncConnectionPool``, opened on first use; :meth:`close` it). The schema
(three tables in ``schema``, default ``public``) is created on first use under an advisory
lock, so many hosts may start at once. An append is one transaction: the key's row in
``zpi_transcripts`` is locked (appends to one key are serial across hosts), the entries are
inserted with a unique key on ``uuid`` (duplicates skipped), and the key's mtime (the
server's clock, always growing) and the folded summary are updated before the commit.
A value JSONB cannot hold (a string with a NUL character or a lone surrogate, which a
transcript line may carry) is stored as its JSON text inside a wrapper and given back as it
was (:func:`to_jsonb`, :func:`from_jsonb`).
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import UsageError
from .session_store import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStoreEntry,
    SessionStoreError,
    SessionStoreListEntry,
    SessionSummaryEntry,
    check_entries,
    check_key,
    fold_session_summary,
    hide_passwords,
)

__all__ = ["ESCAPED", "PostgresSessionStore", "from_jsonb", "to_jsonb"]

#: the key of the wrapper that holds, as ASCII JSON text, a value JSONB cannot hold
ESCAPED = "zpi.escaped_json"


def to_jsonb(value: Any) -> Any:
    """``value`` as JSONB can hold it: itself, or ``{"uuid"?, ESCAPED: <its JSON text>}`` when
    it holds a NUL character or a lone surrogate (the uuid kept beside, so that duplicates are
    still skipped)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if "\\u0000" not in text:  # how json writes NUL (a false alarm costs only a wrapper)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            pass  # a lone surrogate
        else:
            return value
    wrapper = {ESCAPED: json.dumps(value, separators=(",", ":"))}
    uuid = value.get("uuid") if isinstance(value, dict) else None
    if isinstance(uuid, str) and to_jsonb(uuid) == uuid:
        wrapper["uuid"] = uuid
    return wrapper


def from_jsonb(value: Any) -> Any:
    """What :func:`to_jsonb` was given."""
    if isinstance(value, dict) and isinstance(value.get(ESCAPED), str) and \
            value.keys() <= {ESCAPED, "uuid"}:
        return json.loads(value[ESCAPED])
    return value


_SCHEMA = """
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.zpi_entries (
    seq BIGSERIAL PRIMARY KEY,
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    subpath TEXT NOT NULL,
    uuid TEXT,
    entry JSONB NOT NULL,
    UNIQUE (project_key, session_id, subpath, uuid)
);
CREATE INDEX IF NOT EXISTS zpi_entries_key
    ON {schema}.zpi_entries (project_key, session_id, subpath, seq);
CREATE TABLE IF NOT EXISTS {schema}.zpi_transcripts (
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    subpath TEXT NOT NULL,
    mtime BIGINT NOT NULL,
    PRIMARY KEY (project_key, session_id, subpath)
);
CREATE TABLE IF NOT EXISTS {schema}.zpi_summaries (
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    mtime BIGINT NOT NULL,
    data JSONB NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
"""
#: the server's clock in epoch milliseconds
_NOW_MS = "(extract(epoch from clock_timestamp()) * 1000)::bigint"


class PostgresSessionStore:
    """Sessions in the PostgreSQL database at ``dsn`` (a libpq connection string or URL)."""

    def __init__(self, dsn: str, *, schema: str = "public", min_size: int = 1,
                 max_size: int = 8) -> None:
        try:
            import psycopg  # noqa: F401
            import psycopg_pool  # noqa: F401
        except ImportError:
            raise UsageError("PostgresSessionStore needs psycopg 3 and psycopg-pool: "
                             "pip install 'zpi-host[postgres]'") from None
        if not schema.isidentifier():
            raise UsageError(f"schema must be a plain identifier, got {schema!r}")
        self.dsn, self.schema = dsn, schema
        self._min, self._max = min_size, max_size
        self._pool: Any = None
        self._ready = False

    def __repr__(self) -> str:
        return f"<PostgresSessionStore schema={self.schema}>"

    # ------------------------------------------------------------------ plumbing

    def _sql(self, text: str) -> Any:
        from psycopg import sql

        return sql.SQL(text).format(schema=sql.Identifier(self.schema))

    async def _connection(self) -> Any:
        from psycopg_pool import AsyncConnectionPool

        if self._pool is None:
            import psycopg

            try:  # one direct attempt first: a wrong address fails now, with its reason
                probe = await psycopg.AsyncConnection.connect(self.dsn)
            except psycopg.Error as exc:
                problem = hide_passwords(str(exc).strip(), self.dsn)
                raise SessionStoreError(f"cannot connect to the session store database: "
                                        f"{problem}") from None
            await probe.close()
            pool = AsyncConnectionPool(self.dsn, min_size=self._min, max_size=self._max,
                                       open=False)
            await pool.open()
            self._pool = pool
        if not self._ready:
            async with self._pool.connection() as conn, conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(7263541)")
                await conn.execute(self._sql(_SCHEMA))
            self._ready = True
        return self._pool.connection()

    async def close(self) -> None:
        """Close the pool (the store opens a new one when used again)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    # ------------------------------------------------------------------ protocol

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        from psycopg.types.json import Jsonb

        check_key(key)
        check_entries(entries)
        if not entries:
            return
        slot = (key["project_key"], key["session_id"], key.get("subpath", ""))
        async with await self._connection() as conn, conn.transaction():
            await conn.execute(self._sql(
                "INSERT INTO {schema}.zpi_transcripts VALUES (%s, %s, %s, 0) "
                "ON CONFLICT DO NOTHING"), slot)
            cursor = await conn.execute(self._sql(
                "SELECT mtime FROM {schema}.zpi_transcripts WHERE project_key = %s AND "
                "session_id = %s AND subpath = %s FOR UPDATE"), slot)
            (previous,) = await cursor.fetchone()
            cursor = await conn.execute(self._sql(
                "INSERT INTO {schema}.zpi_entries (project_key, session_id, subpath, uuid, "
                "entry) SELECT %s, %s, %s, CASE WHEN jsonb_typeof(e -> 'uuid') = 'string' "
                "THEN e ->> 'uuid' END, e FROM jsonb_array_elements(%s) WITH ORDINALITY "
                "AS t(e, n) ORDER BY n ON CONFLICT DO NOTHING RETURNING seq, entry"),
                (*slot, Jsonb([to_jsonb(e) for e in entries])))
            fresh = [from_jsonb(entry) for _, entry in sorted(await cursor.fetchall())]
            cursor = await conn.execute(self._sql(
                f"UPDATE {{schema}}.zpi_transcripts SET mtime = GREATEST({_NOW_MS}, %s + 1) "
                "WHERE project_key = %s AND session_id = %s AND subpath = %s "
                "RETURNING mtime"), (previous, *slot))
            (mtime,) = await cursor.fetchone()
            if not slot[2]:
                await self._fold(conn, key, fresh, mtime)

    async def _fold(self, conn: Any, key: SessionKey, fresh: list[Any], mtime: int) -> None:
        from psycopg.types.json import Jsonb

        cursor = await conn.execute(self._sql(
            "SELECT mtime, data FROM {schema}.zpi_summaries WHERE project_key = %s AND "
            "session_id = %s"), (key["project_key"], key["session_id"]))
        found = await cursor.fetchone()
        prev: SessionSummaryEntry | None = None
        if found is not None:
            prev = {"session_id": key["session_id"], "mtime": found[0],
                    "data": from_jsonb(found[1])}
        summary = fold_session_summary(prev, key, fresh)
        await conn.execute(self._sql(
            "INSERT INTO {schema}.zpi_summaries VALUES (%s, %s, %s, %s) ON CONFLICT "
            "(project_key, session_id) DO UPDATE SET mtime = excluded.mtime, "
            "data = excluded.data"),
            (key["project_key"], key["session_id"], mtime, Jsonb(to_jsonb(summary["data"]))))

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        check_key(key)
        slot = (key["project_key"], key["session_id"], key.get("subpath", ""))
        async with await self._connection() as conn:
            cursor = await conn.execute(self._sql(
                "SELECT entry FROM {schema}.zpi_entries WHERE project_key = %s AND "
                "session_id = %s AND subpath = %s ORDER BY seq"), slot)
            rows = await cursor.fetchall()
        return [from_jsonb(r[0]) for r in rows] if rows else None

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        async with await self._connection() as conn:
            cursor = await conn.execute(self._sql(
                "SELECT session_id, mtime FROM {schema}.zpi_transcripts WHERE "
                "project_key = %s AND subpath = ''"), (project_key,))
            return [{"session_id": sid, "mtime": mtime}
                    for sid, mtime in await cursor.fetchall()]

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        async with await self._connection() as conn:
            cursor = await conn.execute(self._sql(
                "SELECT session_id, mtime, data FROM {schema}.zpi_summaries WHERE "
                "project_key = %s"), (project_key,))
            return [{"session_id": sid, "mtime": mtime, "data": from_jsonb(data)}
                    for sid, mtime, data in await cursor.fetchall()]

    async def delete(self, key: SessionKey) -> None:
        check_key(key)
        where = "project_key = %s AND session_id = %s"
        params: tuple[Any, ...] = (key["project_key"], key["session_id"])
        if "subpath" in key:
            where += " AND subpath = %s"
            params += (key["subpath"],)
        async with await self._connection() as conn, conn.transaction():
            for table in ("zpi_entries", "zpi_transcripts") + (
                    () if "subpath" in key else ("zpi_summaries",)):
                await conn.execute(self._sql(f"DELETE FROM {{schema}}.{table} WHERE {where}"),
                                   params)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        check_key(key, subpath_allowed=False)
        async with await self._connection() as conn:
            cursor = await conn.execute(self._sql(
                "SELECT subpath FROM {schema}.zpi_transcripts WHERE project_key = %s AND "
                "session_id = %s AND subpath != '' ORDER BY subpath"),
                (key["project_key"], key["session_id"]))
            return [r[0] for r in await cursor.fetchall()]
