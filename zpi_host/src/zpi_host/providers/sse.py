"""Incremental server-sent events (``text/event-stream``) framing: bytes in, events out.

Follows the WHATWG event-stream rules: lines end with CRLF, LF or CR; ``event:``, ``data:``
(several data lines are joined with ``\\n``), ``id:`` and ``retry:`` fields, one optional
space after the colon, ``:`` comments, and a blank line dispatches the event (an event without
data is dropped). Two deliberate differences: a line that is neither a field nor a comment is
an error (it means the body is not an event stream, e.g. an HTML page from a proxy), and an
event left unterminated at the end of the body is still dispatched (some servers omit the last
blank line; a truncated JSON payload then fails to parse, which is reported).

Work is split in two so that decoders can skip the second step for the events they recognise
whole (see ``fastpath``): ``SSEParser.feed`` only cuts the body into event blocks (decoded and
LF-normalised), and ``parse_event`` reads one block's fields. The common shapes
(``data: X`` and ``event: NAME\\ndata: X``) are read without splitting lines.
"""

from __future__ import annotations

import codecs

from .base import ProviderStreamError

#: An event larger than this (no blank line in sight) is refused rather than buffered.
MAX_EVENT_CHARS = 16 * 1024 * 1024

_FIELDS = frozenset({"event", "data", "id", "retry"})


class SSEParser:
    """Feed it the body's chunks as they arrive; each ``feed`` returns the event blocks
    completed by that chunk (the text between blank lines). ``close`` returns what the end of
    the body completes. The body is decoded as UTF-8 (a leading byte-order mark is dropped)
    once per chunk, not per event."""

    __slots__ = ("_buffer", "_decode", "_provider")

    def __init__(self, provider: str) -> None:
        self._provider = provider
        self._buffer = ""
        self._decode = codecs.getincrementaldecoder("utf-8-sig")().decode

    def feed(self, chunk: bytes, final: bool = False) -> list[str]:
        try:
            text = self._decode(chunk, final)
        except UnicodeDecodeError as exc:
            raise ProviderStreamError(self._provider, "the event stream is not valid UTF-8",
                                      data=chunk[max(exc.start - 20, 0):exc.start + 180]
                                      ) from None
        data = self._buffer + text if self._buffer else text
        held = ""
        if "\r" in data:
            if data.endswith("\r") and not final:  # may be half of a CRLF split across reads
                data, held = data[:-1], "\r"
            data = data.replace("\r\n", "\n").replace("\r", "\n")
        blocks = data.split("\n\n")
        rest = blocks.pop()
        if len(rest) > MAX_EVENT_CHARS:
            raise ProviderStreamError(self._provider, f"an event is larger than "
                                      f"{MAX_EVENT_CHARS} characters without an end; the "
                                      "response is not a usable event stream", data=rest)
        self._buffer = rest + held
        return blocks

    def close(self) -> list[str]:
        """The end of the body: an unterminated last event is dispatched (see module doc)."""
        blocks = self.feed(b"", final=True)
        rest, self._buffer = self._buffer.strip("\n"), ""
        if rest:
            blocks.append(rest)
        return blocks


def parse_event(block: str, provider: str) -> tuple[str, str, int] | None:
    """(event type, data, offset) of one block, or None when it has no data (comments, a
    lone ``id:``). ``offset`` is where the data starts in ``block`` when the block is exactly
    its framing followed by the data (the shapes decoders may learn), else -1. Event type
    ``"message"`` when the block names none."""
    if block[:6] == "data: ":
        if "\n" not in block:
            return "message", block[6:], 6
    elif block[:7] == "event: ":
        end = block.find("\n")
        if end > 0 and block.startswith("data: ", end + 1) and block.find("\n", end + 1) < 0:
            return block[7:end] or "message", block[end + 7:], end + 7
    event = "message"
    data: list[str] = []
    for line in block.split("\n"):
        if not line or line[0] == ":":  # blank (before the event) or a comment
            continue
        field, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            event = value or "message"
        elif field not in _FIELDS:
            raise ProviderStreamError(
                provider, "malformed server-sent events: a line that is neither a field "
                "(event:, data:, id:, retry:) nor a comment; check that base_url points at "
                "the model API", data=line)
    return (event, "\n".join(data), -1) if data else None
