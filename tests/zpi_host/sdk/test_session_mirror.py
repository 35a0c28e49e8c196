"""Mirroring a session to a session store (``AgentOptions.session_store``): what reaches the
store, when, what a failing store does, and resuming from the mirror."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from zpi_host.errors import UsageError
from zpi_host.sdk import (
    InMemorySessionStore,
    MirrorErrorMessage,
    ResultMessage,
    SQLiteSessionStore,
    project_key_for_directory,
    query,
)
from zpi_host.stores.mirror import TranscriptMirror

from .conftest import collect

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _local_lines(backend: Any, session_id: str) -> list[dict[str, Any]]:
    files = list((backend.agent_dir / "sessions").rglob(f"{session_id}.jsonl"))
    assert len(files) == 1
    return [json.loads(line) for line in files[0].read_text().splitlines()]


def _key(backend: Any, session_id: str) -> Any:
    return {"project_key": project_key_for_directory(backend.cwd), "session_id": session_id}


@pytest.mark.parametrize("flush", ["batched", "eager"])
async def test_every_local_record_reaches_the_store_in_order(scripted, flush):
    store = InMemorySessionStore()
    scripted.turns({"text": "one"})
    messages = await collect(query(prompt="hello", options=scripted.options(
        session_store=store, session_store_flush=flush)))
    sid = messages[-1].session_id
    mirrored = await store.load(_key(scripted, sid))
    assert mirrored == _local_lines(scripted, sid)  # verbatim, after query exit
    assert [e["type"] for e in mirrored][:1] == ["header"]
    summary = (await store.list_session_summaries(_key(scripted, sid)["project_key"]))[0]
    assert summary["data"]["first_prompt"] == "hello"


async def test_explicit_project_key_overrides_the_cwd(scripted):
    store = InMemorySessionStore()
    scripted.turns({"text": "x"})
    messages = await collect(query(prompt="hi", options=scripted.options(
        session_store=store, project_key="tenant-7")))
    listed = await store.list_sessions("tenant-7")
    assert [s["session_id"] for s in listed] == [messages[-1].session_id]
    assert await store.list_sessions(project_key_for_directory(scripted.cwd)) == []


class _FlakyStore(InMemorySessionStore):
    """Fails its first ``failures`` appends."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures, self.calls = failures, 0

    async def append(self, key: Any, entries: list[Any]) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError(f"store down (call {self.calls})")
        await super().append(key, entries)


async def test_a_failed_append_is_retried(scripted):
    store = _FlakyStore(failures=2)
    scripted.turns({"text": "ok"})
    messages = await collect(query(prompt="hi", options=scripted.options(
        session_store=store, session_store_flush="eager")))
    assert not any(isinstance(m, MirrorErrorMessage) for m in messages)
    sid = messages[-1].session_id
    assert await store.load(_key(scripted, sid)) == _local_lines(scripted, sid)


async def test_a_store_that_keeps_failing_gives_mirror_error_and_the_session_goes_on(
        scripted):
    store = _FlakyStore(failures=10**6)
    scripted.turns({"text": "still here"})
    errors: list[str] = []
    messages = await collect(query(prompt="hi", options=scripted.options(
        session_store=store, stderr=errors.append)))
    result = messages[-1]
    assert isinstance(result, ResultMessage) and not result.is_error
    assert result.result == "still here"
    mirror_errors = [m for m in messages if isinstance(m, MirrorErrorMessage)]
    assert mirror_errors and mirror_errors[0].subtype == "mirror_error"
    assert "failed 3 times" in mirror_errors[0].error
    assert mirror_errors[0].key == _key(scripted, result.session_id)
    assert store.calls % 3 == 0  # 3 attempts per batch, no more
    assert any("store down" in e for e in errors)
    assert _local_lines(scripted, result.session_id)[-1]["type"] == "assistant"  # local intact


