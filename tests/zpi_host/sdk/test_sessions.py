"""Resume, fork and the session helpers, written as for claude-agent-sdk."""

from __future__ import annotations

import pytest

from zpi_host.sdk import (
    ResultMessage,
    SessionMessage,
    delete_session,
    fork_session,
    get_session_info,
    get_session_messages,
    list_sessions,
    query,
    rename_session,
    tag_session,
)
from zpi_host.transcript import SessionBusyError, SessionNotFoundError

from .conftest import collect

pytestmark = pytest.mark.anyio


async def first_session(backend) -> str:
    backend.turns("The secret is 42.")
    result = (await collect(query("remember 42", backend.options())))[-1]
    assert isinstance(result, ResultMessage)
    return result.session_id


def history_texts(backend, index: int) -> list[str]:
    """The user and assistant texts the model was sent in request ``index``."""
    request = backend.requests()[index]
    if backend.kind == "scripted":
        return [getattr(m, "text_content", None) or getattr(m, "text", "")
                for m in request.messages]
    texts = []
    for m in request["messages"]:
        if m["role"] == "system":
            continue
        content = m["content"]
        if isinstance(content, str):
            texts.append(content)
        else:
            texts.append("".join(b.get("text", "") for b in content))
    return [t for t in texts if t]


async def test_resume_continues_the_conversation(backend):
    session_id = await first_session(backend)
    backend.turns("It was 42.")
    options = backend.options(resume=session_id)
    result = (await collect(query("what was the secret?", options)))[-1]
    assert result.session_id == session_id and result.result == "It was 42."
    assert history_texts(backend, -1) == ["remember 42", "The secret is 42.",
                                          "what was the secret?"]


async def test_continue_conversation_picks_the_latest(scripted):
    session_id = await first_session(scripted)
    scripted.turns("again")
    result = (await collect(query("more", scripted.options(
        continue_conversation=True))))[-1]
    assert result.session_id == session_id


async def test_fork_session_resumes_a_copy_under_a_new_id(backend):
    session_id = await first_session(backend)
    before = get_session_messages(session_id)
    backend.turns("Forked answer.")
    options = backend.options(resume=session_id, fork_session=True)
    result = (await collect(query("in the fork", options)))[-1]
    assert result.session_id != session_id
    assert history_texts(backend, -1) == ["remember 42", "The secret is 42.", "in the fork"]
    assert [m.uuid for m in get_session_messages(session_id)] == [m.uuid for m in before]
    forked = get_session_messages(result.session_id)
    assert len(forked) == 4
    assert not {m.uuid for m in forked} & {m.uuid for m in before}


async def test_the_session_helpers(scripted):
    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "echo hi"}}]},
                   "done")
    options = scripted.options(permission_mode="bypassPermissions")
    session_id = (await collect(query("say hi", options)))[-1].session_id

    listed = list_sessions(str(scripted.cwd))
    assert [s.session_id for s in listed] == [session_id]
    info = get_session_info(session_id)
    assert info.first_prompt == "say hi" and info.summary == "say hi"
    assert info.cwd == str(scripted.cwd) and info.last_modified > 0
    assert info.file_size and info.created_at

    messages = get_session_messages(session_id)
    assert [m.type for m in messages] == ["user", "assistant", "user", "assistant"]
    assert all(isinstance(m, SessionMessage) and m.session_id == session_id
               for m in messages)
    assert messages[0].message == {"role": "user", "content": "say hi"}
    tool_use = messages[1].message["content"][0]
    assert (tool_use["type"], tool_use["name"]) == ("tool_use", "Bash")
    tool_result = messages[2].message["content"][0]
    assert tool_result["tool_use_id"] == tool_use["id"] and "hi" in tool_result["content"]
    assert [m.uuid for m in get_session_messages(session_id, limit=2, offset=1)] == [
        m.uuid for m in messages[1:3]]
    for bad in ({"limit": -1}, {"offset": -1}, {"limit": 1.5}, {"offset": "1"}):
        with pytest.raises(ValueError, match="non-negative integer"):
            get_session_messages(session_id, **bad)

    rename_session(session_id, "Greeting")
    tag_session(session_id, "demo")
    info = get_session_info(session_id)
    assert (info.summary, info.custom_title, info.tag) == ("Greeting", "Greeting", "demo")
    tag_session(session_id, None)
    assert get_session_info(session_id).tag is None

    fork = fork_session(session_id, up_to_message_id=messages[1].uuid, title="Branch")
    assert fork.session_id != session_id
    forked = get_session_messages(fork.session_id)
    assert [m.type for m in forked] == ["user", "assistant"]
    assert forked[1].message["content"][0]["id"] != tool_use["id"]  # new tool ids
    assert get_session_info(fork.session_id).custom_title == "Branch"
    assert len(list_sessions(str(scripted.cwd), limit=1)) == 1
    assert len(list_sessions(str(scripted.cwd), offset=1)) == 1

    delete_session(fork.session_id)
    delete_session(fork.session_id)  # twice is fine
    assert get_session_info(fork.session_id) is None
    assert get_session_messages(fork.session_id) == []
    with pytest.raises(SessionNotFoundError):
        fork_session(fork.session_id)


