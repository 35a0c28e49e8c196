"""Sub-agents through the Claude-style SDK: ``agents=``, the ``Agent`` tool, child histories
(local and in a session store), and the accounting of a child's spend."""

from __future__ import annotations

import json
import re
import uuid

import attrs
import pytest
from helpers.sdk_messages import collect

from zpi_host.sdk import (
    AgentDefinition,
    AgentOptions,
    InMemorySessionStore,
    SQLiteSessionStore,
    UnsupportedOptionError,
    delete_session,
    delete_session_via_store,
    fork_session,
    fork_session_via_store,
    get_session_messages,
    get_subagent_messages,
    get_subagent_messages_from_store,
    list_subagents,
    list_subagents_from_store,
    project_key_for_directory,
    query,
)
from zpi_host.stores.store_resume import load_for_resume
from zpi_host.transcript import TranscriptError, read_transcript
from zpi_host.transcript.paths import subagents_folder

pytestmark = pytest.mark.anyio

PRICE = {"input": 1.0, "output": 2.0, "cache_read": 0.5, "cache_write": 0}
COUNTER = AgentDefinition(description="counts the lines of a file",
                          prompt="You count lines. Answer with the number only.",
                          tools=["Read"])


def options(server, tmp_path, **fields):
    settings = {"providers": {"openai": {"base_url": server.base_url}},
                "requests": {"retry_base_delay": 0.001, "retry_max_delay": 0.001},
                "models": {"priced": {"provider": "openai", "model": "test-model",
                                      "price": PRICE, "context_window": 200_000}}}
    fields.setdefault("agents", {"counter": COUNTER})
    return AgentOptions(cwd=tmp_path / "project", model="priced", settings=json.dumps(settings),
                        env={"OPENAI_API_KEY": "sk-test-openai"},
                        permission_mode="bypassPermissions", **fields)


def delegating_turns(server):
    server.add_turns(
        {"tool_calls": [{"name": "Agent", "arguments": {
            "subagent_type": "counter", "description": "count lines",
            "prompt": "How many lines has a.txt?"}}],
         "usage": {"input_tokens": 10, "output_tokens": 1}},
        {"tool_calls": [{"name": "Read", "arguments": {"file_path": "a.txt"}}],
         "usage": {"input_tokens": 100, "output_tokens": 10}},
        {"text": "2", "usage": {"input_tokens": 200, "output_tokens": 20}},
        {"text": "a.txt has 2 lines", "usage": {"input_tokens": 20, "output_tokens": 2}})


def same_conversation(copied, source):
    """The same messages, tool call ids aside (a fork gives new ones)."""
    def shape(messages):
        text = json.dumps([m.message for m in messages])
        for n, call_id in enumerate(sorted(set(re.findall(r'"(call_[0-9a-z_]+)"', text)))):
            text = text.replace(call_id, f"id{n}")
        return text

    return len(copied) == len(source) and shape(copied) == shape(source)


def cost(input_tokens, output_tokens):
    return (input_tokens * PRICE["input"] + output_tokens * PRICE["output"]) / 1e6


@pytest.fixture
def project(zpi_env, tmp_path):
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "a.txt").write_text("one\ntwo\n")
    return tmp_path / "project"


async def test_forward_subagent_text_puts_the_childs_text_on_the_stream(
        project, zpi_model_server, tmp_path, zpi_env):
    delegating_turns(zpi_model_server)
    messages = [m async for m in query(prompt="count a.txt", options=options(
        zpi_model_server, tmp_path, forward_subagent_text=True))]
    child_stream = [m for m in messages if getattr(m, "parent_tool_use_id", None)]
    assert [(type(m).__name__, type(m.content[0]).__name__) for m in child_stream] == [
        ("AssistantMessage", "ToolUseBlock"), ("UserMessage", "ToolResultBlock"),
        ("AssistantMessage", "TextBlock")]
    assert child_stream[-1].content[0].text == "2"
    assert messages[-1].result == "a.txt has 2 lines"