async def test_resume_reads_the_mirror_when_the_local_file_is_gone(scripted, tmp_path):
    store = SQLiteSessionStore(tmp_path / "shared.sqlite")
    try:
        scripted.turns({"text": "first answer"})
        first = await collect(query(prompt="remember 42", options=scripted.options(
            session_store=store)))
        sid = first[-1].session_id
        for path in (scripted.agent_dir / "sessions").rglob(f"{sid}.jsonl"):
            path.unlink()  # another host: only the store has the session
        scripted.turns({"text": "second answer"})
        second = await collect(query(prompt="what number?", options=scripted.options(
            session_store=store, resume=sid)))
        assert second[-1].session_id == sid and second[-1].result == "second answer"
        seen = json.dumps([str(m) for m in scripted.requests()[-1].messages])
        assert "remember 42" in seen  # the model got the mirrored history
        mirrored = await store.load(_key(scripted, sid))
        assert [e["type"] for e in mirrored].count("user") == 2
        uuids = [e["uuid"] for e in mirrored]
        assert len(uuids) == len(set(uuids))
        leftovers = list(Path(__import__("tempfile").gettempdir()).glob(
            "zpi-store-resume-*"))
        assert not any((p / f"{sid}.jsonl").exists() for p in leftovers)
    finally:
        store.close()


async def test_resume_falls_back_to_the_local_session_when_the_store_has_none(scripted):
    scripted.turns({"text": "local only"})
    first = await collect(query(prompt="local prompt", options=scripted.options()))
    sid = first[-1].session_id
    store = InMemorySessionStore()
    scripted.turns({"text": "resumed"})
    second = await collect(query(prompt="again", options=scripted.options(
        session_store=store, resume=sid)))
    assert second[-1].result == "resumed"
    # the local records, the older ones included, are now in the store
    assert await store.load(_key(scripted, sid)) == _local_lines(scripted, sid)


class _BrokenLoad(InMemorySessionStore):
    async def load(self, key: Any) -> Any:
        raise ConnectionError("cannot reach the store")


async def test_a_load_error_does_not_fall_back(scripted):
    scripted.turns({"text": "local"})
    sid = (await collect(query(prompt="p", options=scripted.options())))[-1].session_id
    with pytest.raises(ConnectionError, match="cannot reach the store"):
        await collect(query(prompt="again", options=scripted.options(
            session_store=_BrokenLoad(), resume=sid)))


async def test_continue_takes_the_newest_mirrored_session(scripted):
    store = InMemorySessionStore()
    ids = []
    for text in ("a", "b"):
        scripted.turns({"text": text})
        ids.append((await collect(query(prompt=text, options=scripted.options(
            session_store=store))))[-1].session_id)
    scripted.turns({"text": "c"})
    third = await collect(query(prompt="go on", options=scripted.options(
        session_store=store, continue_conversation=True)))
    assert third[-1].session_id == ids[1]
    empty = InMemorySessionStore()
    scripted.turns({"text": "new"})
    fresh = await collect(query(prompt="go on", options=scripted.options(
        session_store=empty, continue_conversation=True)))
    assert fresh[-1].session_id not in ids


async def test_store_options_that_cannot_work_are_refused(scripted):
    store = InMemorySessionStore()
    with pytest.raises(UsageError, match="persist_session=True"):
        scripted.options(session_store=store, persist_session=False).check()
    with pytest.raises(UsageError, match="session_store_flush must be one of"):
        scripted.options(session_store=store, session_store_flush="later").check()
    with pytest.raises(UsageError, match="lacks append, load"):
        scripted.options(session_store=object()).check()
    with pytest.raises(UsageError, match="project_key chooses a session store's scope"):
        scripted.options(project_key="team").check()
    for refused in ({"persist_session": False},):
        scripted.turns({"text": "never"})
        with pytest.raises(UsageError, match="session_store"):  # refused before the start
            await collect(query(prompt="go", options=scripted.options(session_store=store,
                                                                      **refused)))
    assert await store.list_sessions(project_key_for_directory(scripted.cwd)) == []
    assert not list(scripted.agent_dir.rglob("*.jsonl"))


