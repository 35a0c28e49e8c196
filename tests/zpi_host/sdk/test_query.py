"""query() programs written as for claude-agent-sdk, run against the scripted model and the
loopback model server (OpenAI and Anthropic formats)."""

from __future__ import annotations

import pytest

from zpi_host.sdk import (
    AssistantMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    query,
)

from .conftest import collect

pytestmark = pytest.mark.anyio

USAGE = {"input_tokens": 1000, "output_tokens": 500}


async def test_quick_start(backend):
    backend.turns({"text": "4", "usage": USAGE})
    messages = await collect(query(prompt="What is 2 + 2?", options=backend.options()))
    init, answer, result = messages
    assert isinstance(init, SystemMessage) and init.subtype == "init"
    assert init.data["session_id"] == result.session_id
    assert init.data["tools"] == ["Read", "Write", "Edit", "Bash", "Glob", "Grep"]
    assert init.data["permissionMode"] == "default"
    assert init.data["cwd"] == str(backend.cwd)
    assert isinstance(answer, AssistantMessage)
    assert answer.content == [TextBlock("4")]
    assert isinstance(result, ResultMessage)
    assert (result.subtype, result.is_error, result.result, result.num_turns) == (
        "success", False, "4", 1)
    assert result.usage == {"input_tokens": 1000, "output_tokens": 500,
                            "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    model_usage = result.model_usage[backend.model_key]
    assert (model_usage["inputTokens"], model_usage["outputTokens"]) == (1000, 500)
    if backend.kind == "scripted":
        assert result.total_cost_usd == 0.0
    else:  # input $1/M, output $2/M
        assert result.total_cost_usd == pytest.approx(0.002)
        assert model_usage["costUSD"] == pytest.approx(0.002)
        assert model_usage["contextWindow"] == 200_000


async def test_the_model_sees_claude_tools_and_they_change_files(backend):
    (backend.cwd / "notes.txt").write_text("alpha\nbeta\n")
    backend.turns(
        {"tool_calls": [{"name": "Read", "arguments": {"file_path": str(backend.cwd /
                                                                        "notes.txt")}}]},
        {"tool_calls": [{"name": "Edit", "arguments": {
            "file_path": "notes.txt", "old_string": "beta", "new_string": "gamma"}}]},
        {"tool_calls": [{"name": "Write", "arguments": {"file_path": "new.txt",
                                                        "content": "fresh\n"}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {
            "command": "cat notes.txt new.txt", "timeout": 5000,
            "description": "show both files"}}]},
        "done",
    )
    options = backend.options(permission_mode="bypassPermissions")
    messages = await collect(query("edit the notes", options))
    assert (backend.cwd / "notes.txt").read_text() == "alpha\ngamma\n"
    assert (backend.cwd / "new.txt").read_text() == "fresh\n"
    calls = [b for m in messages if isinstance(m, AssistantMessage) for b in m.content
             if isinstance(b, ToolUseBlock)]
    assert [c.name for c in calls] == ["Read", "Edit", "Write", "Bash"]
    results = [b for m in messages if isinstance(m, UserMessage) for b in m.content]
    assert all(isinstance(r, ToolResultBlock) and not r.is_error for r in results), results
    assert [r.tool_use_id for r in results] == [c.id for c in calls]
    assert "alpha" in results[0].content and "gamma" in results[3].content
    assert messages[-1].subtype == "success"
    request = backend.requests()[0]
    if backend.kind == "openai":
        names = [t["function"]["name"] for t in request["tools"]]
        read = next(t["function"]["parameters"] for t in request["tools"]
                    if t["function"]["name"] == "Read")
    elif backend.kind == "anthropic":
        names = [t["name"] for t in request["tools"]]
        read = next(t["input_schema"] for t in request["tools"] if t["name"] == "Read")
    else:
        names = [t.name for t in request.tools]
        read = next(t.parameters for t in request.tools if t.name == "Read")
    assert names == ["Read", "Write", "Edit", "Bash", "Glob", "Grep"]
    assert set(read["properties"]) == {"file_path", "offset", "limit"}


async def test_bad_claude_arguments_are_named_in_claude_terms(scripted):
    (scripted.cwd / "a.txt").write_text("x\n")
    scripted.turns(
        {"tool_calls": [{"name": "Read", "arguments": {"path": "a.txt"}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "true",
                                                       "run_in_background": True}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "true",
                                                       "timeout": 700_000}}]},
        {"tool_calls": [{"name": "Edit", "arguments": {"file_path": "a.txt", "old_string": "",
                                                       "new_string": "y"}}]},
        "ok",
    )
    messages = await collect(query("go", scripted.options(permission_mode="bypassPermissions")))
    errors = [b.content for m in messages if isinstance(m, UserMessage) for b in m.content]
    assert "'file_path'" in errors[0] and "'Read'" in errors[0]
    assert "run_in_background" in errors[1] and "need the task service" in errors[1]
    assert "'timeout'" in errors[2] and "600000" in errors[2]
    assert "'old_string'" in errors[3] and "'Edit'" in errors[3]


