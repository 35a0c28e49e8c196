"""The decoding fast paths mean exactly what the full parse means."""

from __future__ import annotations

import json
import random

import pytest

from zpi_host.providers.anthropic import MessagesDecoder
from zpi_host.providers.base import Done, ReasoningDelta, TextDelta, ToolCallDelta
from zpi_host.providers.fastpath import REASONING, TEXT, DeltaBuffer, DeltaTemplates
from zpi_host.providers.openai import ChatDecoder
from zpi_host.providers.script import ScriptedTurn
from zpi_host.providers.sse import SSEParser
from zpi_host.testing.model_server import sse_frames

from .conftest import said

HEAD = 'data: {"id":"c1","choices":[{"index":0,"delta":{"content":'
TAIL = '},"finish_reason":null}]}'


def block(value: str, head: str = HEAD, tail: str = TAIL) -> str:
    return head + json.dumps(value) + tail


def learned(text: str = "first") -> DeltaTemplates:
    templates = DeltaTemplates(['"content":"'])
    b = block(text)
    templates.learn(b, 6, json.loads(b[6:]), ("choices", 0, "delta", "content"), "text")
    return templates


@pytest.mark.parametrize("value", ["x", "", 'quote " and \\ backslash', "line\nbreak",
                                   "漢字 é \u2028", '"content":"', "\x00"])
def test_a_learned_shape_matches_any_string(value):
    assert learned().match(block(value)) == ("text", value)


@pytest.mark.parametrize("other", [
    block("x", tail='},"finish_reason":"stop"}]}'),
    block("x", head=HEAD.replace("c1", "c2")),
    block("x", tail=TAIL + " "),
    HEAD + '"a" "b"' + TAIL,
    HEAD + '"a","role":"x"' + TAIL,
    HEAD + '"bad \x01 control"' + TAIL,
    "event: x\n" + block("x"),
])
def test_anything_else_does_not_match(other):
    assert learned().match(other) is None


def test_learning_is_verified_against_the_path():
    templates = DeltaTemplates(['"content":"'])
    b = 'data: {"content":"a","delta":{"content":"a"}}'
    templates.learn(b, 6, json.loads(b[6:]), ("delta", "content"), "text")
    assert templates.match('data: {"content":"a","delta":{"content":"b"}}') is None
    assert templates.match('data: {"content":"b","delta":{"content":"a"}}') is None
    templates.learn(b, -1, json.loads(b[6:]), ("content",), "text")  # not a plain block
    assert templates.match(b) is None


def test_delta_buffer_merges_runs_of_one_kind():
    buffer = DeltaBuffer()
    for kind, value in [(TEXT, "a"), (TEXT, "b"), (REASONING, "r"), (0, "{"), (0, "}"),
                        (1, "["), (TEXT, ""), (TEXT, "c")]:
        buffer.add(kind, value)
    buffer.emit(Done("end_turn"))
    assert buffer.take() == [TextDelta("ab"), ReasoningDelta("r"), ToolCallDelta(0, "{}"),
                             ToolCallDelta(1, "["), TextDelta("c"), Done("end_turn")]
    assert buffer.take() == []


TRICKY = ['"content":"', '\\"text\\":\\"', "\\", '"', "\n", "é", "漢字", "\u2028", "}", "{",
          " ", "a", "bc", '"partial_json":"', "\t", "\x00"]


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
@pytest.mark.parametrize("seed", range(8))
def test_fast_and_full_decoding_agree(fmt, seed):
    rng = random.Random(seed)

    def text(n: int) -> str:
        return "".join(rng.choice(TRICKY) for _ in range(n))

    turn = ScriptedTurn.parse({
        "thinking": text(40), "text": text(200),
        "tool_calls": [{"name": "t", "arguments": {"a": text(30), "b": [text(5), 1]}},
                       {"name": "u", "arguments": {}}],
        "usage": {"input_tokens": 3, "output_tokens": 4, "cache_read_tokens": 2}}, "turn")
    data = b"".join(sse_frames(fmt, turn, piece_chars=rng.randint(1, 4)))
    cuts = sorted(rng.sample(range(1, len(data)), 30))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]

    def decode(fast: bool) -> list:
        decoder = ChatDecoder("t") if fmt == "openai" else MessagesDecoder("t")
        if not fast:
            decoder.templates = DeltaTemplates(())  # learns nothing: every event parsed
        parser = SSEParser("t")
        out = [e for c in chunks for e in decoder.feed(parser.feed(c))]
        assert (decoder.templates.learned > 0) is fast
        return out + decoder.feed(parser.close()) + decoder.finish()

    fast, full = said(decode(True)), said(decode(False))
    assert fast == full
    assert (fast.text, fast.reasoning) == (turn.text, turn.thinking)
    assert [c[2] for c in fast.calls] == [dict(c.arguments) for c in turn.tool_calls]
