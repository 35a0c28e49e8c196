"""PostgresSessionStore against a real PostgreSQL server that this module starts and stops
(tests/helpers/postgres_server.py); skipped, with the reason, only where none can be had."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from zpi_host.sdk import project_key_for_directory
from zpi_host.testing import run_session_store_conformance
from zpi_host.testing.session_store_conformance import CONTRACTS

pytestmark = pytest.mark.anyio

_schemas = itertools.count()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def dsn() -> Iterator[str]:
    from helpers.postgres_server import postgres_server

    try:
        server = postgres_server()
        url = server.__enter__()
    except RuntimeError as exc:
        print(f"PostgreSQL store tests skipped: {exc}")
        pytest.skip(f"no PostgreSQL server: {exc}")
    try:
        yield url
    finally:
        server.__exit__(None, None, None)


def _store(dsn: str) -> Any:
    from zpi_host.stores.postgres_store import PostgresSessionStore

    return PostgresSessionStore(dsn, schema=f"t{next(_schemas)}", max_size=2)


async def test_postgres_store_meets_every_contract(dsn):
    stores: list[Any] = []

    def make() -> Any:
        stores.append(_store(dsn))
        return stores[-1]

    try:
        ran = await run_session_store_conformance(make)
    finally:
        for store in stores:
            await store.close()
    assert ran == [name for name, _, _ in CONTRACTS]


WRITER = """
import sys, anyio
from zpi_host.stores.postgres_store import PostgresSessionStore
dsn, schema, who, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
async def main():
    store = PostgresSessionStore(dsn, schema=schema, max_size=1)
    key = {"project_key": "p", "session_id": "shared"}
    for n in range(count):
        await store.append(key, [{"type": "user", "uuid": f"{who}-{n}", "n": n},
                                 {"type": "user", "uuid": "common"}])
    await store.close()
anyio.run(main)
"""


async def test_many_hosts_append_to_one_session(dsn):
    schema = f"t{next(_schemas)}"
    writers, count = 4, 20
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, dsn, schema, f"w{i}",
                               str(count)], stderr=subprocess.PIPE) for i in range(writers)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    from zpi_host.stores.postgres_store import PostgresSessionStore

    store = PostgresSessionStore(dsn, schema=schema)
    try:
        entries = await store.load({"project_key": "p", "session_id": "shared"})
        uuids = [e["uuid"] for e in entries]
        assert len(uuids) == len(set(uuids)) == writers * count + 1
        for i in range(writers):
            assert [e["n"] for e in entries if e["uuid"].startswith(f"w{i}-")] == \
                list(range(count))
        summary = (await store.list_session_summaries("p"))[0]
        assert summary["data"]["message_count"] == writers * count + 1
    finally:
        await store.close()


async def test_a_session_mirrored_to_postgres_resumes_elsewhere(dsn, scripted):
    from zpi_host.sdk import query

    from .conftest import collect

    store = _store(dsn)
    try:
        scripted.turns({"text": "noted"})
        first = await collect(query(prompt="remember 7", options=scripted.options(
            session_store=store)))
        sid = first[-1].session_id
        for path in (scripted.agent_dir / "sessions").rglob("*.jsonl"):
            path.unlink()
        scripted.turns({"text": "7"})
        second = await collect(query(prompt="which?", options=scripted.options(
            session_store=store, resume=sid)))
        assert second[-1].session_id == sid
        assert "remember 7" in str(list(scripted.requests()[-1].messages))
    finally:
        await store.close()


def test_bad_connection_is_a_store_error():
    pytest.importorskip("psycopg")
    import anyio

    from zpi_host.sdk import SessionStoreError
    from zpi_host.stores.postgres_store import PostgresSessionStore

    async def attempt() -> None:
        store = PostgresSessionStore("postgresql://nobody@127.0.0.1:1/none?connect_timeout=1")
        with pytest.raises(SessionStoreError, match="cannot connect"):
            await store.load({"project_key": "p", "session_id": "s"})

    anyio.run(attempt)


async def test_a_session_holding_nul_and_a_lone_surrogate_is_mirrored_and_resumed(dsn,
                                                                                  scripted):
    """JSONB refuses both; a transcript line (ASCII JSON) may hold either, from any text."""
    from zpi_host.sdk import MirrorErrorMessage, list_sessions_from_store, query

    from .conftest import collect

    store = _store(dsn)
    prompt = "bytes a\x00b and \ud800 too"
    try:
        scripted.turns({"text": "noted"})
        first = await collect(query(prompt=prompt, options=scripted.options(
            session_store=store)))
        assert not [m for m in first if isinstance(m, MirrorErrorMessage)]
        sid = first[-1].session_id
        (path,) = (scripted.agent_dir / "sessions").rglob(f"{sid}.jsonl")
        local = [json.loads(line) for line in path.read_text().splitlines()]
        key = {"project_key": project_key_for_directory(scripted.cwd), "session_id": sid}
        assert await store.load(key) == local
        (info,) = await list_sessions_from_store(store, project_key=key["project_key"])
        assert info.first_prompt == prompt
        path.unlink()
        scripted.turns({"text": "again"})
        second = await collect(query(prompt="which?", options=scripted.options(
            session_store=store, resume=sid)))
        assert second[-1].session_id == sid and second[-1].result == "again"
        assert next(iter(scripted.requests()[-1].messages)).content[0].text == prompt
    finally:
        await store.close()


def test_jsonb_wrapping_gives_back_what_it_was_given():
    from zpi_host.stores.postgres_store import ESCAPED, from_jsonb, to_jsonb

    plain = {"uuid": "u1", "text": "é 😀 \\u0000 as text"}
    assert to_jsonb(plain) is plain or from_jsonb(to_jsonb(plain)) == plain
    for value in ({"uuid": "u2", "text": "a\x00b"}, {"text": "\udfff"}, ["\x00"], "\ud800"):
        wrapped = to_jsonb(value)
        assert ESCAPED in wrapped and "\x00" not in json.dumps(wrapped)
        assert from_jsonb(json.loads(json.dumps(wrapped))) == value
    assert to_jsonb({"uuid": "u2", "text": "a\x00b"})["uuid"] == "u2"  # still deduplicated