async def test_partial_messages_stream_as_anthropic_events(backend):
    backend.turns({"thinking": "let me think", "text": "Hello there, friend.",
                   "tool_calls": [{"name": "Bash", "arguments": {"command": "true"}}]},
                  "bye")
    options = backend.options(include_partial_messages=True,
                              permission_mode="bypassPermissions")
    messages = await collect(query("hi", options))
    events = [m.event for m in messages if isinstance(m, StreamEvent)]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds.count("message_stop") == 2
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta"
                   and e["delta"]["type"] == "text_delta")
    assert text == "Hello there, friend.bye"
    if backend.kind != "openai":  # the OpenAI format has no reasoning text here
        thinking = "".join(e["delta"]["thinking"] for e in events
                           if e["type"] == "content_block_delta"
                           and e["delta"]["type"] == "thinking_delta")
        assert thinking == "let me think"
    tool = [e for e in events if e["type"] == "content_block_start"
            and e["content_block"]["type"] == "tool_use"]
    assert tool[0]["content_block"]["name"] == "Bash"
    first_assistant = next(i for i, m in enumerate(messages) if isinstance(m, AssistantMessage))
    assert any(isinstance(m, StreamEvent) for m in messages[:first_assistant])
    without = await collect(query("hi", backend.turns("again").options()))
    assert not any(isinstance(m, StreamEvent) for m in without)


async def test_max_turns_ends_with_error_max_turns(backend):
    backend.turns(*[{"tool_calls": [{"name": "Bash", "arguments": {"command": "true"}}]}] * 3)
    options = backend.options(max_turns=2, permission_mode="bypassPermissions")
    result = (await collect(query("loop", options)))[-1]
    assert (result.subtype, result.is_error, result.num_turns) == ("error_max_turns", True, 2)
    assert "maximum of 2 turns" in result.errors[0]


async def test_a_model_error_ends_with_error_during_execution(backend):
    backend.turns()  # nothing scripted: the model service fails
    if backend.kind != "scripted":
        backend.server.fail_next(status=400, body={"error": {"message": "bad request!"}})
    messages = await collect(query("hi", backend.options()))
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert (result.subtype, result.is_error, result.result) == (
        "error_during_execution", True, None)
    assert result.errors and result.errors[0]


async def test_default_mode_without_approver_denies_and_reports_denials(backend):
    backend.turns({"tool_calls": [{"name": "Write", "arguments": {
        "file_path": "x.txt", "content": "no"}}]}, "I could not write.")
    messages = await collect(query("write x", backend.options()))
    result = messages[-1]
    assert not (backend.cwd / "x.txt").exists()
    denied = next(b for m in messages if isinstance(m, UserMessage) for b in m.content)
    # the model (and the program's log) read how to allow it in the SDK's options
    assert denied.is_error and "allowed_tools=['Write" in denied.content
    assert "can_use_tool" in denied.content and "permission_mode='acceptEdits'" in denied.content
    assert "--allow" not in denied.content
    assert result.subtype == "success"
    assert len(result.permission_denials) == 1
    denial = result.permission_denials[0]
    assert denial["tool_name"] == "Write"
    assert denial["tool_input"] == {"file_path": "x.txt", "content": "no"}


async def test_budget_stops_before_the_next_request(backend):
    if backend.kind == "scripted":
        pytest.skip("the scripted model is not priced")
    call = {"tool_calls": [{"name": "Bash", "arguments": {"command": "true"}}],
            "usage": {"input_tokens": 1000, "output_tokens": 0}}  # $0.001 each
    backend.turns(call, call, call, call)
    options = backend.options(max_budget_usd=0.0015, permission_mode="bypassPermissions")
    result = (await collect(query("spend", options)))[-1]
    assert (result.subtype, result.is_error) == ("error_max_budget_usd", True), result.errors
    assert len(backend.requests()) == 2  # the second one took it over the limit
    assert result.total_cost_usd == pytest.approx(0.002, rel=0.01)
    assert "maximum budget" in result.errors[0]


