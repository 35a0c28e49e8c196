"""The providers keep the history's wire form and extend it as the history grows: what they
send must be byte for byte the body built from scratch, and each message is converted once."""

from __future__ import annotations

import json
from typing import Any

import pytest

from zpi_host.providers import anthropic, openai, responses
from zpi_host.providers.base import ModelRequest
from zpi_host.providers.catalog import ModelEntry
from zpi_host.providers.http import encode_body
from zpi_host.providers.messages import (
    AssistantMessage,
    ContextMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from zpi_host.support.listview import ListView

from .conftest import READ

PROVIDERS = {"openai": openai.OpenAIProvider, "anthropic": anthropic.AnthropicProvider}
#: the function that converts one history message, per format
CONVERTERS = {"openai": "_message", "anthropic": "_blocks"}


def provider_for(fmt: str, segment: int | None = None) -> Any:
    """A provider of ``fmt``; with ``segment``, its history is frozen in segments of about
    that many characters (the default is too large for these short histories)."""
    entry = ModelEntry(name=f"{fmt}:m", provider=fmt, model="m",
                       base_url="http://127.0.0.1:9", api_key="k", max_output=1000)
    provider = PROVIDERS[fmt](entry, {})
    if segment is not None:
        provider._wire.segment = segment
    return provider


def exchange(i: int) -> list[Message]:
    """One turn of every shape the formats treat differently."""
    image = ImageContent("aGk=", "image/png")
    return [
        AssistantMessage((ThinkingContent(f"think {i}", f"sig-{i}"), ThinkingContent("unsigned"),
                          TextContent(f"Lesen {i} \u2014 \u00fcber"),
                          ToolCallContent(f"call_{i}a", "read", {"path": f"f{i}.txt", "n": i}),
                          ToolCallContent(f"call_{i}b", "read", {"path": "\u00e9t\u00e9.png"}))),
        ToolResultMessage(f"call_{i}a", "read", (TextContent(f"line {i}\n\"quoted\"\t\\"),)),
        ToolResultMessage(f"call_{i}b", "read", (image,) if i % 3 == 0 else (TextContent(""),),
                          is_error=i % 5 == 0),
        *([ContextMessage(f"context {i}", "plugin-x")] if i % 2 else []),
        *([UserMessage((TextContent(f"and {i}"), image))] if i % 4 == 0 else []),
        *([AssistantMessage(())] if i % 7 == 0 else []),
    ]


def request(messages: list[Message], **fields: Any) -> ModelRequest:
    return ModelRequest("m", fields.pop("system_prompt", "be brief"), ListView(messages),
                        (READ,), **fields)


def reference(provider: Any, req: ModelRequest) -> bytes:
    return encode_body(provider.body(req))


@pytest.mark.parametrize("segment", [None, 300], ids=["open", "frozen"])
@pytest.mark.parametrize("fmt", PROVIDERS)
def test_sent_bytes_equal_the_body_built_from_scratch(fmt: str, segment: int | None) -> None:
    provider = provider_for(fmt, segment)
    history: list[Message] = [UserMessage.text("start")]
    for i in range(30):
        history.extend(exchange(i))
        req = request(history, reasoning_level="high")
        assert provider.payload(req) == reference(provider, req)
    # compaction replaces the history; then the old history comes back (a second session)
    compacted: list[Message] = [UserMessage.text("summary of the above"), *history[-4:]]
    for messages in (compacted, history, history[:10], compacted + exchange(99)):
        req = request(messages, system_prompt="", options={"temperature": 0})
        assert provider.payload(req) == reference(provider, req)


@pytest.mark.parametrize("segment", [None, 300], ids=["open", "frozen"])
@pytest.mark.parametrize("fmt", PROVIDERS)
def test_a_lone_surrogate_is_sent_escaped_as_before(fmt: str, segment: int | None) -> None:
    provider = provider_for(fmt, segment)
    history: list[Message] = [UserMessage.text("start"), *(m for i in range(8)
                                                           for m in exchange(i))]
    assert provider.payload(request(history)) == reference(provider, request(history))
    history.append(UserMessage.text("broken \udc80 text"))
    sent = provider.payload(request(history))
    assert sent == reference(provider, request(history)) and b"\\udc80" in sent
    history.append(UserMessage.text("fine again \u00e9"))
    assert provider.payload(request(history)) == reference(provider, request(history))


@pytest.mark.parametrize("fmt", PROVIDERS)
def test_an_option_named_messages_replaces_the_history(fmt: str) -> None:
    provider = provider_for(fmt)
    req = request([UserMessage.text("hi")], options={"messages": [{"role": "user",
                                                                   "content": "other"}]})
    assert json.loads(provider.payload(req))["messages"] == [{"role": "user",
                                                              "content": "other"}]


@pytest.mark.parametrize("fmt", PROVIDERS)
def test_each_message_is_converted_once_while_the_history_grows(
        fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module = openai if fmt == "openai" else anthropic
    name = CONVERTERS[fmt]
    convert = getattr(module, name)
    converted: list[Message] = []

    def counting(message: Message) -> Any:
        converted.append(message)
        return convert(message)

    monkeypatch.setattr(module, name, counting)
    provider = provider_for(fmt)
    history: list[Message] = [UserMessage.text("start")]
    for i in range(20):
        history.extend(exchange(i))
        provider.payload(request(history))
    assert len(converted) == len(history)
    assert {id(m) for m in converted} == {id(m) for m in history}
    converted.clear()
    compacted = [UserMessage.text("summary"), *history[-3:]]
    provider.payload(request(compacted))  # a new history: converted afresh, once
    provider.payload(request(compacted))
    assert converted == compacted


@pytest.mark.parametrize("fmt", PROVIDERS)
def test_a_long_history_is_sent_in_segments_frozen_once(fmt: str) -> None:
    """Older messages go into UTF-8 segments that later requests send as they are: no
    request joins the whole history into one buffer."""
    provider = provider_for(fmt, 2000)
    history: list[Message] = [UserMessage.text("start")]
    kept: dict[int, bytes] = {}
    for i in range(40):
        history.extend(exchange(i))
        req = request(history)
        parts = provider.payload_parts(req)
        assert b"".join(parts) == reference(provider, req)
        assert sum(map(len, provider._wire.done[:-8])) < 2000  # the rest is frozen
        for segment in provider._wire.frozen:
            assert kept.setdefault(id(segment), segment) is segment
            assert any(part is segment for part in parts)  # sent as it is, not copied
    frozen = provider._wire.frozen
    assert len(frozen) >= 5
    assert all(len(segment) >= 2000 for segment in frozen)  # a segment, not a request's worth


def test_the_responses_history_is_frozen_to_the_same_bytes() -> None:
    entry = ModelEntry(name="openai:m", provider="openai", model="m", api="responses",
                       base_url="http://127.0.0.1:9", api_key="k", max_output=1000)
    provider = responses.ResponsesProvider(entry, {})
    provider._wire.segment = 300
    history: list[Message] = [UserMessage.text("start")]
    for i in range(12):
        history.extend(exchange(i))
        req = request(history, reasoning_level="high")
        assert provider.payload(req) == reference(provider, req)
    assert provider._wire.frozen


@pytest.mark.anyio
@pytest.mark.parametrize("fmt", PROVIDERS)
async def test_a_body_sent_in_pieces_arrives_whole_with_its_length(
        fmt: str, connect: Any, zpi_model_server: Any) -> None:
    """Over HTTP the pieces make the body a single buffer would (``Content-Length``, no
    chunked encoding), on a retry too."""
    from zpi_host.providers import http

    provider = connect(fmt)
    provider._wire.segment = 2000
    history: list[Message] = [UserMessage.text("start")]
    for i in range(60):
        history.append(AssistantMessage((ToolCallContent(f"call_{i}", "read", {"path": "f"}),)))
        history.append(ToolResultMessage(f"call_{i}", "read",
                                         (TextContent(f"{i} \u00fcber " * 100),)))
    req = request(history)
    expected = reference(provider, req)
    assert len(http.coalesce(provider.payload_parts(req))) > 1
    zpi_model_server.add_turns("ok", "ok")
    zpi_model_server.fail_next(500)
    for _ in range(2):
        [event async for event in provider.stream(req)]
    assert len(zpi_model_server.requests) == 3  # a retry, then the next request
    for sent in zpi_model_server.requests:
        assert sent.body == expected
        assert sent.headers["content-length"] == str(len(expected))
        assert "transfer-encoding" not in sent.headers


def test_small_pieces_are_joined_and_large_ones_sent_as_they_are() -> None:
    from zpi_host.providers.http import coalesce

    big = b"x" * 100
    assert coalesce([b"{", b"[", big, b"a", b"b", big, b"]}"], size=50) == [
        b"{[", big, b"ab", big, b"]}"]
    assert coalesce([b"{", b"[]", b"}"], size=50) == [b"{[]}"]
    assert coalesce([big], size=50)[0] is big
