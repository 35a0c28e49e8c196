"""The session store protocol and the stores built in: the conformance contracts on both, the
project key, and SQLite under concurrent writers in several real processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from zpi_host.errors import UsageError
from zpi_host.sdk import (
    InMemorySessionStore,
    SessionStoreError,
    SQLiteSessionStore,
    fold_session_summary,
    list_sessions_from_store,
    list_subagents_from_store,
    project_key_for_directory,
)
from zpi_host.stores.store_resume import newest_session
from zpi_host.testing import run_session_store_conformance
from zpi_host.testing.session_store_conformance import CONTRACTS

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_in_memory_store_meets_every_contract() -> None:
    ran = await run_session_store_conformance(InMemorySessionStore)
    assert ran == [name for name, _, _ in CONTRACTS]
    assert len(ran) >= 14


async def test_sqlite_store_meets_every_contract(tmp_path: Path) -> None:
    stores: list[SQLiteSessionStore] = []

    def make() -> SQLiteSessionStore:
        stores.append(SQLiteSessionStore(tmp_path / f"db{len(stores)}" / "sessions.sqlite"))
        return stores[-1]

    try:
        ran = await run_session_store_conformance(make)
    finally:
        for store in stores:
            store.close()
    assert ran == [name for name, _, _ in CONTRACTS]


class _OnlyRequired:
    """A minimal adapter: append and load, nothing optional."""

    def __init__(self) -> None:
        self.data: dict[Any, list[Any]] = {}

    async def append(self, key: Any, entries: list[Any]) -> None:
        if entries:
            slot = (key["project_key"], key["session_id"], key.get("subpath"))
            seen = {e.get("uuid") for e in self.data.get(slot, []) if "uuid" in e}
            self.data.setdefault(slot, []).extend(
                e for e in entries if "uuid" not in e or e["uuid"] not in seen)

    async def load(self, key: Any) -> Any:
        return self.data.get((key["project_key"], key["session_id"], key.get("subpath")))


async def test_optional_contracts_are_skipped_for_a_minimal_adapter() -> None:
    ran = await run_session_store_conformance(_OnlyRequired)
    assert "list_sessions_of_project" not in ran and "append_load_round_trip" in ran
    skipped = await run_session_store_conformance(InMemorySessionStore,
                                                  skip_optional={"delete"})
    assert "delete_main_cascades" not in skipped
    with pytest.raises(ValueError, match="not optional methods: load"):
        await run_session_store_conformance(InMemorySessionStore, skip_optional={"load"})


class _Forgetful(InMemorySessionStore):
    """Breaks one contract: loads its entries in reverse."""

    async def load(self, key: Any) -> Any:
        loaded = await super().load(key)
        return loaded[::-1] if loaded else loaded


async def test_a_broken_store_fails_naming_the_contract() -> None:
    with pytest.raises(AssertionError, match="'append_load_round_trip' broken by _Forgetful"):
        await run_session_store_conformance(_Forgetful)


async def test_bad_keys_and_entries_are_usage_errors(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.sqlite")
    try:
        for bad in ({"project_key": "p"}, {"project_key": "p", "session_id": "s",
                                           "subpath": ""}, "p/s"):
            with pytest.raises(UsageError, match="session key"):
                await store.append(bad, [])  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="entry 1 must be a JSON object"):
            await store.append({"project_key": "p", "session_id": "s"},
                               [{"type": "x"}, "no"])  # type: ignore[list-item]
    finally:
        store.close()


async def test_sqlite_store_that_cannot_open_says_where(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    store = SQLiteSessionStore(blocker / "sub" / "s.sqlite")
    with pytest.raises(SessionStoreError, match=r"cannot open the session store database"):
        await store.load({"project_key": "p", "session_id": "s"})


def test_project_key_rules(tmp_path: Path) -> None:
    assert project_key_for_directory("/home/me/my.proj_1") == "-home-me-my-proj-1"
    long_a = "/x" * 150
    long_b = "/x" * 149 + "/y"
    key_a, key_b = project_key_for_directory(long_a), project_key_for_directory(long_b)
    assert key_a.startswith(project_key_for_directory(long_a)[:200])
    assert len(key_a) > 200 and key_a != key_b
    assert key_a == project_key_for_directory(long_a)  # deterministic
    # the hash is claude-agent-sdk's (djb2 in base 36), so both SDKs agree on long keys
    assert project_key_for_directory("/" + "a" * 300).endswith("-" + _djb2("/" + "a" * 300))


def _djb2(text: str) -> str:
    value = 0
    for char in text:
        value = (value * 31 + ord(char)) % 2**32
    value = abs(value - 2**32 if value >= 2**31 else value)
    return _base36(value)


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    return digits[n] if n < 36 else _base36(n // 36) + digits[n % 36]


def test_fold_reads_this_hosts_records() -> None:
    key: Any = {"project_key": "p", "session_id": "s"}
    summary = fold_session_summary(None, key, [
        {"type": "header", "uuid": "h", "cwd": "/w", "timestamp": "2025-01-01T00:00:00.000Z"},
        {"type": "user", "uuid": "u", "message": {"role": "user", "content": [
            {"type": "text", "text": "fix   the\nbug"}]}},
        {"type": "assistant", "uuid": "a", "message": {}},
    ])
    summary = fold_session_summary(summary, key, [
        {"type": "user", "uuid": "u2", "message": {"content": [{"type": "text",
                                                                  "text": "later"}]}},
        {"type": "title", "uuid": "t", "title": "Bug"},
        {"type": "tag", "uuid": "g", "tags": ["a", "b"]}])
    assert summary == {"session_id": "s", "mtime": 0, "data": {
        "cwd": "/w", "created_at": "2025-01-01T00:00:00.000Z", "first_prompt": "fix the bug",
        "message_count": 3, "title": "Bug", "tags": ["a", "b"]}}


WRITER = """
import sys, anyio
from zpi_host.sdk import SQLiteSessionStore
path, who, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
async def main():
    store = SQLiteSessionStore(path)
    key = {"project_key": "p", "session_id": "shared"}
    for n in range(count):
        # every writer also re-sends the shared entry: it must be stored once
        await store.append(key, [{"type": "user", "uuid": f"{who}-{n}", "n": n},
                                 {"type": "user", "uuid": "common"}])
        await store.append({**key, "subpath": f"subagents/agent-{who}"}, [{"type": "x"}])
    store.close()