async def test_agents_option_the_agent_tool_child_history_and_cost_once(
        project, zpi_model_server, tmp_path, zpi_env):
    delegating_turns(zpi_model_server)
    messages = [m async for m in query(prompt="count a.txt",
                                       options=options(zpi_model_server, tmp_path))]
    init, result = messages[0], messages[-1]
    assert "Agent" in init.data["tools"] and "task" not in init.data["tools"]
    assert result.result == "a.txt has 2 lines" and not result.is_error
    bodies = [r.json for r in zpi_model_server.requests]
    child = bodies[1]
    assert child["messages"][0] == {"role": "system", "content": COUNTER.prompt}
    assert [t["function"]["name"] for t in child["tools"]] == ["Read"]
    assert "counter: counts the lines of a file (tools: Read)" in \
        bodies[0]["messages"][0]["content"]
    # usage: this input's main loop only; cost and model usage: the session's, child included
    assert result.usage["input_tokens"] == 30 and result.usage["output_tokens"] == 3
    assert result.total_cost_usd == pytest.approx(cost(330, 33))
    assert result.model_usage["openai/test-model"]["inputTokens"] == 330

    # the child's tool call and result are on the stream, marked with the Agent call; its
    # text is not
    (agent_call,) = messages[1].content
    assert agent_call.name == "Agent" and messages[1].parent_tool_use_id is None
    child_stream = [m for m in messages if getattr(m, "parent_tool_use_id", None)]
    assert [(type(m).__name__, type(m.content[0]).__name__) for m in child_stream] == [
        ("AssistantMessage", "ToolUseBlock"), ("UserMessage", "ToolResultBlock")]
    assert {m.parent_tool_use_id for m in child_stream} == {agent_call.id}
    assert child_stream[0].content[0].name == "Read"

    (agent_id,) = list_subagents(result.session_id, str(project))
    child_messages = get_subagent_messages(result.session_id, agent_id, str(project))
    assert [m.type for m in child_messages] == ["user", "assistant", "user", "assistant"]
    assert child_messages[0].message["content"] == "How many lines has a.txt?"
    (call,) = next(b for b in messages if type(b).__name__ == "AssistantMessage").content
    assert {m.parent_tool_use_id for m in child_messages} == {call.id}
    # started by the main session, not by another sub-agent
    assert {m.parent_agent_id for m in child_messages} == {None}
    assert [m.type for m in get_subagent_messages(result.session_id, agent_id, str(project),
                                                  limit=1, offset=1)] == ["assistant"]
    assert get_subagent_messages(result.session_id, "no-such-agent", str(project)) == []
    with pytest.raises(ValueError, match="limit"):
        get_subagent_messages(result.session_id, agent_id, str(project), limit=-1)

    # resumed: the totals come back from the records, the child's spend once
    zpi_model_server.add_turns({"text": "still 2", "usage": {"input_tokens": 5,
                                                              "output_tokens": 1}})
    again = [m async for m in query(prompt="sure?", options=options(
        zpi_model_server, tmp_path, resume=result.session_id))][-1]
    assert again.result == "still 2"
    assert again.total_cost_usd == pytest.approx(cost(335, 34))
    assert again.model_usage["openai/test-model"]["inputTokens"] == 335

    # a fork copies the sub-agents started in the copied part, linked to the fork's call ids
    fork = fork_session(result.session_id, str(project))
    assert list_subagents(fork.session_id, str(project)) == [agent_id]
    fork_call = next(b["id"] for m in get_session_messages(fork.session_id, str(project))
                     for b in m.message["content"] if isinstance(b, dict)
                     and b.get("type") == "tool_use")
    assert fork_call != agent_call.id
    copied = get_subagent_messages(fork.session_id, agent_id, str(project))
    assert same_conversation(copied, child_messages)
    assert {m.parent_tool_use_id for m in copied} == {fork_call}
    first = get_session_messages(result.session_id, str(project))[0].uuid
    cut = fork_session(result.session_id, str(project), up_to_message_id=first)
    assert list_subagents(cut.session_id, str(project)) == []

    # a damaged child stops a fork before anything is written
    child_file = next((tmp_path / "home").rglob(f"{result.session_id}/*/agent-*.jsonl"))
    lines = child_file.read_text().splitlines(keepends=True)
    child_file.write_text(lines[0] + "not json\n" + "".join(lines[1:]))
    before = sorted((tmp_path / "home").rglob("*.jsonl"))
    with pytest.raises(TranscriptError, match=r"agent-.*\.jsonl:2: not valid JSON"):
        fork_session(result.session_id, str(project))
    assert sorted((tmp_path / "home").rglob("*.jsonl")) == before

    # deleting the session deletes its sub-agents' transcripts
    folder = child_file.parent
    delete_session(result.session_id, str(project))
    assert not folder.exists() and not folder.parent.exists()
    assert list_subagents(result.session_id, str(project)) == []