async def test_fork_session_with_a_store_forks_in_the_store(scripted):
    store = InMemorySessionStore()
    scripted.turns({"text": "base answer"})
    sid = (await collect(query(prompt="base", options=scripted.options(
        session_store=store))))[-1].session_id
    for path in (scripted.agent_dir / "sessions").rglob("*.jsonl"):
        path.unlink()
    scripted.turns({"text": "forked answer"})
    forked = await collect(query(prompt="branch", options=scripted.options(
        session_store=store, resume=sid, fork_session=True)))
    fork_id = forked[-1].session_id
    assert fork_id != sid and forked[-1].result == "forked answer"
    assert "base" in str(list(scripted.requests()[-1].messages))
    source = await store.load(_key(scripted, sid))
    assert [e["type"] for e in source].count("user") == 1  # the source is untouched
    fork = await store.load(_key(scripted, fork_id))
    assert fork[0]["forkedFrom"]["sessionId"] == sid
    assert [e["type"] for e in fork].count("user") == 2
    uuids = [e["uuid"] for e in fork]
    assert len(uuids) == len(set(uuids))


async def test_fork_session_of_a_session_the_store_lacks_forks_the_local_one(scripted):
    scripted.turns({"text": "local answer"})
    sid = (await collect(query(prompt="local", options=scripted.options())))[-1].session_id
    store = InMemorySessionStore()
    scripted.turns({"text": "forked"})
    forked = await collect(query(prompt="branch", options=scripted.options(
        session_store=store, resume=sid, fork_session=True)))
    fork_id = forked[-1].session_id
    assert fork_id != sid
    assert await store.load(_key(scripted, sid)) is None
    assert await store.load(_key(scripted, fork_id)) == _local_lines(scripted, fork_id)


class _Recorder:
    def __init__(self) -> None:
        self.batches: list[list[Any]] = []

    async def append(self, key: Any, entries: list[Any]) -> None:
        self.batches.append(entries)

    async def load(self, key: Any) -> Any:
        return None


def _line(n: int) -> bytes:
    return json.dumps({"type": "x", "uuid": str(n)}).encode()


async def test_batched_mirror_flushes_at_100_records_at_turn_end_and_after_a_while():
    store = _Recorder()
    mirror = TranscriptMirror(store, {"project_key": "p", "session_id": "s"})
    async with anyio.create_task_group() as group:
        group.start_soon(mirror.run)
        for n in range(100):
            mirror.record(None, _line(n))  # type: ignore[arg-type]
        await anyio.wait_all_tasks_blocked()
        assert [len(b) for b in store.batches] == [100]  # the count threshold, no waiting
        for n in range(100, 105):
            mirror.record(None, _line(n))  # type: ignore[arg-type]
        await mirror.turn_end()
        assert [len(b) for b in store.batches] == [100, 5]
        mirror.record(None, _line(105))  # type: ignore[arg-type]
        with anyio.fail_after(10):  # nothing else happens: the 100 ms timer sends it
            while len(store.batches) < 3:
                await anyio.sleep(0.01)
        mirror.record(None, b'{"type": "x", "pad": "' + b"y" * 300_000 + b'"}')  # type: ignore[arg-type]
        await anyio.wait_all_tasks_blocked()
        assert len(store.batches) == 4  # the size threshold (256 KiB)
        mirror.record(None, _line(106))  # type: ignore[arg-type]
        await mirror.close()  # waits for what is scheduled
    assert [e.get("uuid") for b in store.batches for e in b] == \
        [str(n) for n in range(106)] + [None, "106"]
    assert mirror.appended == 108


async def test_eager_mirror_sends_each_commit_without_waiting():
    store = _Recorder()
    mirror = TranscriptMirror(store, {"project_key": "p", "session_id": "s"},
                              flush_mode="eager")
    async with anyio.create_task_group() as group:
        group.start_soon(mirror.run)
        for n in range(3):
            mirror.record(None, _line(n))  # type: ignore[arg-type]
            await anyio.wait_all_tasks_blocked()
            assert len(store.batches) == n + 1
        await mirror.close()


class _Hanging(_Recorder):
    calls = 0

    async def append(self, key: Any, entries: list[Any]) -> None:
        self.calls += 1
        await anyio.sleep_forever()


