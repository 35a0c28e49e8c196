"""The openai provider against the loopback server: what it sends and what it reads."""

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
                       {"name": "bash", "arguments": {"command": "ls -la", "timeout": 5}}],
        "usage": {"input_tokens": 120, "output_tokens": 30, "cache_read_tokens": 800}}


async def test_stream_reassembles_text_reasoning_calls_and_usage(connect, zpi_model_server):
    zpi_model_server.add_turns(TURN)
    result = said(await collect(connect("openai")))
    assert result.reasoning == "Let me look at the file first."
    assert result.text == "I will read it."
    assert result.calls == (("call_1_0", "read", {"path": "a.txt"}),
                            ("call_1_1", "bash", {"command": "ls -la", "timeout": 5}))
    assert result.argument_text == {0: '{"path": "a.txt"}',
                                    1: '{"command": "ls -la", "timeout": 5}'}
    # prompt_tokens (920) includes the cached 800: input is reported without them
    assert result.usage == Usage(input_tokens=120, output_tokens=30, cache_read_tokens=800)
    assert result.stop == "tool_use"


async def test_plain_answer_ends_the_turn(connect, zpi_model_server):
    zpi_model_server.add_turns("Just text.")
    result = said(await collect(connect("openai")))
    assert (result.text, result.calls, result.stop) == ("Just text.", (), "end_turn")


HISTORY = (
    UserMessage((TextContent("what is in a.txt?"), ImageContent("aGk=", "image/png"))),
    AssistantMessage((ThinkingContent("hidden", "sig"), TextContent("Reading."),
                      ToolCallContent("c1", "read", {"path": "a.txt"}))),
    ToolResultMessage("c1", "read", (TextContent("1\thello"),)),
    ContextMessage("the user prefers short answers", "style-plugin"),
    AssistantMessage((ToolCallContent("c2", "shot", {}),)),
    ToolResultMessage("c2", "shot", (ImageContent("aW1n", "image/jpeg"),), is_error=True),
)


async def test_what_is_sent(connect, zpi_model_server):
    zpi_model_server.add_turns("ok")
    provider = connect("openai", max_output=1000)
    await collect(provider, ask(*HISTORY, options={"temperature": 0.2, "max_tokens": 50}))
    request = zpi_model_server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEYS['openai']}"
    body = request.json
    assert body["model"] == "test-model"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.2 and body["max_tokens"] == 50  # options win, last
    assert "reasoning_effort" not in body
    assert body["tools"] == [{"type": "function", "function": {
        "name": "read", "description": "Read a file", "parameters": {
            "type": "object", "properties": {"path": {"type": "string"}},
            "required": ["path"]}}}]
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [
            {"type": "text", "text": "what is in a.txt?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}}]},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read", "arguments": '{"path": "a.txt"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "1\thello"},
        {"role": "user", "content": '<system-reminder>\n'
                                    'the user prefers short answers\n</system-reminder>'},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "shot", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "(see the images below)"},
        {"role": "user", "content": [
            {"type": "text", "text": "(images from tool shot, call c2)"},
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,aW1n"}}]},
    ]


@pytest.mark.parametrize("reasoning, level, sent", [
    (True, "high", "high"), (True, "minimal", "minimal"), (True, "off", None),
    (True, None, None), (False, "high", None),
])
async def test_reasoning_effort_only_for_reasoning_models(connect, zpi_model_server,
                                                          reasoning, level, sent):
    zpi_model_server.add_turns("ok")
    provider = connect("openai", reasoning=reasoning, max_output=4096)
    await collect(provider, ask(reasoning=level))
    body = zpi_model_server.requests[0].json
    assert body.get("reasoning_effort") == sent
    limit = "max_completion_tokens" if reasoning else "max_tokens"
    assert body[limit] == 4096


def sse(*chunks: str) -> bytes:
    return b"".join(b"data: " + c.encode() + b"\n\n" for c in chunks)


def delta(d: str, finish: str = "null") -> str:
    return '{"choices":[{"index":0,"delta":' + d + ',"finish_reason":' + finish + '}]}'


async def test_calls_may_share_an_index_with_new_ids_and_done_may_be_missing(
        connect, zpi_model_server):
    zpi_model_server.fail_next(raw=sse(
        delta('{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":""}}]}'),
        delta('{"tool_calls":[{"index":0,"id":"b","function":{"name":"y","arguments":"{}"}}]}'),
        delta("{}", '"tool_calls"'),
        '{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,'
        '"prompt_cache_hit_tokens":2}}'))
    result = said(await collect(connect("openai")))
    assert result.calls == (("a", "x", {}), ("b", "y", {}))
    assert result.usage == Usage(3, 1, 2) and result.stop == "tool_use"


async def test_finish_reasons_are_mapped(connect, zpi_model_server):
    zpi_model_server.fail_next(raw=sse(delta('{"content":"cut"}', '"length"'), "[DONE]"))
    assert said(await collect(connect("openai"))).stop == "max_tokens"


async def test_invalid_tool_arguments_are_a_stream_error(connect, zpi_model_server):
    zpi_model_server.fail_next(raw=sse(
        delta('{"tool_calls":[{"index":0,"id":"a","function":{"name":"read",'
              '"arguments":"{\\"path\\": "}}]}'),
        delta("{}", '"tool_calls"'), "[DONE]"))
    with pytest.raises(ProviderStreamError) as info:
        await collect(connect("openai"))
    assert "invalid JSON arguments for tool 'read'" in str(info.value)
    assert "'{\"path\": '" in str(info.value)


async def test_arguments_that_are_not_an_object_are_refused(connect, zpi_model_server):
    zpi_model_server.fail_next(raw=sse(
        delta('{"tool_calls":[{"index":0,"id":"a","function":{"name":"read",'
              '"arguments":"[1]"}}]}'), delta("{}", '"tool_calls"'), "[DONE]"))
    with pytest.raises(ProviderStreamError, match="not a JSON object"):
        await collect(connect("openai"))
