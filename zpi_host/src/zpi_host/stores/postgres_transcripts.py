"""PostgresTranscriptStore: native storage for many machines over one PostgreSQL (psycopg 3).

Install with ``pip install 'zpi-host[postgres]'``. Connections come from a
``psycopg_pool.ConnectionPool`` (checked before each use, so connections a restarted server
dropped are replaced); the tables are created on first use under an advisory lock. Row locks
(``FOR UPDATE``) make appends to one session serial across machines, and the lease's token is
checked in the transaction that inserts, so a fenced worker's append is refused. Leases run on
the server's clock. A server that cannot be reached is a StoreUnavailableError, which the
session's owner retries up to its reconnect bound.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import UsageError
from ..transcript.native import (
    DEFAULT_LEASE_SECONDS,
    StoreUnavailableError,
    TranscriptStoreError,
)
from .session_store import hide_passwords
from .transcript_sql import SqlTranscriptStore, schema_statements

__all__ = ["PostgresTranscriptStore"]

#: how long one attempt waits for a pooled connection, in seconds
CONNECT_TIMEOUT = 2.0


class _Query:
    __slots__ = ("conn",)

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql.replace("?", "%s"), params).fetchall()  # type: ignore[no-any-return]

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return int(self.conn.execute(sql.replace("?", "%s"), params).rowcount)

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with self.conn.cursor() as cursor:
                cursor.executemany(sql.replace("?", "%s"), rows)


class PostgresTranscriptStore(SqlTranscriptStore):
    """Sessions in the PostgreSQL database at ``dsn`` (a libpq connection string or URL)."""

    NOW = "extract(epoch from clock_timestamp())::float8"
    FOR_UPDATE = " FOR UPDATE"

    def __init__(self, dsn: str, *, schema: str = "public", min_size: int = 1,
                 max_size: int = 8, lease_seconds: float = DEFAULT_LEASE_SECONDS) -> None:
        try:
            import psycopg  # noqa: F401
            import psycopg_pool  # noqa: F401
        except ImportError:
            raise UsageError("PostgresTranscriptStore needs psycopg 3 and psycopg-pool: "
                             "pip install 'zpi-host[postgres]'") from None
        if not schema.isidentifier():
            raise UsageError(f"schema must be a plain identifier, got {schema!r}")
        super().__init__(lease_seconds=lease_seconds, prefix=f'"{schema}".')
        self.dsn, self.schema = dsn, schema
        self._min, self._max = min_size, max_size
        self._pool: Any = None
        self._ready = False

    def __repr__(self) -> str:
        return f"<PostgresTranscriptStore schema={self.schema}>"

    def _open_pool(self) -> Any:
        import psycopg
        from psycopg_pool import ConnectionPool

        if self._pool is None:
            try:  # one direct attempt first: a wrong address fails now, with its reason
                psycopg.connect(self.dsn, connect_timeout=int(CONNECT_TIMEOUT) + 1).close()
            except psycopg.Error as exc:
                raise StoreUnavailableError(
                    f"cannot connect to the transcript store database: "
                    f"{hide_passwords(str(exc).strip(), self.dsn)}") from None
            pool = ConnectionPool(self.dsn, min_size=self._min, max_size=self._max,
                                  open=False, check=ConnectionPool.check_connection,
                                  timeout=CONNECT_TIMEOUT)
            pool.open()
            self._pool = pool
        return self._pool

    @contextmanager
    def _transaction(self, what: str) -> Iterator[_Query]:
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            pool = self._open_pool()
            with pool.connection() as conn:
                if not self._ready:
                    with conn.transaction():
                        conn.execute("SELECT pg_advisory_xact_lock(7263542)")
                        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                        for statement in schema_statements(self._p):
                            conn.execute(statement)
                    self._ready = True
                with conn.transaction():
                    yield _Query(conn)
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise StoreUnavailableError(
                f"transcript store database unreachable while trying to {what}: "
                f"{hide_passwords(str(exc).strip(), self.dsn)}") from None
        except psycopg.Error as exc:
            raise TranscriptStoreError(f"transcript store: could not {what}: "
                                       f"{hide_passwords(str(exc).strip(), self.dsn)}") from None

    def close(self) -> None:
        """Close the pool (a new one is opened when the store is used again)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
