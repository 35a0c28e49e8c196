"""Fast paths for stream decoding, shared by the HTTP providers.

A streamed answer is tens of thousands of small events, and reading each one's SSE fields
and running ``json.loads`` on it costs more than everything else together. Two things keep
decoding cheap:

``DeltaTemplates``: most events differ from an earlier event of the same stream only in one
string (the next piece of text, reasoning or tool arguments). A decoder parses the first event
of a shape in full and, when it was a plain delta, teaches it here with what it meant: the
event block's text before and after that string (SSE framing included) is remembered. A later
block with the same prefix and suffix and exactly one valid JSON string between them is
decoded with one ``scanstring`` call. Learning is verified: the event's data is re-parsed
with a sentinel in the string's place and must equal the full parse everywhere else, so a
hit means exactly what the full path would have produced. (The string between is strict
JSON, so it holds no raw newline: the block cannot hide a second SSE line.)

``DeltaBuffer``: deltas of the same kind that were decoded from one network read are merged
into one event. When the model streams slower than the host reads, each read holds one event
and nothing changes; when a backlog arrives at once, the consumer gets it in one piece
instead of paying per fragment.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from .base import ReasoningDelta, StreamEvent, TextDelta, ToolCallDelta

#: DeltaBuffer kinds; a tool call's arguments use the call's index (>= 0).
TEXT, REASONING = -1, -2

_SENTINEL = "\x00zpi-template-sentinel"
_SENTINEL_JSON = json.dumps(_SENTINEL)[1:-1]


class DeltaTemplates:
    """Templates learned from one stream. ``markers`` are the JSON text that opens a delta's
    string, e.g. ``'"content":"'``, used to find the string when learning (compact JSON is
    assumed; other spellings simply always take the full parse)."""

    __slots__ = ("_last", "_learning", "_markers", "_room", "_templates")

    def __init__(self, markers: Sequence[str], limit: int = 16, attempts: int = 64) -> None:
        self._markers = tuple(markers)
        self._templates: list[tuple[str, str, int, int, Any]] = []
        self._last: tuple[str, str, int, int, Any] | None = None
        self._learning = attempts
        self._room = limit

    @property
    def learned(self) -> int:
        """How many shapes are known (for tests and diagnostics)."""
        return len(self._templates)

    def match(self, text: str) -> tuple[Any, str] | None:
        """(meaning, string) when the block ``text`` has the shape of a learned event."""
        last = self._last
        if last is not None:
            prefix, suffix, start, tail, meaning = last
            if text.startswith(prefix) and text.endswith(suffix):
                try:
                    value, end = scanstring(text, start)
                except ValueError:
                    return None
                if end == len(text) - tail:
                    return meaning, value
        for template in self._templates:
            if template is last:
                continue
            prefix, suffix, start, tail, meaning = template
            if text.startswith(prefix) and text.endswith(suffix):
                try:
                    value, end = scanstring(text, start)
                except ValueError:
                    continue
                if end == len(text) - tail:
                    self._last = template
                    return meaning, value
        return None

    def learn(self, block: str, offset: int, parsed: Any, path: Sequence[str | int],
              meaning: Any) -> None:
        """The event ``block``, whose data starts at ``offset`` (-1: not a plain framing,
        nothing is learned), parsed to ``parsed`` and means ``meaning`` given the string at
        ``path``; remember its shape if a marker finds that string."""
        if offset < 0 or self._learning <= 0 or len(self._templates) >= self._room:
            return
        self._learning -= 1
        for marker in self._markers:
            pos = block.find(marker, offset)
            if pos <= offset or block[pos - 1] not in "{,":  # the marker must open a key
                continue
            start = pos + len(marker)
            try:
                value, end = scanstring(block, start)
                probe = json.loads(block[offset:start] + _SENTINEL_JSON + block[end - 1:])
                holder = probe
                for key in path[:-1]:
                    holder = holder[key]
                if holder[path[-1]] != _SENTINEL:
                    continue
                holder[path[-1]] = value
            except (ValueError, LookupError, TypeError):
                continue
            if probe == parsed:
                suffix = block[end - 1:]
                template = (block[:start], suffix, start, len(suffix) - 1, meaning)
                self._templates.append(template)
                self._last = template
                return


class DeltaBuffer:
    """Collects the events of one ``feed``; consecutive deltas of one kind become one event."""

    __slots__ = ("_kind", "_out", "_parts")

    def __init__(self) -> None:
        self._out: list[StreamEvent] = []
        self._parts: list[str] = []
        self._kind = 0

    def add(self, kind: int, value: str) -> None:
        """A delta: ``TEXT``, ``REASONING`` or a tool call's index."""
        if value:
            if kind != self._kind or not self._parts:
                if self._parts:
                    self._flush()
                self._kind = kind
            self._parts.append(value)

    def emit(self, event: StreamEvent) -> None:
        """Any other event, after the deltas before it."""
        if self._parts:
            self._flush()
        self._out.append(event)

    def take(self) -> list[StreamEvent]:
        if self._parts:
            self._flush()
        out, self._out = self._out, []
        return out

    def _flush(self) -> None:
        parts, self._parts = self._parts, []
        value = parts[0] if len(parts) == 1 else "".join(parts)
        kind = self._kind
        self._out.append(TextDelta(value) if kind == TEXT else ReasoningDelta(value)
                         if kind == REASONING else ToolCallDelta(kind, value))
