"""What both HTTP providers share when they build a request and read tool calls: how context
messages are worded, how tool arguments are decoded, and how an entry becomes a URL and a
streamer. Each wire format keeps only its own shapes in its module.
"""

from __future__ import annotations

import json
import operator
from collections.abc import AsyncIterator, Mapping, Sequence
from itertools import islice
from typing import Any

from ..tools.base import Content, ImageContent, TextContent
from .base import ModelRequest, ProviderStreamError, StreamEvent
from .catalog import DEFAULT_BASE_URL, ModelEntry, RequestPolicy, credentials
from .http import HTTPStreamer, StreamDecoder, encode_body
from .messages import ContextMessage, Message, reminder
from .reasoning import THINKING_BUDGETS, requested_level

__all__ = ["HISTORY", "THINKING_BUDGETS", "HTTPProvider", "WireHistory", "context_text",
           "encode", "images_of", "make_streamer", "reasoning_level", "splice_body",
           "text_of", "tool_arguments"]

#: ``json.dumps(value, ensure_ascii=False)`` without building an encoder per call.
encode = json.JSONEncoder(ensure_ascii=False).encode

#: Stands for the history in a request body until :func:`splice_body` puts it in.
HISTORY: list[Any] = []



def context_text(message: ContextMessage) -> str:
    """A plugin's context as the model reads it: a ``<system-reminder>`` block (which plugin
    added it is kept in the history and the transcript, not shown to the model)."""
    return reminder(message.text)


def text_of(content: tuple[Content, ...]) -> str:
    return "\n".join(c.text for c in content if isinstance(c, TextContent))


def images_of(content: tuple[Content, ...]) -> list[ImageContent]:
    return [c for c in content if isinstance(c, ImageContent)]


def reasoning_level(entry: ModelEntry, level: str | None) -> str | None:
    """The level to ask for, or None: only models that reason get one (see
    :func:`.reasoning.reasoning_kind`); "off" is none."""
    return requested_level(entry, level)


