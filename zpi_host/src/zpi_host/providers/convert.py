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


class WireHistory:
    """The history folded into the wire's message list, message by message.

    Kept per provider in encoded form (JSON text per wire message), it is extended as the
    history grows: each message is converted and encoded once, not once per request (else
    a turn's cost grows with the session). The messages folded in so far are compared by
    identity with the start of each new history; when they differ (compaction, a rewind, a
    second session on the same provider) the fold starts over. Built fresh, in object form,
    it gives the body as objects (``HTTPProvider.body``) from the same code.
    """

    def __init__(self, encoded: bool) -> None:
        self.encoded = encoded
        self.messages: list[Message] = []  # folded in so far
        self.done: list[Any] = []  # wire messages that later messages cannot change
        self.reset()

    def reset(self) -> None:
        """Forget everything folded in."""
        self.messages, self.done = [], []

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
        """The wire messages of ``messages``: those folded in before, if ``messages`` starts
        with them, plus the rest."""
        known = self.messages
        if known and (len(messages) < len(known)
                      or not all(map(operator.is_, known, islice(messages, len(known))))):
            self.reset()
            known = self.messages
        add = self.add
        for message in islice(messages, len(known), None):
            add(message)
            known.append(message)
        return self.done + self.tail()


def splice_body(body: Mapping[str, Any], history: str) -> bytes:
    """``json.dumps(body, ensure_ascii=False)`` as UTF-8, byte for byte, with the
    already-encoded ``history`` in place of the :data:`HISTORY` placeholder. Raises
    UnicodeEncodeError for text with lone surrogates."""
    parts = [f"{encode(key)}: {history if value is HISTORY else encode(value)}"
             for key, value in body.items()]
    return ("{" + ", ".join(parts) + "}").encode("utf-8")


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
        return self._http.stream(self.payload(request), self.decoder)

    async def aclose(self) -> None:
        await self._http.aclose()

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request``."""
        return self.frame(request, self.history(request))

    def payload(self, request: ModelRequest) -> bytes:
        """``body(request)`` encoded as ``http.encode_body`` does, with each history message
        converted and encoded once per session (see :class:`WireHistory`)."""
        frame = self.frame(request, HISTORY)
        try:
            return splice_body(frame, self.encoded_history(request))
        except UnicodeEncodeError:  # lone surrogates: the body escaped whole, as ASCII
            return encode_body(self.body(request))

    def frame(self, request: ModelRequest, history: list[Any]) -> dict[str, Any]:
        """The body around ``history`` (the wire's message list)."""
        raise NotImplementedError

    def history(self, request: ModelRequest) -> list[dict[str, Any]]:
        """The wire's message list for ``request``, as objects."""
        raise NotImplementedError

    def encoded_history(self, request: ModelRequest) -> str:
        """``history(request)`` as JSON text, from the provider's encoded
        :class:`WireHistory`."""
        raise NotImplementedError

    def decoder(self) -> StreamDecoder:
        raise NotImplementedError
