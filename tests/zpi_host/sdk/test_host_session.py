"""query() and SDKClient driving a session the embedding host created (zpi_host.sdk.host):
not disposed, nothing of the host's stopped, creation-time options and the seed's exclusions
refused."""

from __future__ import annotations

import pytest

from zpi_host import create_session
from zpi_host.errors import UsageError
from zpi_host.sdk import AgentOptions, ResultMessage, SDKClient, query
from zpi_host.sdk.host import HostSession
from zpi_host.testing import FunctionModel

pytestmark = pytest.mark.anyio


def echo(request):
    return f"got {request.messages[-1].content[0].text}"


async def _host_session(tmp_path, **kw):
    return await create_session(model="fn:m", provider=FunctionModel(echo), cwd=tmp_path,
                                settings={}, agent_dir=tmp_path / "agent", **kw)


async def _collect(prompt, options):
    return [m async for m in query(prompt, options)]


async def test_query_drives_the_host_session_and_gives_it_back(tmp_path):
    session = await _host_session(tmp_path)
    subscribers = list(session._subscribers)
    observers = list(session.subagent_observers)
    messages = await _collect("hello", AgentOptions(host_session=HostSession(session)))
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.result == "got hello"
    assert result.session_id == session.session_id
    # still the host's: open, and nothing of the SDK left attached
    assert session._subscribers == subscribers and session.subagent_observers == observers
    assert (await session.run("again")).result == "got again"
    assert [m.role for m in session.store.messages()] == ["user", "assistant"] * 2
    await session.dispose()


async def test_a_client_keeps_the_conversation_on_the_host_session(tmp_path):
    session = await _host_session(tmp_path)
    async with SDKClient(AgentOptions(host_session=HostSession(session))) as client:
        await client.query("one")
        texts = [m.result async for m in client.receive_response()
                 if isinstance(m, ResultMessage)]
    assert texts == ["got one"]
    assert not session._disposed
    await session.dispose()


async def test_the_prepared_input_runs_when_the_prompt_is_empty(tmp_path):
    session = await _host_session(tmp_path)
    host = HostSession(session, manager=session.store, model_runtime=session.provider,
                       prepared_input="prepared by the host")
    messages = await _collect("", AgentOptions(host_session=host))
    assert messages[-1].result == "got prepared by the host"
    with pytest.raises(UsageError, match="give the input once"):
        await _collect("also this", AgentOptions(host_session=host))
    await session.dispose()


@pytest.mark.parametrize(("option", "value", "reason"), [
    ("can_use_tool", lambda *a: None, "tool policy is fixed when the session is created"),
    ("session_store", object(), "has its own storage"),
    ("persist_session", False, "persists as its host chose"),
    ("model", "other:m", "fixed when the session was created"),
    ("allowed_tools", ["Read"], "fixed when the session was created"),
])
async def test_creation_time_options_are_refused(tmp_path, option, value, reason):
    session = await _host_session(tmp_path)
    options = AgentOptions(host_session=HostSession(session), **{option: value})
    with pytest.raises(UsageError, match=reason):
        await _collect("x", options)
    assert not session._disposed
    await session.dispose()


async def test_a_host_session_must_be_live_and_its_own_parts(tmp_path):
    session = await _host_session(tmp_path)
    with pytest.raises(UsageError, match="must be the session's own"):
        HostSession(session, manager=object())
    await session.dispose()
    with pytest.raises(UsageError, match="was disposed"):
        HostSession(session)
    with pytest.raises(UsageError, match="needs the AgentSession"):
        HostSession(object())


async def test_a_borrowed_session_on_native_storage(tmp_path):
    from zpi_host.stores import SQLiteTranscriptStore

    store = SQLiteTranscriptStore(tmp_path / "s.db")
    session = await _host_session(tmp_path, storage={"transcript": store,
                                                     "current_state": None})
    await _collect("stored", AgentOptions(host_session=HostSession(session)))
    assert store.current_state(session.session_id).first_prompt == "stored"
    await session.dispose()
    store.close()