def tool_arguments(provider: str, name: str, raw: str) -> dict[str, Any]:
    """The complete argument text of a tool call as an object ("" means {})."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ProviderStreamError(provider, f"the model sent invalid JSON arguments for tool "
                                  f"{name!r} ({exc})", data=raw) from None
    if not isinstance(value, dict):
        raise ProviderStreamError(provider, f"the model sent arguments for tool {name!r} that "
                                  "are not a JSON object", data=raw)
    return value


def make_streamer(entry: ModelEntry, settings: Mapping[str, Any], path: str, *,
                  auth: Mapping[str, str], headers: Mapping[str, str] | None = None,
                  **kwargs: Any) -> HTTPStreamer:
    """The streamer for ``entry``: base URL (entry, else the provider's default) + ``path``;
    ``headers``, then the entry's own, then ``auth`` with ``{key}`` filled in when there is
    a key (a bearer token instead: ``Authorization: Bearer``)."""
    base = (entry.base_url or DEFAULT_BASE_URL.get(entry.provider, "")).rstrip("/")
    credential = credentials(entry)
    headers = {**(headers or {}), **entry.headers}
    if credential.key is not None and credential.bearer:
        headers["authorization"] = f"Bearer {credential.key}"
    elif credential.key is not None:
        headers.update({k: v.format(key=credential.key) for k, v in auth.items()})
    return HTTPStreamer(entry.provider, base + path, headers, credential,
                        RequestPolicy.from_settings(settings), **kwargs)


#: Encoded wire messages are frozen, as UTF-8, into segments of about this many characters
#: (then a request sends the segments as they are, and nothing a request builds grows with
#: the session: joining a history of megabytes into one body per request made the process's
#: resident set grow with each request, the allocator keeping the ever larger buffers)...
SEGMENT_CHARS = 1024 * 1024
#: ...all but the newest few, which a format may still change (Anthropic's cache breakpoints
#: go on the last two user messages: within the last four, the roles alternating).
OPEN_MESSAGES = 8


class WireHistory:
    """The history folded into the wire's message list, message by message.

    Kept per provider in encoded form (JSON text per wire message), it is extended as the
    history grows: each message is converted and encoded once, not once per request (else
    a turn's cost grows with the session). The messages folded in so far are compared by
    identity with the start of each new history; when they differ (compaction, a rewind, a
    second session on the same provider) the fold starts over. Older encoded messages are
    frozen into UTF-8 segments (``frozen``, see :data:`SEGMENT_CHARS`) that every later
    request sends unchanged. Built fresh, in object form, it gives the body as objects
    (``HTTPProvider.body``) from the same code.
    """

    def __init__(self, encoded: bool, segment: int = SEGMENT_CHARS) -> None:
        self.encoded = encoded
        self.segment = segment
        self.messages: list[Message] = []  # folded in so far
        self.done: list[Any] = []  # wire messages that later messages cannot change
        self.frozen: list[bytes] = []  # older encoded ones, each segment ending in ", "
        self.stuck = False  # a message UTF-8 cannot carry: nothing more is frozen
        self.reset()

    def reset(self) -> None:
        """Forget everything folded in."""
        self.messages, self.done, self.frozen, self.stuck = [], [], [], False

    def add(self, message: Message) -> None:
        """Fold in one message (into ``done`` and the format's open tail)."""
        raise NotImplementedError

    def tail(self) -> list[Any]:
        """The wire messages still open to change by the next message."""
        raise NotImplementedError

    def item(self, value: Any) -> Any:
        """A wire object as kept: encoded, or as it is."""
        return encode(value) if self.encoded else value

    def extend(self, messages: Sequence[Message]) -> list[Any]:
        """The wire messages of ``messages`` not frozen (in object form: all of them): those
        folded in before, if ``messages`` starts with them, plus the rest."""
        known = self.messages
        if known and (len(messages) < len(known)
                      or not all(map(operator.is_, known, islice(messages, len(known))))):
            self.reset()
            known = self.messages
        add = self.add
        for message in islice(messages, len(known), None):
            add(message)
            known.append(message)
        if self.encoded:
            self._freeze()
        return self.done + self.tail()

    def _freeze(self) -> None:
        """Freeze all but the newest :data:`OPEN_MESSAGES` done messages once they reach
        ``segment`` characters."""
        done = self.done
        if self.stuck or len(done) <= OPEN_MESSAGES:
            return
        older = done[:-OPEN_MESSAGES]
        if sum(map(len, older)) < self.segment:
            return
        try:
            segment = (", ".join(older) + ", ").encode("utf-8")
        except UnicodeEncodeError:  # such a body is sent escaped whole (encode_body)
            self.stuck = True
            return
        self.frozen.append(segment)
        self.done = done[-OPEN_MESSAGES:]

    def array(self, wire: Sequence[str], before: Sequence[str] = ()) -> list[bytes]:
        """The whole history's JSON array as UTF-8 pieces, to be sent one after the other:
        ``before`` (wire messages ahead of the history, a system message), the frozen
        segments, then ``wire`` (what :meth:`extend` returned, as the format finished it).
        Raises UnicodeEncodeError for text with lone surrogates."""
        if not self.frozen:
            return [("[" + ", ".join([*before, *wire]) + "]").encode("utf-8")]
        head = "[" + "".join(f"{m}, " for m in before)
        rest = ", ".join(wire).encode("utf-8")
        frozen = list(self.frozen)
        if not rest:  # nothing open (not seen: the newest messages stay open)
            frozen[-1] = frozen[-1][:-2]
        return [head.encode("utf-8"), *frozen, rest + b"]"]


def splice_body(body: Mapping[str, Any], history: Sequence[bytes]) -> list[bytes]:
    """``json.dumps(body, ensure_ascii=False)`` as UTF-8 pieces (joined: the same bytes),
    with the already-encoded ``history`` pieces in place of the :data:`HISTORY`
    placeholder. Raises UnicodeEncodeError for text with lone surrogates."""
    pieces: list[bytes] = []
    text = "{"
    for index, (key, value) in enumerate(body.items()):
        text += f"{', ' if index else ''}{encode(key)}: "
        if value is HISTORY:
            pieces.append(text.encode("utf-8"))
            pieces.extend(history)
            text = ""
        else:
            text += encode(value)
    pieces.append((text + "}").encode("utf-8"))
    return pieces


class HTTPProvider:
    """The shape both HTTP providers share: a catalog entry, one streamer (connection pool)
    per provider object, a request body and a fresh decoder per response."""

    name = "http"

    def __init__(self, entry: ModelEntry, http: HTTPStreamer) -> None:
        self.entry = entry
        self.model = entry.model
        self._http = http

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.entry.name!r} at {self._http.url}>"

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self._http.stream(self.payload_parts(request), self.decoder)

    async def aclose(self) -> None:
        await self._http.aclose()

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request``."""
        return self.frame(request, self.history(request))

    def payload(self, request: ModelRequest) -> bytes:
        """``body(request)`` encoded as ``http.encode_body`` does: :meth:`payload_parts`
        joined."""
        return b"".join(self.payload_parts(request))

    def payload_parts(self, request: ModelRequest) -> list[bytes]:
        """The request body as UTF-8 pieces, with each history message converted and encoded
        once per session (see :class:`WireHistory`); the streamer sends them one after the
        other, so no request joins the history into one buffer."""
        frame = self.frame(request, HISTORY)
        try:
            return splice_body(frame, self.encoded_history(request))
        except UnicodeEncodeError:  # lone surrogates: the body escaped whole, as ASCII
            return [encode_body(self.body(request))]

    def frame(self, request: ModelRequest, history: list[Any]) -> dict[str, Any]:
        """The body around ``history`` (the wire's message list)."""
        raise NotImplementedError

    def history(self, request: ModelRequest) -> list[dict[str, Any]]:
        """The wire's message list for ``request``, as objects."""
        raise NotImplementedError

    def encoded_history(self, request: ModelRequest) -> list[bytes]:
        """``history(request)`` as JSON, UTF-8 pieces from the provider's encoded
        :class:`WireHistory` (:meth:`WireHistory.array`)."""
        raise NotImplementedError

    def decoder(self) -> StreamDecoder:
        raise NotImplementedError
