"""The response cap counts the answer (text, thinking, tool arguments), not the bytes on the
wire: the longest answer a current model gives, one token per event, arrives whole; a runaway
answer, or a stream of nothing but overhead, is still cut with a typed error naming the
setting. Against the loopback server."""

from __future__ import annotations

import json

import pytest

from zpi_host.providers.base import ProviderResponseTooLarge, ProviderStreamBroken
from zpi_host.providers.catalog import RequestPolicy

from .conftest import ask, collect, said

pytestmark = pytest.mark.anyio

#: the longest answer of a current model (output tokens), one per event
MAX_OUTPUT_TOKENS = 128_000
TOKEN = " tok"
#: an OpenAI chunk as the service streams it: ``service_tier``, ``"usage": null`` and the
#: ``obfuscation`` padding on every event (hundreds of bytes around a few characters)
CHUNK = ('data: {{"id":"chatcmpl-Bx7abcdefghijklmnopqrstuvwxyz12","object":'
         '"chat.completion.chunk","created":1733000000,"model":"gpt-4.1-2025-04-14",'
         '"service_tier":"default","system_fingerprint":"fp_b3f1157249","choices":[{{"index":0,'
         '"delta":{{"content":{text}}},"logprobs":null,"finish_reason":null}}],"usage":null,'
         '"obfuscation":"q8ZtR2mWx4LpKs9N"}}\n\n')
END = ('data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1733000000,'
       '"model":"gpt-4.1","choices":[{"index":0,"delta":{},"logprobs":null,'
       '"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')


def one_token_per_event(tokens: int) -> bytes:
    event = CHUNK.format(text=json.dumps(TOKEN))
    return (event * tokens + END).encode()


def error_of(caught: pytest.ExceptionInfo) -> ProviderResponseTooLarge:
    error = caught.value
    cause = error.cause if isinstance(error, ProviderStreamBroken) else error
    assert isinstance(cause, ProviderResponseTooLarge)
    return cause


async def test_the_longest_answer_one_token_per_event_arrives_whole(connect, zpi_model_server):
    body = one_token_per_event(MAX_OUTPUT_TOKENS)
    default = RequestPolicy()
    assert len(body) > 32 * 1024 * 1024  # more than the old wire cap, with default settings
    zpi_model_server.fail_next(raw=body)
    result = said(await collect(connect("openai")))
    assert result.text == TOKEN * MAX_OUTPUT_TOKENS
    assert result.stop == "end_turn"  # "stop" as this host names it
    assert len(result.text) < default.max_answer_chars


async def test_a_runaway_answer_is_cut_at_the_answer_cap(connect, zpi_model_server):
    zpi_model_server.fail_next(raw=one_token_per_event(10_000))  # 40,000 characters
    provider = connect("openai", requests={"max_answer_chars": 30_000})
    with pytest.raises((ProviderResponseTooLarge, ProviderStreamBroken)) as caught:
        await collect(provider)
    cause = error_of(caught)
    assert (cause.limit, cause.setting) == (30_000, "max_answer_chars")
    assert "exceeded 30,000 characters of text, thinking and tool arguments" in str(cause)
    assert "requests.max_answer_chars" in str(cause)


@pytest.mark.parametrize("kind", ["thinking", "tool arguments"])
async def test_thinking_and_tool_arguments_count_too(kind, connect, zpi_model_server):
    turn = {"thinking": "t" * 50_000} if kind == "thinking" else {
        "tool_calls": [{"name": "read", "arguments": {"path": "p" * 50_000}}]}
    zpi_model_server.add_turns(turn)
    provider = connect("anthropic", requests={"max_answer_chars": 20_000})
    with pytest.raises((ProviderResponseTooLarge, ProviderStreamBroken)) as caught:
        await collect(provider, ask("hi"))
    assert error_of(caught).setting == "max_answer_chars"


async def test_a_stream_of_nothing_but_overhead_is_cut_at_the_wire_cap(connect,
                                                                       zpi_model_server):
    start = ('event: message_start\ndata: {"type":"message_start","message":{"usage":'
             '{"input_tokens":9}}}\n\n')
    pings = 'event: ping\ndata: {"type": "ping"}\n\n' * 20_000  # 700 kB, no answer at all
    zpi_model_server.fail_next(raw=(start + pings).encode())
    provider = connect("anthropic", requests={"max_response_bytes": 100_000})
    with pytest.raises((ProviderResponseTooLarge, ProviderStreamBroken)) as caught:
        await collect(provider)
    cause = error_of(caught)
    assert (cause.limit, cause.setting) == (100_000, "max_response_bytes")
    assert "exceeded 100,000 bytes on the wire" in str(cause)
