"""create_session(storage=...) over SQLite and a real PostgreSQL: a session with no JSONL,
resumed from its current state; lazy reads; recovery; the helpers; JSONL import and export."""

from __future__ import annotations

from typing import Any

import pytest

from zpi_host import create_session
from zpi_host.errors import UsageError
from zpi_host.providers.messages import AssistantMessage, TextContent, ToolCallContent
from zpi_host.stores import transcript_helpers as helpers
from zpi_host.testing import FunctionModel
from zpi_host.transcript.native import ChainError, SessionOwnedError
from zpi_host.transcript.native_session import StoreSessionManager
from zpi_host.transcript.store import INTERRUPTED_TEXT

pytestmark = pytest.mark.anyio


def echo(request: Any) -> str:
    return f"seen {len(request.messages)}"


async def _session(tmp_path, store, state=None, **kw: Any) -> Any:
    return await create_session(model="fn:m", provider=FunctionModel(echo), cwd=tmp_path,
                                settings={}, agent_dir=tmp_path / "agent",
                                storage={"transcript": store, "current_state": state}, **kw)


async def test_a_session_lives_in_the_store_and_resumes_from_its_state(make_store, tmp_path):
    store = make_store()
    session = await _session(tmp_path, store)
    assert (await session.run("one")).result == "seen 1"
    await session.run("two")
    sid = session.session_id
    await session.dispose()
    assert not list((tmp_path / "agent").rglob("*.jsonl"))  # no JSONL anywhere
    state = store.current_state(sid)
    assert state.snapshot_uuid is not None and state.first_prompt == "one"
    again = await _session(tmp_path, make_store(), state)
    assert (await again.run("three")).result == "seen 5"  # the history came back
    assert again.store.latest_snapshot() is not None
    await again.dispose()
    assert [m.role for m in helpers.get_session_messages(store, sid)] == ["user", "assistant"] * 3


async def test_storage_options_are_checked(make_store, tmp_path):
    store = make_store()
    with pytest.raises(UsageError, match="session_manager and storage each choose"):
        await create_session(storage={"transcript": store, "current_state": None},
                             session_manager=object())
    with pytest.raises(UsageError, match="'current_state' is missing"):
        await create_session(storage={"transcript": store})
    with pytest.raises(UsageError, match="must be a TranscriptStore"):
        await create_session(storage={"transcript": object(), "current_state": None})
    with pytest.raises(UsageError, match="persist=False"):
        await create_session(storage={"transcript": store, "current_state": None},
                             persist=False)


async def test_a_stale_state_and_a_second_owner_are_refused(make_store, tmp_path):
    store = make_store()
    session = await _session(tmp_path, store)
    await session.run("one")
    stale = store.current_state(session.session_id)
    with pytest.raises(SessionOwnedError):
        await _session(tmp_path, make_store(), stale)
    await session.run("two")
    await session.dispose()
    with pytest.raises(ChainError, match="moved on since its state was read"):
        await _session(tmp_path, make_store(), stale)


def test_resume_reads_only_the_context(make_store, tmp_path):
    store = make_store()
    m = StoreSessionManager.create_in(store, tmp_path)
    for n in range(120):
        m.append_message(AssistantMessage((TextContent(f"a{n}"),)))
    kept = m.append_message(AssistantMessage((TextContent("kept"),)))
    m.append_compaction("summary", kept.uuid, 100, 10)
    m.append_message(AssistantMessage((TextContent("after"),)))
    sid = m.session_id
    m.close()
    read, rows = store.read, []

    def counting(*args, **kw):
        got = read(*args, **kw)
        rows.extend(got)
        return got

    store.read = counting
    again = StoreSessionManager.open_in(store, sid)
    assert len(rows) == 4  # what was read from the store: the header and the context
    assert len(again.held_records) == 4  # header, kept, compaction, after: not 124
    assert [getattr(x, "content", None) and x.content[0].text for x in again.messages()][1:] \
        == ["kept", "after"]
    assert len(again.history()) == 123  # the whole history, read a page at a time
    assert list(again.records) == again.all_records()  # every record, read when asked
    assert len(rows) == 4 + 3 * 124  # history, records and all_records: each read it all
    again.close()