async def test_an_append_that_times_out_is_not_retried(monkeypatch):
    from zpi_host.stores import mirror as mirror_module

    monkeypatch.setattr(mirror_module, "APPEND_TIMEOUT", 0.01)
    store, errors = _Hanging(), []
    mirror = TranscriptMirror(store, {"project_key": "p", "session_id": "s"},
                              on_error=lambda key, error: errors.append((key, error)))
    async with anyio.create_task_group() as group:
        group.start_soon(mirror.run)
        mirror.record(None, _line(1))  # type: ignore[arg-type]
        await mirror.close()
    assert store.calls == 1
    assert errors == [({"project_key": "p", "session_id": "s"},
                       "append of 1 record(s) timed out after 0.01 s (not retried: it may "
                       "still land)")]


async def test_fork_session_with_a_store_and_session_id_names_the_fork(scripted):
    store = InMemorySessionStore()
    scripted.turns({"text": "base answer"})
    sid = (await collect(query(prompt="base", options=scripted.options(
        session_store=store))))[-1].session_id
    wanted = "0b6b1c1e-5d0a-4f55-9d1e-3f5a2f1d6c2b"
    scripted.turns({"text": "forked answer"})
    forked = await collect(query(prompt="branch", options=scripted.options(
        session_store=store, resume=sid, fork_session=True, session_id=wanted)))
    assert forked[-1].session_id == wanted
    assert [e["type"] for e in await store.load(_key(scripted, wanted))].count("user") == 2


async def test_continue_takes_the_newest_main_record_by_store_mtime(scripted):
    from zpi_host.sdk import rename_session_via_store

    store = InMemorySessionStore()
    ids = []
    for text in ("a", "b"):
        scripted.turns({"text": text})
        ids.append((await collect(query(prompt=text, options=scripted.options(
            session_store=store))))[-1].session_id)
    first, second = ids
    # the older session is written last (its mtime is the newest), while a sub-transcript
    # of the other one does not count
    await rename_session_via_store(store, first, "touched", str(scripted.cwd))
    await store.append({**_key(scripted, second), "subpath": "subagents/agent-x"},
                       [{"type": "user", "uuid": "11111111-1111-4111-8111-111111111111"}])
    scripted.turns({"text": "c"})
    third = await collect(query(prompt="go on", options=scripted.options(
        session_store=store, continue_conversation=True)))
    assert third[-1].session_id == first


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
async def test_a_session_holding_a_lone_surrogate_is_mirrored_and_resumed(scripted, tmp_path,
                                                                          kind):
    """Transcript lines are ASCII JSON, so a record may hold a lone surrogate (here from the
    prompt): the store must keep it and resuming from the store must write it back."""
    from zpi_host.sdk import get_session_messages_from_store

    store: Any = SQLiteSessionStore(tmp_path / "s.sqlite") if kind == "sqlite" else \
        InMemorySessionStore()
    try:
        scripted.turns({"text": "first answer"})
        first = await collect(query(prompt="odd \ud800 text", options=scripted.options(
            session_store=store)))
        assert not [m for m in first if isinstance(m, MirrorErrorMessage)]
        sid = first[-1].session_id
        assert await store.load(_key(scripted, sid)) == _local_lines(scripted, sid)
        messages = await get_session_messages_from_store(
            store, sid, project_key=_key(scripted, sid)["project_key"])
        assert messages[0].message["content"] == "odd \ud800 text"
        for path in (scripted.agent_dir / "sessions").rglob(f"{sid}.jsonl"):
            path.unlink()  # only the store has the session now
        scripted.turns({"text": "second answer"})
        second = await collect(query(prompt="again", options=scripted.options(
            session_store=store, resume=sid)))
        assert second[-1].session_id == sid and second[-1].result == "second answer"
        assert next(iter(scripted.requests()[-1].messages)).content[0].text == "odd \ud800 text"
    finally:
        if kind == "sqlite":
            store.close()


async def _stored_under_another_id(scripted: Any, store: Any) -> tuple[str, str, list[Any]]:
    """A session mirrored to ``store``, its records then filed under a new id as well (what a
    shared store may hold); its local file removed. Returns (its id, the new id, records)."""
    scripted.turns({"text": "first answer"})
    first = await collect(query(prompt="private prompt", options=scripted.options(
        session_store=store)))
    sid = first[-1].session_id
    entries = await store.load(_key(scripted, sid))
    other = "0b6b1c1e-5d0a-4f55-9d1e-3f5a2f1d6c2b"
    await store.append(_key(scripted, other), entries)
    for path in (scripted.agent_dir / "sessions").rglob(f"{sid}.jsonl"):
        path.unlink()
    return sid, other, entries


