"""Fixtures for native storage: an SQLite file per test, and one real PostgreSQL server for
the whole folder (tests/helpers/postgres_server.py), a fresh schema per test."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

_schemas = itertools.count()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    from helpers.postgres_server import postgres_control

    try:
        control = postgres_control()
        server = control.__enter__()
    except RuntimeError as exc:
        pytest.skip(f"no PostgreSQL server: {exc}")
    try:
        yield server
    finally:
        control.__exit__(None, None, None)


@pytest.fixture(params=["sqlite", "postgresql"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """``make_store(lease_seconds=...)``: a new handle on one database per test (several
    handles stand for several workers)."""
    made: list[Any] = []
    if request.param == "sqlite":
        from zpi_host.stores.sqlite_transcripts import SQLiteTranscriptStore

        def make(**kw: Any) -> Any:
            made.append(SQLiteTranscriptStore(tmp_path / "sessions.db", **kw))
            return made[-1]
    else:
        server = request.getfixturevalue("pg_server")
        from zpi_host.stores.postgres_transcripts import PostgresTranscriptStore

        schema = f"n{next(_schemas)}"

        def make(**kw: Any) -> Any:
            made.append(PostgresTranscriptStore(server.dsn, schema=schema, max_size=4, **kw))
            return made[-1]
    make.kind = request.param  # type: ignore[attr-defined]
    yield make
    for store in made:
        store.close()
