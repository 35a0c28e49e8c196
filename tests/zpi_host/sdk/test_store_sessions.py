"""The store-backed session helpers (``*_from_store``, ``*_via_store``): they read and write
the session store only, never the local files."""

from __future__ import annotations

from typing import Any

import pytest

from zpi_host.sdk import (
    InMemorySessionStore,
    SessionStoreError,
    delete_session_via_store,
    fork_session_via_store,
    get_session_info_from_store,
    get_session_messages_from_store,
    list_sessions_from_store,
    project_key_for_directory,
    query,
    rename_session_via_store,
    tag_session_via_store,
)
from zpi_host.transcript import SessionNotFoundError

from .conftest import collect

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _child(cwd: Any) -> list[dict[str, Any]]:
    """A valid sub-agent transcript: a header and one user message."""
    from zpi_host.providers.messages import UserMessage
    from zpi_host.transcript import SessionManager
    from zpi_host.transcript.codec import encode_record

    owner = SessionManager.in_memory(cwd)
    owner.append_message(UserMessage.text("child task"))
    return [encode_record(r) for r in owner.records]


def _text(message: Any) -> str:
    content = message.message["content"]
    return content if isinstance(content, str) else content[0]["text"]


async def _mirrored(scripted: Any, store: Any, *prompts: str) -> list[str]:
    ids = []
    for prompt in prompts:
        scripted.turns({"text": f"answer to {prompt}"})
        messages = await collect(query(prompt=prompt, options=scripted.options(
            session_store=store)))
        ids.append(messages[-1].session_id)
    for path in (scripted.agent_dir / "sessions").rglob("*.jsonl"):
        path.unlink()  # the helpers must not need the local files
    return ids


async def test_list_info_and_messages_come_from_the_store(scripted):
    store = InMemorySessionStore()
    first, second = await _mirrored(scripted, store, "one", "two")
    directory = str(scripted.cwd)
    listed = await list_sessions_from_store(store, directory)
    assert [i.session_id for i in listed] == [second, first]  # newest first
    assert listed[1].first_prompt == "one" and listed[1].cwd == directory
    assert [i.session_id for i in await list_sessions_from_store(store, directory, limit=1,
                                                                 offset=1)] == [first]
    info = await get_session_info_from_store(store, first, directory)
    assert info is not None and info.summary == "one"
    assert await get_session_info_from_store(store, "0" * 8 + "-0000-4000-8000-" + "0" * 12,
                                             directory) is None
    messages = await get_session_messages_from_store(store, first, directory)
    assert [(m.type, _text(m)) for m in messages] == [
        ("user", "one"), ("assistant", "answer to one")]
    assert await get_session_messages_from_store(
        store, "0" * 8 + "-0000-4000-8000-" + "0" * 12, directory) == []


async def test_rename_and_tag_append_to_the_store(scripted):
    store = InMemorySessionStore()
    (sid,) = await _mirrored(scripted, store, "hello")
    directory = str(scripted.cwd)
    await rename_session_via_store(store, sid, "My title", directory)
    await tag_session_via_store(store, sid, "urgent", directory)
    info = await get_session_info_from_store(store, sid, directory)
    assert info is not None and (info.custom_title, info.tag) == ("My title", "urgent")
    (listed,) = await list_sessions_from_store(store, directory)
    assert listed.summary == "My title"
    await tag_session_via_store(store, sid, None, directory)
    info = await get_session_info_from_store(store, sid, directory)
    assert info is not None and info.tag is None
    with pytest.raises(SessionNotFoundError, match="no session"):
        await rename_session_via_store(store, "0" * 8 + "-0000-4000-8000-" + "0" * 12, "t",
                                       directory)


async def test_fork_copies_the_session_and_its_subkeys_in_the_store(scripted):
    store = InMemorySessionStore()
    (sid,) = await _mirrored(scripted, store, "base")
    project = project_key_for_directory(scripted.cwd)
    await store.append({"project_key": project, "session_id": sid,
                        "subpath": "subagents/agent-1"}, _child(scripted.cwd))
    result = await fork_session_via_store(store, sid, str(scripted.cwd), title="Fork")
    assert result.session_id != sid
    forked = await store.load({"project_key": project, "session_id": result.session_id})
    assert forked[0]["type"] == "header" and forked[0]["forkedFrom"]["sessionId"] == sid
    assert await store.list_subkeys({"project_key": project,
                                     "session_id": result.session_id}) == ["subagents/agent-1"]
    messages = await get_session_messages_from_store(store, result.session_id,
                                                     str(scripted.cwd))
    assert [_text(m) for m in messages] == ["base", "answer to base"]
    info = await get_session_info_from_store(store, result.session_id, str(scripted.cwd))
    assert info is not None and info.custom_title == "Fork"
    # the source is untouched
    assert len(await get_session_messages_from_store(store, sid, str(scripted.cwd))) == 2