async def test_resuming_a_store_key_holding_another_sessions_records_is_refused(scripted):
    from zpi_host.sdk import rename_session_via_store
    from zpi_host.transcript import TranscriptError

    store = InMemorySessionStore()
    sid, other, entries = await _stored_under_another_id(scripted, store)
    scripted.turns({"text": "never"})
    with pytest.raises(TranscriptError) as caught:
        await collect(query(prompt="p", options=scripted.options(session_store=store,
                                                                   resume=other)))
    message = str(caught.value)
    assert f"<store {_key(scripted, other)['project_key']}/{other}>:1:" in message
    assert f"sessionId is {sid!r}" in message and "sessions delete" in message
    with pytest.raises(TranscriptError, match="another session's records"):
        await rename_session_via_store(store, other, "renamed",
                                       project_key=_key(scripted, other)["project_key"])
    assert await store.load(_key(scripted, sid)) == entries  # the other session untouched
    assert await store.load(_key(scripted, other)) == entries
    assert not list((scripted.agent_dir / "sessions").rglob("*.jsonl"))


async def test_a_damaged_store_record_is_reported_by_store_key_and_entry(scripted):
    from zpi_host.transcript import TranscriptError

    store = InMemorySessionStore()
    _, _, entries = await _stored_under_another_id(scripted, store)
    damaged = "9d7e4c1a-0000-4f55-9d1e-3f5a2f1d6c2b"
    bad = [dict(e, sessionId=damaged) for e in entries]
    bad[3]["type"] = 5
    await store.append(_key(scripted, damaged), bad)
    with pytest.raises(TranscriptError) as caught:
        await collect(query(prompt="p", options=scripted.options(session_store=store,
                                                                   resume=damaged)))
    message = str(caught.value)
    assert message.startswith(f"<store {_key(scripted, damaged)['project_key']}/{damaged}>:4: "
                              "the field 'type' must be a string")
    assert "zpi-store-resume" not in message and "by hand" not in message
    assert await store.load(_key(scripted, damaged)) == bad
    unversioned = "9d7e4c1a-1111-4f55-9d1e-3f5a2f1d6c2b"
    await store.append(_key(scripted, unversioned), [
        {k: v for k, v in dict(e, sessionId=unversioned).items() if k != "version"}
        for e in entries])
    with pytest.raises(TranscriptError, match=r"/9d7e4c1a-1111-[^>]*>:1: unsupported "
                       r"transcript format version None .*sessions delete"):
        await collect(query(prompt="p", options=scripted.options(session_store=store,
                                                                   resume=unversioned)))


class _Switchable(InMemorySessionStore):
    """A store whose appends fail while ``down`` (its loads still work)."""

    down = False

    async def append(self, key: Any, entries: list[Any]) -> None:
        if self.down:
            raise ConnectionError("store unreachable")
        await super().append(key, entries)


def _prompts(entries: list[Any]) -> list[str]:
    return ["".join(c.get("text", "") for c in e["message"]["content"]) for e in entries
            if e["type"] == "user"]


async def test_a_run_resumed_from_the_store_keeps_its_records_when_the_store_fails(scripted):
    """Resumed from the store on a host without the file, the run writes to the session's
    durable file in the agent dir: a store failing meanwhile loses nothing, the error says
    where the records are, and the next resume sends the store what it lacks."""
    store = _Switchable()
    scripted.turns({"text": "first answer"})
    sid = (await collect(query(prompt="first", options=scripted.options(
        session_store=store))))[-1].session_id
    for path in (scripted.agent_dir / "sessions").rglob(f"{sid}.jsonl"):
        path.unlink()  # another host: only the store has the session
    store.down = True
    scripted.turns({"text": "second answer"})
    second = await collect(query(prompt="second", options=scripted.options(
        session_store=store, resume=sid)))
    assert second[-1].result == "second answer"
    (local,) = (scripted.agent_dir / "sessions").rglob(f"{sid}.jsonl")
    assert _prompts([json.loads(line) for line in local.read_text().splitlines()]) == [
        "first", "second"]
    (error,) = {m.error for m in second if isinstance(m, MirrorErrorMessage)}
    assert f"every record is kept in {local}" in error and "resuming the session" in error
    assert _prompts(await store.load(_key(scripted, sid))) == ["first"]
    store.down = False
    scripted.turns({"text": "third answer"})
    await collect(query(prompt="third", options=scripted.options(session_store=store,
                                                                  resume=sid)))
    assert "second" in str(list(scripted.requests()[-1].messages))
    mirrored = await store.load(_key(scripted, sid))
    assert _prompts(mirrored) == ["first", "second", "third"]
    assert mirrored == _local_lines(scripted, sid)