async def test_an_agent_definition_field_this_host_cannot_honour_is_refused(
        project, zpi_model_server, tmp_path):
    bad = AgentDefinition(description="d", prompt="p", maxTurns=3)
    with pytest.raises(UnsupportedOptionError, match=r"agents\['x'\].maxTurns"):
        [m async for m in query(prompt="hi", options=options(
            zpi_model_server, tmp_path, agents={"x": bad}))]


@pytest.mark.parametrize("make_store", ["memory", "sqlite"])
async def test_child_histories_are_mirrored_resumed_forked_and_deleted(
        project, zpi_model_server, tmp_path, make_store, zpi_env):
    store = InMemorySessionStore() if make_store == "memory" else \
        SQLiteSessionStore(tmp_path / "store.db")
    delegating_turns(zpi_model_server)
    result = [m async for m in query(prompt="count a.txt", options=options(
        zpi_model_server, tmp_path, session_store=store))][-1]
    sid = result.session_id
    for path in (tmp_path / "home").rglob("*.jsonl"):
        path.unlink()  # from now on only the store has the session
    directory = str(project)
    (agent_id,) = await list_subagents_from_store(store, sid, directory)
    child = await get_subagent_messages_from_store(store, sid, agent_id, directory)
    assert [m.type for m in child] == ["user", "assistant", "user", "assistant"]
    assert child[-1].message["content"][0]["text"] == "2"

    # resume from the store: the child's history is written back beside the session's local
    # file in the agent dir (durable), its cost restored once
    project_key = project_key_for_directory(directory)
    loaded = await load_for_resume(store, project_key, sid, 60_000,
                                   agent_dir=zpi_env.agent_dir, cwd=project)
    assert loaded.path.is_relative_to(zpi_env.agent_dir / "sessions")
    (child_file,) = subagents_folder(loaded.path).iterdir()
    assert child_file.name == f"agent-{agent_id}.jsonl"
    records = read_transcript(child_file).records
    # (a read-only call may be journaled while the answer still streams)
    assert sorted(r.TYPE for r in records) == sorted([
        "header", "custom", "user", "assistant", "tool_use", "tool_result", "assistant"])
    zpi_model_server.add_turns({"text": "still 2", "usage": {"input_tokens": 5,
                                                              "output_tokens": 1}})
    again = [m async for m in query(prompt="sure?", options=options(
        zpi_model_server, tmp_path, session_store=store, resume=sid))][-1]
    assert again.total_cost_usd == pytest.approx(cost(335, 34))

    fork = await fork_session_via_store(store, sid, directory)
    assert await list_subagents_from_store(store, fork.session_id, directory) == [agent_id]
    copied = await get_subagent_messages_from_store(store, fork.session_id, agent_id,
                                                    directory)
    assert same_conversation(copied, child)
    (fork_call,) = {m.parent_tool_use_id for m in copied}
    assert fork_call not in {m.parent_tool_use_id for m in child}
    assert fork_call in json.dumps(await store.load(
        {"project_key": project_key, "session_id": fork.session_id}))
    await delete_session_via_store(store, sid, directory)
    assert await list_subagents_from_store(store, sid, directory) == []
    assert await get_subagent_messages_from_store(store, sid, agent_id, directory) == []
    assert await store.load({"project_key": project_key, "session_id": fork.session_id,
                             "subpath": f"subagents/agent-{agent_id}"}) is not None


class _BrokenSubkeys(InMemorySessionStore):
    async def list_subkeys(self, key):
        raise ConnectionError("store went away")


async def test_a_failure_listing_child_histories_on_resume_propagates(project):
    store = _BrokenSubkeys()
    key = {"project_key": "p", "session_id": str(uuid.uuid4())}
    moment = "2025-01-01T00:00:00.000Z"  # a valid transcript: it is checked before subkeys
    await store.append(key, [{"type": "header", "uuid": "h", "parentUuid": None,
                              "sessionId": key["session_id"], "timestamp": moment,
                              "version": 2, "cwd": "/w", "createdAt": moment}])
    with pytest.raises(ConnectionError, match="store went away"):
        await load_for_resume(store, "p", key["session_id"], 60_000,
                              agent_dir=project.parent / "agent", cwd=project)
    assert not (project.parent / "agent").exists()  # nothing written


