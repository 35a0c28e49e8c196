"""SSE framing: line endings, fields, comments, chunk boundaries anywhere, malformed input."""

from __future__ import annotations

import pytest

from zpi_host.providers.base import ProviderStreamError
from zpi_host.providers.sse import SSEParser, parse_event


def events(*chunks: bytes) -> list[tuple[str, str]]:
    parser = SSEParser("test")
    blocks = [b for chunk in chunks for b in parser.feed(chunk)] + parser.close()
    return [e[:2] for e in (parse_event(b, "test") for b in blocks) if e is not None]


STREAM = (b": a comment\n"
          b"event: first\ndata: one\n\n"
          b"data: two\ndata:  three\n\n"
          b"id: 7\nretry: 100\ndata\n\n"
          b"event: only-an-id\nid: 8\n\n"
          b"data:{\"x\": 1}\n\n")
EXPECTED = [("first", "one"), ("message", "two\n three"), ("message", ""),
            ("message", '{"x": 1}')]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_fields_comments_and_every_line_ending(newline):
    assert events(STREAM.replace(b"\n", newline)) == EXPECTED


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_any_chunk_boundary_gives_the_same_events(newline):
    data = ("\ufeff" + "event: é\ndata: ünïcode 漢字\n\n").encode() + STREAM
    data = data.replace(b"\n", newline)
    whole = events(data)
    assert whole[0] == ("é", "ünïcode 漢字") and whole[1:] == EXPECTED
    for cut in range(len(data)):
        assert events(data[:cut], data[cut:]) == whole, cut
    assert events(*[data[i:i + 1] for i in range(len(data))]) == whole


def test_an_unterminated_last_event_is_still_dispatched():
    assert events(b"data: [DONE]") == [("message", "[DONE]")]
    assert events(b"data: a\n\ndata: b\n") == [("message", "a"), ("message", "b")]


def test_blocks_are_split_without_reading_fields():
    parser = SSEParser("test")
    assert parser.feed(b"event: x\ndata: 1\n\ndata: 2\n\n\n\ndata: 3") == [
        "event: x\ndata: 1", "data: 2", ""]
    assert parser.close() == ["data: 3"]
    assert parse_event("event: x\ndata: 1", "t") == ("x", "1", 15)
    assert parse_event("data: 2", "t") == ("message", "2", 6)
    assert parse_event("id: 1\ndata: 2", "t") == ("message", "2", -1)
    assert parse_event(": only a comment", "t") is None


def test_a_line_that_is_not_a_field_is_an_error_naming_the_provider():
    with pytest.raises(ProviderStreamError) as info:
        events(b"<html><body>Bad gateway</body></html>\n\n")
    message = str(info.value)
    assert message.startswith("model provider test (HTTP 200): malformed server-sent events")
    assert "'<html><body>Bad gateway</body></html>'" in message


def test_invalid_utf8_is_an_error():
    with pytest.raises(ProviderStreamError, match="not valid UTF-8"):
        events(b"data: \xff\xfe\n\n")