async def test_resume_takes_the_local_records_the_store_missed_and_sends_them(scripted):
    """A run whose mirror fell behind (the store failed, or the host was killed before the
    batch went): resuming from the store uses the newer local file, not the store's copy."""
    from zpi_host.sdk import SDKClient

    store = _Switchable()
    scripted.turns({"text": "one"}, {"text": "two"})
    async with SDKClient(scripted.options(session_store=store)) as client:
        await client.query("first")
        sid = [m async for m in client.receive_response()][-1].session_id
        store.down = True
        await client.query("second")
        [m async for m in client.receive_response()]
    store.down = False
    assert _prompts(await store.load(_key(scripted, sid))) == ["first"]
    scripted.turns({"text": "three"})
    await collect(query(prompt="third", options=scripted.options(session_store=store,
                                                                  resume=sid)))
    assert "second" in str(list(scripted.requests()[-1].messages))
    assert await store.load(_key(scripted, sid)) == _local_lines(scripted, sid)


async def test_resume_replaces_an_older_local_file_and_refuses_a_diverged_one(scripted,
                                                                           tmp_path):
    from zpi_host.sdk import SessionStoreError, rename_session_via_store

    store = _Switchable()
    scripted.turns({"text": "one"})
    sid = (await collect(query(prompt="first", options=scripted.options(
        session_store=store))))[-1].session_id
    # another host continues the session from the store: this host's file is older
    elsewhere = tmp_path / "host-b"
    scripted.turns({"text": "two"})
    await collect(query(prompt="on host b", options=scripted.options(
        session_store=store, resume=sid, agent_dir=elsewhere)))
    scripted.turns({"text": "three"})
    await collect(query(prompt="back on a", options=scripted.options(
        session_store=store, resume=sid)))
    assert "on host b" in str(list(scripted.requests()[-1].messages))
    assert _prompts(_local_lines(scripted, sid)) == ["first", "on host b", "back on a"]
    # now both change: a local turn the store misses, a title the file lacks
    store.down = True
    scripted.turns({"text": "four"})
    await collect(query(prompt="local only", options=scripted.options(
        session_store=store, resume=sid)))
    store.down = False
    await rename_session_via_store(store, sid, "renamed", str(scripted.cwd))
    before = _local_lines(scripted, sid)
    scripted.turns({"text": "never"})
    with pytest.raises(SessionStoreError) as caught:
        await collect(query(prompt="p", options=scripted.options(session_store=store,
                                                                   resume=sid)))
    message = str(caught.value)
    assert "the local file" in message and "only in the file, 1 only in the store" in message
    assert "Move the file away" in message and "sessions delete" in message
    assert _local_lines(scripted, sid) == before  # nothing changed


async def test_an_agent_dir_that_cannot_be_written_is_a_clear_error(scripted, tmp_path):
    from zpi_host.transcript import TranscriptError

    store = InMemorySessionStore()
    scripted.turns({"text": "one"})
    sid = (await collect(query(prompt="first", options=scripted.options(
        session_store=store))))[-1].session_id
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the agent dir should be")
    scripted.turns({"text": "never"})
    with pytest.raises(TranscriptError, match="cannot write the session's local file from "
                       "the store") as caught:
        await collect(query(prompt="p", options=scripted.options(
            session_store=store, resume=sid, agent_dir=blocked)))
    assert "nothing was resumed" in str(caught.value)
