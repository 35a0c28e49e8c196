"""What both HTTP providers share when they build a request and read tool calls: how context
messages are worded, how tool arguments are decoded, and how an entry becomes a URL and a
streamer. Each wire format keeps only its own shapes in its module.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from ..messages import ContextMessage
from ..tools.base import Content, ImageContent, TextContent
from .base import ModelRequest, ProviderStreamError, StreamEvent
from .catalog import DEFAULT_BASE_URL, ModelEntry, RequestPolicy, credentials
from .http import HTTPStreamer, StreamDecoder

#: Thinking budgets (tokens) per reasoning level, for formats that take a budget.
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}


def context_text(message: ContextMessage) -> str:
    """A plugin's context as the model reads it: attributed to its source."""
    return f"<context source=\"{message.source}\">\n{message.text}\n</context>"


def text_of(content: tuple[Content, ...]) -> str:
    return "\n".join(c.text for c in content if isinstance(c, TextContent))


def images_of(content: tuple[Content, ...]) -> list[ImageContent]:
    return [c for c in content if isinstance(c, ImageContent)]


def reasoning_level(entry: ModelEntry, level: str | None) -> str | None:
    """The level to ask for, or None: only models marked ``reasoning`` get one; "off" is
    none."""
    if not entry.reasoning or level is None or level == "off":
        return None
    return level


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
    a key."""
    base = (entry.base_url or DEFAULT_BASE_URL.get(entry.provider, "")).rstrip("/")
    credential = credentials(entry)
    headers = {**(headers or {}), **entry.headers}
    if credential.key is not None:
        headers.update({k: v.format(key=credential.key) for k, v in auth.items()})
    return HTTPStreamer(entry.provider, base + path, headers, credential,
                        RequestPolicy.from_settings(settings), **kwargs)


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
        return self._http.stream(self.body(request), self.decoder)

    async def aclose(self) -> None:
        await self._http.aclose()

    def body(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    def decoder(self) -> StreamDecoder:
        raise NotImplementedError