async def test_budget_counts_only_this_querys_new_requests(backend):
    if backend.kind == "scripted":
        pytest.skip("the scripted model is not priced")
    costly = {"text": "spent", "usage": {"input_tokens": 3000, "output_tokens": 0}}  # $0.003
    backend.turns(costly)
    first = (await collect(query("spend", backend.options())))[-1]
    assert first.total_cost_usd == pytest.approx(0.003, rel=0.01)
    # the resumed session's restored totals are over the limit, yet this query may spend
    backend.turns({"text": "cheap", "usage": {"input_tokens": 100, "output_tokens": 0}})
    second = (await collect(query("again", backend.options(resume=first.session_id,
                                                           max_budget_usd=0.001))))[-1]
    assert (second.subtype, second.result) == ("success", "cheap"), second.errors
    assert second.total_cost_usd == pytest.approx(0.0031, rel=0.01)


async def test_streaming_input_gives_one_result_per_message(backend):
    backend.turns("first answer", "second answer")

    async def prompts():
        yield {"type": "user", "message": {"role": "user", "content": "one"},
               "parent_tool_use_id": None, "session_id": "default"}
        yield {"type": "user", "message": {"role": "user", "content": [
            {"type": "text", "text": "two"}]}}

    messages = await collect(query(prompts(), backend.options()))
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert [r.result for r in results] == ["first answer", "second answer"]
    assert results[0].session_id == results[1].session_id
    if backend.kind == "scripted":
        second = backend.requests()[1]
        texts = [m.text_content for m in second.messages if m.role == "user"]
        assert texts == ["one", "two"]


async def test_bad_streamed_input_raises_a_typed_error(scripted):
    from zpi_host.errors import UsageError

    async def prompts():
        yield {"role": "user", "content": "no type"}

    with pytest.raises(UsageError, match="'type': 'user'"):
        await collect(query(prompts(), scripted.turns("x").options()))


async def test_an_unpriced_model_costs_nothing_and_is_flagged(backend):
    if backend.kind == "scripted":
        pytest.skip("the scripted model is never priced")
    backend.turns({"text": "x", "usage": USAGE})
    result = (await collect(query("hi", backend.options(model=f"{backend.kind}:bare"))))[-1]
    usage = result.model_usage[f"{backend.kind}/bare"]
    assert (usage["unpriced"], usage["costUSD"], result.total_cost_usd) == (True, 0.0, 0.0)


async def test_streamed_inputs_share_one_budget(backend):
    """The budget is the query's: a second streamed input does not start it again."""
    if backend.kind == "scripted":
        pytest.skip("the scripted model is not priced")
    costly = {"text": "spent", "usage": {"input_tokens": 2000, "output_tokens": 0}}  # $0.002
    backend.turns(costly, costly, costly)

    async def prompts():
        for text in ("one", "two", "three"):
            yield {"type": "user", "message": {"role": "user", "content": text}}

    options = backend.options(max_budget_usd=0.003)
    results = [m for m in await collect(query(prompts(), options))
               if isinstance(m, ResultMessage)]
    assert [r.subtype for r in results] == ["success", "success", "error_max_budget_usd"]
    assert len(backend.requests()) == 2  # the third input was refused before its request


async def test_tool_use_result_has_claude_codes_shape(scripted):
    """Bash: ``stdout``, ``stderr``, ``interrupted``, ``isImage`` as claude-agent-sdk gives
    them; Write and Edit as Claude Code reports them."""
    scripted.turns(
        {"tool_calls": [{"name": "Bash", "arguments": {
            "command": "echo out; echo err >&2"}}]},
        {"tool_calls": [{"name": "Write", "arguments": {"file_path": "n.txt",
                                                        "content": "a\n"}}]},
        {"tool_calls": [{"name": "Edit", "arguments": {
            "file_path": "n.txt", "old_string": "a", "new_string": "b"}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "exit 3"}}]},
        "done")
    messages = await collect(query("go", scripted.options(
        permission_mode="bypassPermissions")))
    bash, write, edit, failed = [m.tool_use_result for m in messages
                                 if isinstance(m, UserMessage)]
    assert bash == {"stdout": "out", "stderr": "err", "interrupted": False, "isImage": False}
    assert write == {"type": "create", "filePath": str(scripted.cwd / "n.txt"),
                     "content": "a\n"}
    assert edit == {"filePath": str(scripted.cwd / "n.txt"), "oldString": "a",
                    "newString": "b", "replaceAll": False, "userModified": False}
    assert failed["stdout"] == "" and failed["interrupted"] is False
    assert (scripted.cwd / "n.txt").read_text() == "b\n"
