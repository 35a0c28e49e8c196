"""The anthropic provider against the loopback server: what it sends and what it reads."""

from __future__ import annotations

import pytest

from zpi_host.providers.base import ProviderStreamError
from zpi_host.providers.messages import (
    AssistantMessage,
    ContextMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCallContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)

from .conftest import KEYS, ask, collect, said

pytestmark = pytest.mark.anyio

TURN = {"thinking": "Let me look at the file first.",
        "text": "I will read it.",
        "tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}},
                       {"name": "bash", "arguments": {"command": "ls -la"}}],
        "usage": {"input_tokens": 120, "output_tokens": 30, "cache_read_tokens": 800,
                  "cache_write_tokens": 64}}


async def test_stream_reassembles_thinking_text_calls_and_usage(connect, zpi_model_server):
    zpi_model_server.add_turns(TURN)
    result = said(await collect(connect("anthropic")))
    assert result.reasoning == "Let me look at the file first."
    assert result.signature == "zpi-signature-1"
    assert result.text == "I will read it."
    assert result.calls == (("toolu_1_0", "read", {"path": "a.txt"}),
                            ("toolu_1_1", "bash", {"command": "ls -la"}))
    assert result.usage == Usage(input_tokens=120, output_tokens=30, cache_read_tokens=800,
                                 cache_write_tokens=64)
    assert result.stop == "tool_use"


HISTORY = (
    UserMessage((TextContent("what is in a.txt?"), ImageContent("aGk=", "image/png"))),
    AssistantMessage((ThinkingContent("I should read it.", "sig-1"),
                      ThinkingContent("unsigned, from another model"),
                      TextContent("Reading."),
                      ToolCallContent("c1", "read", {"path": "a.txt"}),
                      ToolCallContent("c2", "read", {"path": "b.txt"}))),
    ToolResultMessage("c1", "read", (TextContent("1\thello"),)),
    ToolResultMessage("c2", "read", (TextContent("no such file"),), is_error=True),
    ContextMessage("b.txt was deleted yesterday", "history-plugin"),
)


CACHED = {"type": "ephemeral"}
SENT_HISTORY = [
    {"role": "user", "content": [
        {"type": "text", "text": "what is in a.txt?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": "aGk="}}]},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "I should read it.", "signature": "sig-1"},
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a.txt"}},
        {"type": "tool_use", "id": "c2", "name": "read", "input": {"path": "b.txt"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "c1",
         "content": [{"type": "text", "text": "1\thello"}], "is_error": False},
        {"type": "tool_result", "tool_use_id": "c2",
         "content": [{"type": "text", "text": "no such file"}], "is_error": True},
        {"type": "text", "text": '<system-reminder>\n'
                                 'b.txt was deleted yesterday\n</system-reminder>'}]},
]
READ_TOOL = {"name": "read", "description": "Read a file", "input_schema": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}


def cached_last_block(message: dict) -> dict:
    *rest, last = message["content"]
    return {**message, "content": [*rest, {**last, "cache_control": CACHED}]}


async def test_what_is_sent(connect, zpi_model_server):
    zpi_model_server.add_turns("ok")
    await collect(connect("anthropic"), ask(*HISTORY, options={"temperature": 0.5}))
    request = zpi_model_server.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEYS["anthropic"]
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    body = request.json
    assert (body["model"], body["max_tokens"], body["stream"]) == ("test-model", 8192, True)
    assert body["temperature"] == 0.5
    assert "thinking" not in body
    # prompt caching: breakpoints on the system prompt, the last tool, the two latest user
    # messages' last blocks
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": CACHED}]
    assert body["tools"] == [{**READ_TOOL, "cache_control": CACHED}]
    first, answer, results = SENT_HISTORY
    assert body["messages"] == [cached_last_block(first), answer, cached_last_block(results)]


async def test_prompt_caching_off_sends_no_breakpoints(connect, zpi_model_server):
    zpi_model_server.add_turns("ok")
    await collect(connect("anthropic", settings={"prompt_caching": False}), ask(*HISTORY))
    body = zpi_model_server.requests[0].json
    assert "cache_control" not in zpi_model_server.requests[0].body.decode()
    assert body["system"] == "Be brief."
    assert body["tools"] == [READ_TOOL]
    assert body["messages"] == SENT_HISTORY