anyio.run(main)
"""


async def test_sqlite_store_is_safe_under_concurrent_processes(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    writers, count = 4, 25
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{i}", str(count)],
                              stderr=subprocess.PIPE) for i in range(writers)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    store = SQLiteSessionStore(path)
    try:
        entries = await store.load({"project_key": "p", "session_id": "shared"})
        assert entries is not None
        uuids = [e["uuid"] for e in entries]
        assert len(uuids) == len(set(uuids)) == writers * count + 1
        for i in range(writers):  # each writer's entries in its own call order
            own = [e["n"] for e in entries if e["uuid"].startswith(f"w{i}-")]
            assert own == list(range(count))
        assert len(await store.list_subkeys({"project_key": "p", "session_id": "shared"})) \
            == writers
        summary = (await store.list_session_summaries("p"))[0]
        assert summary["data"]["message_count"] == writers * count + 1
        mode = await store._run("mode", lambda c: c.execute("PRAGMA journal_mode").fetchone())
        assert mode[0] == "wal"
    finally:
        store.close()


def test_stores_opening_one_new_database_at_once_all_open(tmp_path: Path) -> None:
    """Switching a new file to WAL is refused at once ("database is locked") while another
    connection is opening it; the store waits that out. Threads meet at a barrier before each
    database, so the openings collide (the unguarded switch failed about 2% of them)."""
    threads, rounds = 6, 60
    barrier = threading.Barrier(threads)
    failures: list[str] = []

    def open_each() -> None:
        for n in range(rounds):
            barrier.wait(timeout=60)
            store = SQLiteSessionStore(tmp_path / f"db{n}.sqlite")
            try:
                store._connect()
            except SessionStoreError as exc:
                failures.append(str(exc))
            finally:
                store.close()

    workers = [threading.Thread(target=open_each) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert failures == []
    with closing(sqlite3.connect(tmp_path / "db0.sqlite")) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_built_in_stores_stamp_mtimes_in_commit_order(tmp_path: Path, kind: str) -> None:
    """One clock per store, not per key: sessions appended to within one millisecond still
    get distinct mtimes in commit order, so "the newest session" never ties."""
    store: Any = InMemorySessionStore() if kind == "memory" else SQLiteSessionStore(
        tmp_path / "clock.sqlite")
    order = [f"s{n}" for n in range(40)] + ["s3"]  # s3 is written again last
    for sid in order:
        await store.append({"project_key": "p", "session_id": sid}, [{"type": "user"}])
    listed = {s["session_id"]: s["mtime"] for s in await store.list_sessions("p")}
    assert sorted(listed, key=listed.__getitem__) == [s for s in order if s != "s3"] + ["s3"]
    assert len(set(listed.values())) == len(listed)
    if kind == "sqlite":
        store.close()


async def test_a_failed_sqlite_append_rolls_back_and_the_store_stays_usable(tmp_path,
                                                                            monkeypatch):
    from zpi_host.stores import sqlite_store

    store = SQLiteSessionStore(tmp_path / "s.sqlite")
    key: Any = {"project_key": "p", "session_id": "s"}
    try:
        await store.append(key, [{"type": "x", "uuid": "a"}])
        real = sqlite_store.fold_session_summary

        def broken(*args: Any) -> Any:
            raise RuntimeError("fold failed")

        monkeypatch.setattr(sqlite_store, "fold_session_summary", broken)
        with pytest.raises(RuntimeError, match="fold failed"):  # inside the transaction
            await store.append(key, [{"type": "x", "uuid": "b"}])
        monkeypatch.setattr(sqlite_store, "fold_session_summary", real)
        await store.append(key, [{"type": "x", "uuid": "c"}])
        assert [e["uuid"] for e in await store.load(key)] == ["a", "c"]  # b rolled back
    finally:
        store.close()


def test_hide_passwords_covers_every_place_a_spec_holds_one():
    from zpi_host.stores.session_store import hide_passwords

    spec = "host=db password='Se cret!' user=bob"
    assert hide_passwords(f"bad {spec}; token Se cret!", spec) == \
        "bad host=db password=*** user=bob; token ***"
    spec = "postgresql://bob@db/x?sslmode=require&password=p%40ssword1"
    assert hide_passwords(f"at {spec}: p@ssword1", spec) == \
        "at postgresql://bob@db/x?sslmode=require&password=***: ***"
    assert hide_passwords("no password: fine", "postgresql://bob@db/x") == "no password: fine"


class _WrongListings(InMemorySessionStore):
    """A third-party store whose listings break the protocol in one way each."""

    def __init__(self, sessions: Any = None, summaries: Any = None, subkeys: Any = None) -> None:
        super().__init__()
        self.sessions, self.summaries, self.subkeys = sessions, summaries, subkeys

    async def list_sessions(self, project_key: str) -> Any:
        return self.sessions

    async def list_session_summaries(self, project_key: str) -> Any:
        return self.summaries

    async def list_subkeys(self, key: Any) -> Any:
        return self.subkeys


@pytest.mark.parametrize(("store", "call", "expected"), [
    (_WrongListings(sessions=[{"session_id": "s", "mtime": "yesterday"}]),
     lambda s: newest_session(s, "p", 1000), r"list_sessions\(\) returned .*yesterday.* index 0"),
    (_WrongListings(sessions={"s": 1}), lambda s: newest_session(s, "p", 1000),
     r"list_sessions\(\) returned dict, not a list"),
    (_WrongListings(summaries=[{"session_id": "s", "mtime": 1, "data": None}]),
     lambda s: list_sessions_from_store(s, project_key="p"),
     r"list_session_summaries\(\) returned .* data \(an object\)"),
    (_WrongListings(subkeys=["subagents/agent-a", 7]),
     lambda s: list_subagents_from_store(s, "0f5d6a7e-3a36-4b8e-9a55-9e4bd1c1a001",
                                         project_key="p"),
     r"list_subkeys\(\) returned 7 at index 1; each item must be a string"),
])
async def test_a_store_whose_listing_breaks_the_protocol_is_named(
        store: Any, call: Any, expected: str) -> None:
    with pytest.raises(SessionStoreError, match=expected) as info:
        await call(store)
    assert "_WrongListings." in str(info.value) and "fix the store adapter" in str(info.value)