class _FailsMain(InMemorySessionStore):
    async def append(self, key: Any, entries: list[Any]) -> None:
        if key["session_id"] != self.source and "subpath" not in key:
            raise ConnectionError("store went away")
        await super().append(key, entries)


async def test_a_failed_fork_leaves_the_source_and_cleans_the_target(scripted):
    store = _FailsMain()
    project = project_key_for_directory(scripted.cwd)
    store.source = "unset"
    scripted.turns({"text": "x"})
    # mirror with a healthy store first, then copy into the failing one
    healthy = InMemorySessionStore()
    (sid,) = await _mirrored(scripted, healthy, "p")
    store.source = sid
    key = {"project_key": project, "session_id": sid}
    await store.append(key, await healthy.load(key))
    await store.append({**key, "subpath": "subagents/agent-1"}, _child(scripted.cwd))
    with pytest.raises(ConnectionError, match="store went away"):
        await fork_session_via_store(store, sid, str(scripted.cwd))
    assert [s["session_id"] for s in await store.list_sessions(project)] == [sid]
    assert set(store._entries) == {(project, sid, ""), (project, sid, "subagents/agent-1")}


async def test_a_damaged_child_history_stops_a_fork_before_anything_is_written(scripted):
    from zpi_host.transcript import TranscriptError

    store = InMemorySessionStore()
    (sid,) = await _mirrored(scripted, store, "p")
    project = project_key_for_directory(scripted.cwd)
    key = {"project_key": project, "session_id": sid}
    await store.append({**key, "subpath": "subagents/agent-1"}, _child(scripted.cwd))
    await store.append({**key, "subpath": "subagents/agent-2"}, [{"type": "x", "uuid": "c"}])
    with pytest.raises(TranscriptError, match="subagents/agent-2"):
        await fork_session_via_store(store, sid, str(scripted.cwd))
    assert set(store._entries) == {(project, sid, ""), (project, sid, "subagents/agent-1"),
                                   (project, sid, "subagents/agent-2")}


class _NoDelete:
    async def append(self, key: Any, entries: Any) -> None: ...

    async def load(self, key: Any) -> Any:
        return None


async def test_delete_and_fork_need_the_optional_methods(scripted):
    sid = "0" * 8 + "-0000-4000-8000-" + "0" * 12
    with pytest.raises(SessionStoreError,
                       match=r"deleting a session .* lacks delete, list_subkeys"):
        await delete_session_via_store(_NoDelete(), sid)
    with pytest.raises(SessionStoreError, match=r"forking a session .* lacks list_subkeys"):
        await fork_session_via_store(_NoDelete(), sid)
    with pytest.raises(SessionStoreError, match="list_sessions"):
        await list_sessions_from_store(_NoDelete())


async def test_delete_removes_the_session_and_twice_is_fine(scripted):
    store = InMemorySessionStore()
    (sid,) = await _mirrored(scripted, store, "gone")
    await delete_session_via_store(store, sid, str(scripted.cwd))
    await delete_session_via_store(store, sid, str(scripted.cwd))
    assert await get_session_info_from_store(store, sid, str(scripted.cwd)) is None
    assert await list_sessions_from_store(store, str(scripted.cwd)) == []


async def test_a_store_fork_is_titled_and_may_be_named(scripted):
    from zpi_host.transcript import SessionExistsError

    store = InMemorySessionStore()
    (first, second) = await _mirrored(scripted, store, "one", "two")
    directory = str(scripted.cwd)
    wanted = "0b6b1c1e-5d0a-4f55-9d1e-3f5a2f1d6c2b"
    fork = await fork_session_via_store(store, first, directory, new_id=wanted)
    assert fork.session_id == wanted
    info = await get_session_info_from_store(store, wanted, directory)
    assert info.custom_title == "one (fork)"
    with pytest.raises(SessionExistsError, match="has a session with that id"):
        await fork_session_via_store(store, first, directory, new_id=second)