async def test_the_object_body_and_the_encoded_body_agree(connect, zpi_model_server):
    """The body as objects (``body``) and the spliced, once-encoded bytes (``payload``) mark
    the same blocks, turn after turn."""
    import json

    provider = connect("anthropic")
    history = list(HISTORY)
    for turn in range(3):
        request = ask(*history)
        assert json.loads(provider.payload(request)) == provider.body(request)
        history += [AssistantMessage((TextContent(f"answer {turn}"),)),
                    UserMessage.text(f"question {turn}")]


@pytest.mark.parametrize("max_output, level, thinking, max_tokens", [
    (None, "minimal", 1024, 8192),
    (None, "medium", 8192, 16384),   # default max_tokens raised above the budget
    (None, "high", 16384, 24576),
    (64000, "high", 16384, 64000),
    (10000, "high", 8976, 10000),    # the model's own limit: the budget shrinks instead
    (None, "off", None, 8192),
])
async def test_thinking_budget_per_level(connect, zpi_model_server, max_output, level,
                                         thinking, max_tokens):
    zpi_model_server.add_turns("ok")
    await collect(connect("anthropic", reasoning=True, max_output=max_output),
                  ask(reasoning=level))
    body = zpi_model_server.requests[0].json
    assert body.get("thinking") == (None if thinking is None else
                                    {"type": "enabled", "budget_tokens": thinking})
    assert body["max_tokens"] == max_tokens


async def test_no_thinking_for_models_that_do_not_reason(connect, zpi_model_server):
    zpi_model_server.add_turns("ok")
    await collect(connect("anthropic"), ask(reasoning="high"))
    assert "thinking" not in zpi_model_server.requests[0].json


def events(*pairs: tuple[str, str]) -> bytes:
    return b"".join(f"event: {name}\ndata: {data}\n\n".encode() for name, data in pairs)


START = ("message_start", '{"type":"message_start","message":{"usage":{"input_tokens":9}}}')


async def test_unknown_event_type_is_a_stream_error(connect, zpi_model_server):
    zpi_model_server.fail_next(raw=events(START, ("surprise", '{"type":"surprise"}')))
    with pytest.raises(ProviderStreamError, match="unknown event type 'surprise'"):
        await collect(connect("anthropic"))


async def test_error_event_is_typed(connect, zpi_model_server):
    zpi_model_server.fail_next(raw=events(START, ("error", '{"type":"error","error":{"type":'
                                                            '"overloaded_error","message":'
                                                            '"Overloaded"}}')))
    with pytest.raises(ProviderStreamError) as info:
        await collect(connect("anthropic"))
    assert info.value.error_type == "overloaded_error"
    assert "(overloaded_error): Overloaded; try again later" in str(info.value)
    assert len(zpi_model_server.requests) == 1  # an error after HTTP 200 is not retried


async def test_empty_tool_input_is_an_empty_object(connect, zpi_model_server):
    zpi_model_server.fail_next(raw=events(
        START,
        ("content_block_start", '{"type":"content_block_start","index":0,"content_block":'
                                '{"type":"tool_use","id":"t1","name":"now","input":{}}}'),
        ("content_block_stop", '{"type":"content_block_stop","index":0}'),
        ("message_delta", '{"type":"message_delta","delta":{"stop_reason":"tool_use"},'
                          '"usage":{"output_tokens":3}}'),
        ("message_stop", '{"type":"message_stop"}')))
    result = said(await collect(connect("anthropic")))
    assert result.calls == (("t1", "now", {}),)
    assert result.usage == Usage(9, 3) and result.stop == "tool_use"


async def test_a_delta_for_a_block_that_is_not_open_is_refused(connect, zpi_model_server):
    zpi_model_server.fail_next(raw=events(
        START, ("content_block_delta", '{"type":"content_block_delta","index":3,"delta":'
                                       '{"type":"text_delta","text":"x"}}')))
    with pytest.raises(ProviderStreamError, match="not an open text block"):
        await collect(connect("anthropic"))


async def test_invalid_tool_json_is_a_stream_error(connect, zpi_model_server):
    zpi_model_server.fail_next(raw=events(
        START,
        ("content_block_start", '{"type":"content_block_start","index":0,"content_block":'
                                '{"type":"tool_use","id":"t1","name":"read","input":{}}}'),
        ("content_block_delta", '{"type":"content_block_delta","index":0,"delta":'
                                '{"type":"input_json_delta","partial_json":"{\\"pa"}}'),
        ("content_block_stop", '{"type":"content_block_stop","index":0}')))
    with pytest.raises(ProviderStreamError, match="invalid JSON arguments for tool 'read'"):
        await collect(connect("anthropic"))
