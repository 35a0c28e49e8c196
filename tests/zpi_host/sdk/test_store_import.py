"""``import_session_to_store`` (claude-agent-sdk's name and arguments): a local session copied
record by record into a store, under the key a live mirror would use, so that it resumes from
the store; and the ``SessionStore`` protocol's optional methods, which a store that subclasses
it may leave out."""

from __future__ import annotations

import json
from typing import Any

import pytest

from zpi_host.sdk import (
    ClaudeSDKError,
    InMemorySessionStore,
    SessionKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreError,
    import_session_to_store,
    list_sessions_from_store,
    project_key_for_directory,
    query,
)
from zpi_host.stores.session_store import supports

from .conftest import collect

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Recording(InMemorySessionStore):
    def __init__(self) -> None:
        super().__init__()
        self.batches: list[tuple[SessionKey, int]] = []

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        self.batches.append((key, len(entries)))
        await super().append(key, entries)


async def _local_session(scripted: Any) -> tuple[str, list[dict[str, Any]]]:
    scripted.turns({"text": "first answer"}, {"text": "second answer"})
    messages = await collect(query(prompt="one", options=scripted.options()))
    session_id = messages[-1].session_id
    (path,) = (scripted.agent_dir / "sessions").rglob(f"{session_id}.jsonl")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return session_id, lines


async def test_a_local_session_is_copied_in_batches_and_resumes_from_the_store(scripted):
    session_id, lines = await _local_session(scripted)
    store = Recording()
    await import_session_to_store(session_id, store, directory=str(scripted.cwd), batch_size=2,
                                  agent_dir=scripted.agent_dir)
    key: SessionKey = {"project_key": project_key_for_directory(str(scripted.cwd)),
                       "session_id": session_id}
    assert await store.load(key) == lines
    assert [n for _, n in store.batches] == [2] * (len(lines) // 2) + [len(lines) % 2] * (
        len(lines) % 2)
    await import_session_to_store(session_id, store, agent_dir=scripted.agent_dir)
    assert await store.load(key) == lines  # the same key without directory; nothing doubled
    for path in (scripted.agent_dir / "sessions").rglob("*.jsonl"):
        path.unlink()
    listed = await list_sessions_from_store(store, str(scripted.cwd))
    assert [i.session_id for i in listed] == [session_id]
    scripted.turns({"text": "resumed"})
    again = await collect(query(prompt="two", options=scripted.options(
        session_store=store, resume=session_id)))
    assert again[-1].session_id == session_id and again[-1].result == "resumed"


async def test_a_missing_session_or_a_bad_batch_size_is_a_claude_sdk_error(scripted):
    with pytest.raises(ClaudeSDKError, match="no local session"):
        await import_session_to_store("0b3f8a52-93c4-4f9e-8d8e-1c2b3a4d5e6f",
                                      InMemorySessionStore(), agent_dir=scripted.agent_dir)
    session_id, _ = await _local_session(scripted)
    with pytest.raises(SessionStoreError, match="batch_size"):
        await import_session_to_store(session_id, InMemorySessionStore(), batch_size=0,
                                      agent_dir=scripted.agent_dir)


async def test_a_damaged_local_session_is_not_imported(scripted):
    session_id, _ = await _local_session(scripted)
    (path,) = (scripted.agent_dir / "sessions").rglob(f"{session_id}.jsonl")
    text = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([text[0], "{not json", *text[1:]]) + "\n", encoding="utf-8")
    store = Recording()
    with pytest.raises(ClaudeSDKError, match=r"\.jsonl:2: not valid JSON"):
        await import_session_to_store(session_id, store, agent_dir=scripted.agent_dir)
    assert store.batches == []


class Minimal(SessionStore):
    """A store written as claude-agent-sdk's docs show: only the two required methods."""

    def __init__(self) -> None:
        self.entries: dict[str, list[Any]] = {}

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        self.entries.setdefault(json.dumps(key, sort_keys=True), []).extend(entries)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        return self.entries.get(json.dumps(key, sort_keys=True))


async def test_a_subclass_may_leave_the_optional_methods_out(scripted):
    store = Minimal()
    assert [m for m in ("list_sessions", "list_session_summaries", "delete", "list_subkeys")
            if supports(store, m)] == []
    assert supports(store, "load") and supports(InMemorySessionStore(), "list_subkeys")
    with pytest.raises(NotImplementedError):
        await store.list_sessions("p")
    session_id, lines = await _local_session(scripted)
    await import_session_to_store(session_id, store, agent_dir=scripted.agent_dir)
    assert list(store.entries.values()) == [lines]
    with pytest.raises(SessionStoreError, match="list_sessions"):
        await list_sessions_from_store(store, str(scripted.cwd))


def test_a_session_key_needs_no_subpath() -> None:
    assert SessionKey.__required_keys__ == {"project_key", "session_id"}
    assert SessionKey.__optional_keys__ == {"subpath"}
    assert SessionStoreEntry.__required_keys__ == {"type"}