def test_a_compaction_lets_the_records_it_took_out_go(make_store, tmp_path):
    import gc
    import weakref

    store = make_store()
    m = StoreSessionManager.create_in(store, tmp_path)
    m.set_title("kept as the state")
    early = [weakref.ref(m.append_message(AssistantMessage((TextContent(f"a{n}"),))))
             for n in range(50)]
    kept = m.append_message(AssistantMessage((TextContent("kept"),)))
    m.append_compaction("summary", kept.uuid, 100, 10)
    m.append_message(AssistantMessage((TextContent("after"),)))
    gc.collect()
    assert sum(ref() is not None for ref in early) == 0
    assert len(m.held_records) == 5  # header, the title, kept, compaction, after
    assert list(m.records) == m.all_records() and len(m.records) == 55
    assert len(m.history()) == 53 and m.title == "kept as the state"
    assert [x.content[0].text for x in m.messages()[1:]] == ["kept", "after"]
    m.close()


def test_open_tool_calls_are_closed_as_interrupted_not_rerun(make_store, tmp_path):
    store = make_store()
    m = StoreSessionManager.create_in(store, tmp_path, owner="w")
    m.append_message(AssistantMessage((ToolCallContent("c1", "bash", {"command": "x"}),)))
    m.append_tool_use("c1", "bash", {"command": "x"})
    sid = m.session_id
    m._stop.set()  # killed: no close, the lease left behind
    again = StoreSessionManager.open_in(store, sid, owner="w")  # same worker name: its lease
    assert store.current_state(sid).open_calls == ()
    result = again.messages()[-1]
    assert result.is_error and result.content[0].text == INTERRUPTED_TEXT
    again.close()


async def test_helpers_over_the_store(make_store, tmp_path):
    store = make_store()
    session = await _session(tmp_path, store)
    await session.run("hello")
    sid = session.session_id
    with pytest.raises(SessionOwnedError):
        helpers.rename_session(store, sid, "busy")
    await session.dispose()
    helpers.rename_session(store, sid, "Named")
    helpers.tag_session(store, sid, ["x", "y"])
    info = helpers.get_session_info(store, sid)
    assert (info.title, info.tags) == ("Named", ("x", "y"))
    assert [s.session_id for s in helpers.list_sessions(store)] == [sid]
    fork = helpers.fork_session(store, sid)
    assert helpers.get_session_messages(store, fork) == helpers.get_session_messages(store, sid)
    assert helpers.get_session_info(store, fork).title == "Named"
    assert helpers.delete_session(store, sid) is True
    assert [s.session_id for s in helpers.list_sessions(store)] == [fork]


async def test_jsonl_import_and_export_are_lossless(make_store, tmp_path):
    from zpi_host.transcript import list_sessions

    local = await create_session(model="fn:m", provider=FunctionModel(echo), cwd=tmp_path,
                                 settings={}, agent_dir=tmp_path / "agent")
    await local.run("from a file")
    local.store.set_title("Local")
    path = local.store.path
    await local.dispose()
    store = make_store()
    state = helpers.import_jsonl(path, store)
    assert state.title == "Local" and state.session_id == local.session_id
    out = helpers.export_jsonl(store, state.session_id, tmp_path / "out" / "s.jsonl")
    assert out.read_bytes() == path.read_bytes()
    with pytest.raises(Exception, match="exists already"):
        helpers.export_jsonl(store, state.session_id, out)
    # and the imported session runs on from the store
    session = await _session(tmp_path, store, state)
    assert (await session.run("more")).result == "seen 3"
    await session.dispose()
    assert list_sessions(tmp_path, agent_dir=tmp_path / "agent")[0].title == "Local"


async def test_a_subagent_history_lives_in_the_same_store(make_store, tmp_path):
    store = make_store()
    session = await create_session(
        model="fn:m", provider=FunctionModel(lambda r: "child says hi"
                                             if r.messages[-1].content[0].text == "hi"
                                             else "parent"),
        cwd=tmp_path, settings={}, agent_dir=tmp_path / "agent",
        storage={"transcript": store, "current_state": None})
    await session.run("start")
    result = await session.run_subagent("general-purpose", "hi")
    assert result.result == "child says hi"
    sid = session.session_id
    await session.dispose()
    children = helpers.subagent_histories(store, sid)
    assert [[m.role for m in msgs] for msgs in children.values()] == [["user", "assistant"]]
    assert [s.session_id for s in helpers.list_sessions(store)] == [sid]  # children apart
    assert helpers.delete_session(store, sid) and store.sessions(subagents=True) == []