async def test_a_live_session_cannot_be_deleted_or_renamed_while_it_runs(scripted):
    from zpi_host.sdk import SDKClient

    scripted.turns("one")
    async with SDKClient(scripted.options()) as client:
        await client.query("hi")
        [m async for m in client.receive_response()]
        session_id = client.session.session_id
        with pytest.raises(SessionBusyError, match="close it before deleting"):
            delete_session(session_id)
    delete_session(session_id)
    assert get_session_info(session_id) is None


async def test_totals_are_restored_on_resume_and_usage_is_per_input(backend):
    usage = {"input_tokens": 1000, "output_tokens": 500}
    backend.turns({"text": "one", "usage": usage})
    first = (await collect(query("a", backend.options())))[-1]
    backend.turns({"text": "two", "usage": usage})
    second = (await collect(query("b", backend.options(resume=first.session_id))))[-1]
    assert second.usage["input_tokens"] == 1000  # this input only
    totals = second.model_usage[backend.model_key]
    assert (totals["inputTokens"], totals["outputTokens"]) == (2000, 1000)
    if backend.kind != "scripted":
        assert first.total_cost_usd == pytest.approx(0.002)
        assert second.total_cost_usd == pytest.approx(0.004)
        assert totals["costUSD"] == pytest.approx(0.004)
        assert totals["unpriced"] is False


async def test_continue_conversation_without_a_saved_session_starts_a_new_one(scripted):
    scripted.turns("fresh")
    options = scripted.options(continue_conversation=True, fork_session=True)
    result = (await collect(query("hello", options)))[-1]
    assert result.subtype == "success" and result.result == "fresh"
    assert [s.session_id for s in list_sessions(str(scripted.cwd))] == [result.session_id]


async def test_result_usage_is_the_main_loop_and_totals_include_sub_agents(scripted,
                                                                           zpi_plugins):
    from zpi_host import hookimpl
    from zpi_host.sdk import SDKClient
    from zpi_host.tools.base import Tool, ToolResult

    holder: dict = {}

    async def delegate(args, ctx):
        child = await holder["client"].session.run_subagent("general-purpose", "sub task")
        return ToolResult.text(child.result)

    class Delegation:
        @hookimpl
        def zpi_register_tools(self):
            return [Tool("delegate", "run a sub-agent", {"type": "object", "properties": {}},
                         delegate)]

    zpi_plugins.register(Delegation(), "delegation")
    scripted.turns(
        {"tool_calls": [{"name": "delegate", "arguments": {}}],
         "usage": {"input_tokens": 10, "output_tokens": 1}},
        {"text": "child answer", "usage": {"input_tokens": 1000, "output_tokens": 100}},
        {"text": "done", "usage": {"input_tokens": 20, "output_tokens": 2}})
    async with SDKClient(scripted.options(permission_mode="bypassPermissions")) as client:
        holder["client"] = client
        await client.query("delegate it")
        messages = [m async for m in client.receive_response()]
    result = messages[-1]
    assert result.result == "done"
    assert (result.usage["input_tokens"], result.usage["output_tokens"]) == (30, 3)
    totals = result.model_usage[scripted.model_key]
    assert (totals["inputTokens"], totals["outputTokens"]) == (1030, 103)


async def test_fork_session_with_session_id_names_the_fork_and_never_reuses_ids(scripted):
    from zpi_host.errors import UsageError
    from zpi_host.transcript import SessionExistsError

    session_id = await first_session(scripted)
    wanted = "0b6b1c1e-5d0a-4f55-9d1e-3f5a2f1d6c2b"
    scripted.turns("in the fork")
    result = (await collect(query("go on", scripted.options(
        resume=session_id, fork_session=True, session_id=wanted))))[-1]
    assert result.session_id == wanted and result.result == "in the fork"
    assert [m.type for m in get_session_messages(wanted)] == ["user", "assistant"] * 2
    assert len(get_session_messages(session_id)) == 2  # the source is untouched
    with pytest.raises(UsageError, match="never reuses"):
        await collect(query("x", scripted.options(resume=session_id, fork_session=True,
                                                  session_id=session_id.upper())))
    with pytest.raises(UsageError, match="needs fork_session=True"):
        await collect(query("x", scripted.options(resume=session_id, session_id=wanted)))
    with pytest.raises(SessionExistsError, match="exists already"):
        await collect(query("x", scripted.options(resume=session_id, fork_session=True,
                                                  session_id=wanted)))
    assert len(list_sessions(str(scripted.cwd))) == 2  # nothing half made


async def test_a_fork_without_a_title_is_titled_as_claude_agent_sdk_does(scripted):
    session_id = await first_session(scripted)
    fork = fork_session(session_id)
    assert get_session_info(fork.session_id).custom_title == "remember 42 (fork)"
    rename_session(session_id, "Secrets")
    again = fork_session(session_id, title="  ")
    assert get_session_info(again.session_id).custom_title == "Secrets (fork)"