async def test_the_budget_is_checked_before_each_child_request(project, zpi_model_server,
                                                               tmp_path):
    delegating_turns(zpi_model_server)
    # the parent's first request (12e-6 USD) and the child's first (120e-6) fit; the child's
    # second request would exceed 100e-6, so it is not sent
    messages = await collect(query(prompt="count a.txt", options=options(
        zpi_model_server, tmp_path, max_budget_usd=100e-6)))
    result = messages[-1]
    assert (result.subtype, result.is_error) == ("error_max_budget_usd", True)
    assert len(zpi_model_server.requests) == 2
    assert result.total_cost_usd == pytest.approx(cost(110, 11))


async def test_in_default_mode_a_sub_agent_starts_without_asking_unless_denied(
        project, zpi_model_server, tmp_path):
    asked = []

    async def can_use_tool(name, tool_input, context):
        from zpi_host.sdk import PermissionResultDeny

        asked.append(name)
        return PermissionResultDeny("no")

    for deny, expected in (([], "2"), (["agent:counter"], "denied by rule 'agent:counter'")):
        zpi_model_server.add_turns(
            {"tool_calls": [{"name": "Agent", "arguments": {
                "subagent_type": "counter", "description": "d", "prompt": "count"}}]},
            *([{"text": "2"}] if not deny else []), {"text": "done"})
        messages = [m async for m in query(prompt="go", options=attrs.evolve(
            options(zpi_model_server, tmp_path, can_use_tool=can_use_tool,
                    disallowed_tools=deny), permission_mode="default"))]
        (result_block,) = [b for m in messages if type(m).__name__ == "UserMessage"
                           for b in m.content]
        assert expected in result_block.content
    assert asked == []  # the Agent call and the start need no approval


async def test_interrupt_closes_the_sub_agents_open_call_in_its_transcript(
        project, zpi_model_server, tmp_path, zpi_env):
    """``interrupt()`` while a child runs a command: the child's transcript, like the main
    one, ends with an interrupted result for the call it was running (none left open)."""
    from zpi_host.sdk import SDKClient, ToolUseBlock
    from zpi_host.transcript import history

    waiter = AgentDefinition(description="waits", prompt="You wait.", tools=["Bash"])
    zpi_model_server.add_turns(
        {"tool_calls": [{"name": "Agent", "arguments": {
            "subagent_type": "waiter", "description": "wait", "prompt": "wait a while"}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "sleep 30"}}]})
    async with SDKClient(options(zpi_model_server, tmp_path,
                                 agents={"waiter": waiter})) as client:
        await client.query("delegate the wait")
        async for message in client.receive_messages():
            if getattr(message, "parent_tool_use_id", None) and any(
                    isinstance(b, ToolUseBlock) and b.name == "Bash"
                    for b in getattr(message, "content", ())):
                await client.interrupt()
            if message.__class__.__name__ == "ResultMessage":
                break
    (child_file,) = zpi_env.agent_dir.rglob("agent-*.jsonl")
    transcript = read_transcript(child_file)
    branch = history.active_branch(transcript.records, transcript.linear)
    assert history.unfinished_calls(branch) == []
    closing = [r for r in branch if r.TYPE == "tool_result"]
    assert len(closing) == 1 and closing[0].message.is_error
    assert "interrupted" in closing[0].message.content[0].text


async def test_a_subagents_file_changes_are_checkpointed_under_the_parents_prompt(
        project, zpi_model_server, tmp_path, zpi_env):
    from zpi_host.sdk import ClaudeSDKClient, UserMessage

    writer = AgentDefinition(description="writes files", prompt="You write files.",
                             tools=["Write"])
    zpi_model_server.add_turns(
        {"tool_calls": [{"name": "Agent", "arguments": {
            "subagent_type": "writer", "description": "write", "prompt": "write b.txt"}}]},
        {"tool_calls": [{"name": "Write", "arguments": {"file_path": "b.txt",
                                                        "content": "by the child\n"}}]},
        {"text": "written"}, {"text": "the child wrote b.txt"})
    async with ClaudeSDKClient(options(zpi_model_server, tmp_path, agents={"writer": writer},
                                       enable_file_checkpointing=True)) as client:
        await client.query("have b.txt written")
        messages = [m async for m in client.receive_response()]
        assert (project / "b.txt").read_text() == "by the child\n"
        (prompt,) = [m for m in messages if isinstance(m, UserMessage)
                     and isinstance(m.content, str)]
        report = await client.rewind_files(prompt.uuid)
    assert report.deleted == (str(project / "b.txt"),)
    assert not (project / "b.txt").exists()
