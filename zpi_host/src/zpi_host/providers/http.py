"""HTTP for the model providers: POST a JSON body, stream the answer as server-sent events,
retry what is safe to retry, and turn every failure into a typed error.

Retries: 429, 408, 5xx and connection failures are retried up to ``requests.max_retries``
times, but only until the first event has been yielded: after that the consumer holds part of
the answer, so a failure raises :class:`ProviderStreamBroken` instead. The wait is
exponential backoff with full jitter (``retry_base_delay * 2**attempt``, at most
``retry_max_delay``), or the service's ``Retry-After`` (seconds or an HTTP date; also
``retry-after-ms``) capped at ``retry_after_max``. Waiting uses ``anyio.sleep``, so an abort
cancels it.

One answer may hold at most ``requests.max_answer_chars`` characters of text, thinking and
tool arguments (4,000,000 by default), however many events carry them, and its stream at
most ``requests.max_response_bytes`` bytes on the wire (512 MiB: only a guard against a
stream of overhead, pings or empty events); past either, reading stops with
:class:`ProviderResponseTooLarge`, which is not retried.

The API key travels only in request headers; error bodies are redacted before they are
quoted, and no message, repr or log line carries the key.
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol

import anyio
import httpx

from ..errors import ContextOverflowError
from ..support.redaction import Redactor
from .base import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderHTTPError,
    ProviderResponseTooLarge,
    ProviderStreamBroken,
    ProviderStreamError,
    ReasoningDelta,
    Retrying,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    excerpt,
)
from .catalog import Credential, RequestPolicy
from .sse import SSEParser

#: How much of an error body is read to explain the error.
ERROR_BODY_LIMIT = 4096
OVERFLOW_PHRASES = ("maximum context length", "context length", "context_length_exceeded",
                    "context window", "context limit", "prompt is too long",
                    "exceeds the context")


class StreamDecoder(Protocol):
    """A wire format's event decoder, one per response: SSE event blocks in (see
    ``sse.parse_event``), stream events out."""

    def feed(self, blocks: list[str]) -> list[StreamEvent]: ...

    def finish(self) -> list[StreamEvent]:
        """The body ended: the last events, or ProviderStreamError if no stop event came."""
        ...


class HTTPStreamer:
    """One provider's connection pool (an ``httpx.AsyncClient``, made on first use and
    closed by ``aclose``) and its request policy."""

    def __init__(
        self,
        provider: str,
        url: str,
        headers: Mapping[str, str],
        credential: Credential,
        policy: RequestPolicy,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.provider, self.url, self.policy = provider, url, policy
        self._headers = {"content-type": "application/json", "accept": "text/event-stream",
                         **headers}
        self._credential = credential
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._pool_key: Any = None  # set while the client is borrowed from .pools

    def __repr__(self) -> str:
        return f"<HTTPStreamer {self.provider} {self.url}>"

    async def aclose(self) -> None:
        client, self._client = self._client, None
        key, self._pool_key = self._pool_key, None
        if client is not None and key is not None:
            from .pools import give_back

            await give_back(key, client)
        elif client is not None:
            await client.aclose()

    def _client_for_request(self) -> httpx.AsyncClient:
        """The client: this streamer's own with an injected transport, else the one every
        provider on this loop shares for the same origin and settings (:mod:`.pools`)."""
        if self._client is None:
            p = self.policy
            timeout = httpx.Timeout(connect=p.connect_timeout, read=p.read_timeout,
                                    write=p.write_timeout, pool=p.connect_timeout)
            tls = plain_http_tls(self.url, os.environ)

            def make() -> httpx.AsyncClient:
                from .pools import KEEP_ALIVE

                limits = httpx.Limits(max_connections=None,
                                      max_keepalive_connections=KEEP_ALIVE)
                return httpx.AsyncClient(timeout=timeout, transport=self._transport,
                                         follow_redirects=False, limits=limits, **tls)

            if self._transport is not None:
                self._client = make()
            else:
                from .pools import borrow, pool_key

                settings = (p.connect_timeout, p.read_timeout, p.write_timeout,
                            tuple(sorted(tls)))  # the plain-HTTP context or the default
                self._pool_key = pool_key(self.url, self._headers, settings)
                self._client = (make() if self._pool_key is None
                                else borrow(self._pool_key, make))
        return self._client


    async def stream(
        self, body: Mapping[str, Any] | bytes | list[bytes],
        decoder: Callable[[], StreamDecoder],
    ) -> AsyncIterator[StreamEvent]:
        """POST ``body`` (an object, or its JSON already encoded, whole or in pieces to send
        one after the other) and yield the decoded events; ``decoder()`` makes a fresh
        decoder for each attempt."""
        chunks = coalesce(body) if isinstance(body, list) else [
            body if isinstance(body, bytes) else encode_body(body)]
        headers = self._headers
        # a body in pieces, or a large one, goes through a one-shot iterator with the length
        # a single buffer would have: httpx keeps a finished response and its request in
        # reference cycles until the collector runs, and bytes given as the content would
        # stay with them (megabytes a request in a long session)
        streamed = len(chunks) > 1 or len(chunks[0]) > CHUNK_BYTES
        if streamed:
            headers = {**headers, "Content-Length": str(sum(map(len, chunks)))}
        client = self._client_for_request()
        attempt = 0
        while True:
            yielded = False
            answered = False
            try:
                content = _send(chunks) if streamed else chunks[0]
                async with client.stream("POST", self.url, content=content,
                                         headers=headers) as response:
                    answered = True
                    status = response.status_code
                    if status >= 300 or _content_type(response).startswith("application/json"):
                        error = await self._error_from(response)
                        delay = self._delay(status, response.headers, attempt)
                    else:
                        parser = SSEParser(self.provider)
                        parse = parser.feed
                        decode = decoder()
                        feed = decode.feed
                        wire = self.policy.max_response_bytes
                        answer = self.policy.max_answer_chars
                        call_ids: set[str] = set()
                        async for chunk in response.aiter_bytes():
                            wire -= len(chunk)
                            if wire < 0:
                                raise ProviderResponseTooLarge(
                                    self.provider, self.policy.max_response_bytes)
                            events = feed(parse(chunk))
                            if events:
                                yielded = True
                                for event in events:
                                    answer -= self._answer_size(event, call_ids)
                                    if answer < 0:
                                        raise ProviderResponseTooLarge(
                                            self.provider, self.policy.max_answer_chars,
                                            "max_answer_chars")
                                    yield event
                        for event in [*feed(parser.close()), *decode.finish()]:
                            self._answer_size(event, call_ids)
                            yield event
                        return
            except httpx.RequestError as exc:
                if answered:
                    error = ProviderStreamError(self.provider, f"the connection broke while the "
                                                f"answer was streaming: {self._describe(exc)}")
                else:
                    error = ProviderConnectionError(
                        self.provider, f"cannot reach {self.url}: {self._describe(exc)}; check "
                        "base_url and the network")
                if yielded:
                    raise ProviderStreamBroken(error, self.provider) from exc
                delay = self._backoff(attempt)
            except (ProviderError, ContextOverflowError) as exc:
                if isinstance(exc, ProviderError) and self._credential.key:
                    exc.redact(Redactor([self._credential.key]))
                if yielded:
                    raise ProviderStreamBroken(exc, self.provider) from exc
                raise
            if delay is None or attempt >= self.policy.max_retries:
                if attempt:
                    _note(error, f" (gave up after {attempt + 1} attempts)")
                raise error
            attempt += 1
            yield Retrying(_retry_reason(error), delay, attempt + 1, self.policy.max_retries + 1)
            await anyio.sleep(delay)

    def _answer_size(self, event: StreamEvent, call_ids: set[str]) -> int:
        """The characters ``event`` adds to the answer (text, thinking, tool arguments); a
        finished tool call's id is checked on the way."""
        kind = type(event)
        if kind is TextDelta or kind is ReasoningDelta:
            return len(event.text)  # type: ignore[union-attr]
        if kind is ToolCallDelta:
            return len(event.arguments)  # type: ignore[union-attr]
        if kind is ToolCallEnd:
            self._check_call_id(event.id, call_ids)  # type: ignore[union-attr]
        return 0

    def _check_call_id(self, call_id: Any, seen: set[str]) -> None:
        """Each tool call of one answer needs its own id: results are matched by it."""
        if not isinstance(call_id, str) or not call_id:
            raise ProviderStreamError(self.provider, f"the model sent a tool call without an "
                                      f"id (got {call_id!r})")
        if call_id in seen:
            raise ProviderStreamError(self.provider, f"the model sent two tool calls with the "
                                      f"same id {call_id!r}; each call needs its own id")
        seen.add(call_id)

    def _describe(self, exc: BaseException) -> str:
        p = self.policy
        if isinstance(exc, httpx.ConnectTimeout):
            return (f"no connection within {p.connect_timeout:g} s (raise "
                    "requests.connect_timeout if the service is slow to accept)")
        if isinstance(exc, httpx.ReadTimeout):
            return (f"no data for {p.read_timeout:g} s (raise requests.read_timeout if the "
                    "model thinks for longer)")
        text = str(exc)
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

    # ------------------------------------------------------------------------------- errors

    async def _error_from(self, response: httpx.Response) -> Exception:
        body = b""
        try:
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) >= ERROR_BODY_LIMIT:
                    break
        except httpx.RequestError:
            pass  # what arrived is enough to explain the error
        return http_error(self.provider, response.status_code, body[:ERROR_BODY_LIMIT],
                          credential=self._credential, url=self.url)

    def _delay(self, status: int, headers: httpx.Headers, attempt: int) -> float | None:
        """Seconds to wait before retrying ``status``, or None if it is not retried."""
        if status not in (408, 429) and not 500 <= status <= 599:
            return None
        after = retry_after(headers, self.policy.retry_after_max)
        return after if after is not None else self._backoff(attempt)

    def _backoff(self, attempt: int) -> float:
        p = self.policy
        return random.uniform(0, min(p.retry_max_delay, p.retry_base_delay * 2 ** attempt))


#: Pieces of a body smaller than this are joined before they are sent (fewer, larger writes).
CHUNK_BYTES = 64 * 1024


def coalesce(pieces: list[bytes], size: int = CHUNK_BYTES) -> list[bytes]:
    """``pieces`` with runs of small ones (under ``size`` bytes together) joined: the
    same bytes in fewer writes; one piece when the body is small."""
    out: list[bytes] = []
    run: list[bytes] = []
    length = 0
    for piece in pieces:
        if length and length + len(piece) > size:
            out.append(b"".join(run))
            run, length = [], 0
        run.append(piece)
        length += len(piece)
    if run:
        out.append(b"".join(run))
    return out


async def _send(chunks: list[bytes]) -> AsyncIterator[bytes]:
    """The body's pieces as httpx reads a streamed body (once: a new one per attempt); with
    the ``Content-Length`` header given, httpx sends them without chunked encoding."""
    for chunk in chunks:
        yield chunk


def encode_body(body: Mapping[str, Any]) -> bytes:
    """The request as UTF-8 JSON; text with lone surrogates (which UTF-8 cannot carry) is sent
    as ``\\udXXX`` escapes instead of failing the request."""
    try:
        return json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body).encode("ascii")


def _retry_reason(error: Exception) -> str:
    """Why a request is sent again, in a few words for the terminal."""
    status = getattr(error, "status", None)
    if status == 429:
        return "rate limited"
    if status == 408:
        return "request timed out"
    if isinstance(status, int):
        return f"server error (HTTP {status})"
    return "connection failed"


def retry_after(headers: Mapping[str, str], limit: float) -> float | None:
    """The service's requested wait (``retry-after-ms``, ``Retry-After`` in seconds or as an
    HTTP date), at most ``limit`` seconds; None when absent or unreadable."""
    seconds: float | None = None
    if headers.get("retry-after-ms"):
        try:
            seconds = float(headers["retry-after-ms"]) / 1000
        except ValueError:
            seconds = None
    value = headers.get("retry-after")
    if seconds is None and value:
        try:
            seconds = float(value)
        except ValueError:
            try:
                seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError, IndexError):
                return None
    if seconds is None or seconds != seconds:  # absent or NaN
        return None
    return min(max(seconds, 0.0), limit)


def http_error(provider: str, status: int, body: bytes, *, credential: Credential,
               url: str) -> Exception:
    """The typed error for an error response: ContextOverflowError, ProviderAuthError or
    ProviderHTTPError, quoting the service's message (with the key redacted)."""
    text = redact(body.decode("utf-8", "replace"), credential.key)
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    message, error_type, code = error_fields(parsed)
    detail = message or (f"no error message; body: {excerpt(text)}" if text.strip()
                         else "no error message in the response")
    if is_context_overflow(status, message, code):
        return ContextOverflowError(
            f"model provider {provider} (HTTP {status}): the conversation does not fit the "
            f"model's context window: {detail}", provider=provider, status=status)
    if status in (401, 403):
        if credential.key is None:
            hint = f"no API key was sent because {credential.source} is not set; set it"
        elif status == 401:
            hint = f"the key from {credential.source} was refused; check it is valid for {url}"
        else:
            hint = f"the key from {credential.source} may not use this model or endpoint"
        return ProviderAuthError(provider, f"authentication failed: {detail}; {hint}",
                                 status=status, error_type=error_type)
    if status == 429:
        hint = "; rate limited: wait, or raise requests.max_retries"
    elif status >= 500:
        hint = "; the service failed: try again later"
    elif status == 404:
        hint = f"; check the model name and base_url ({url})"
    elif 200 <= status < 300:
        hint = "; the service answered with JSON instead of an event stream"
    else:
        hint = "; the request was rejected"
    return ProviderHTTPError(provider, detail + hint, status=status, error_type=error_type)


def stream_error(provider: str, error: Any, key: str | None = None) -> Exception:
    """The typed error for an error reported inside a stream (an ``error`` event or chunk)."""
    message, error_type, code = error_fields({"error": error})
    message = redact(message, key) or excerpt(redact(json.dumps(error), key))
    if is_context_overflow(400, message, code):
        return ContextOverflowError(f"model provider {provider}: the conversation does not fit "
                                    f"the model's context window: {message}",
                                    provider=provider, status=200)
    kind = f" ({error_type})" if error_type else ""
    hint = "; try again later" if error_type in ("overloaded_error", "api_error") else ""
    return ProviderStreamError(provider, f"the service reported an error in the stream"
                               f"{kind}: {message}{hint}", error_type=error_type)


def error_fields(data: Any) -> tuple[str, str | None, str | None]:
    """(message, type, code) from a parsed OpenAI or Anthropic error body (both put it under
    ``error``; other servers use ``message`` or ``detail``)."""
    if not isinstance(data, dict):
        return "", None, None
    error = data.get("error", data)
    if isinstance(error, str):
        return error[:500], None, None
    if not isinstance(error, dict):
        return "", None, None
    message = error.get("message") or error.get("detail") or ""
    kind, code = error.get("type"), error.get("code")
    return (str(message)[:500], kind if isinstance(kind, str) else None,
            str(code) if code is not None else None)


def is_context_overflow(status: int, message: str, code: str | None) -> bool:
    if code == "context_length_exceeded":
        return True
    lowered = message.lower()
    return status in (400, 413) and any(p in lowered for p in OVERFLOW_PHRASES)


def redact(text: str, key: str | None) -> str:
    return text.replace(key, "[redacted]") if key else text


def _content_type(response: httpx.Response) -> str:
    return response.headers.get("content-type", "").lower()


def _note(error: Exception, note: str) -> None:
    error.args = (f"{error}{note}",)
    if isinstance(error, ProviderError):
        error.detail += note


#: proxy variables httpx reads for a plain ``http://`` URL
HTTP_PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def plain_http_tls(url: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """For a client that only ever talks plain HTTP (a local model server: the URL is
    ``http://``, no redirects are followed, no proxy reached over TLS): a TLS context without
    the certificate store, ``{"verify": context}``, since loading the store is most of
    making an httpx client (several ms per start). It still requires a verified certificate,
    so were TLS ever used it would refuse rather than trust. ``{}`` otherwise (the default
    verification)."""
    if not url.lower().startswith("http://") or any(
            environ.get(name, "").lower().startswith("https") for name in HTTP_PROXY_VARIABLES):
        return {}
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies; holds no certificate
    return {"verify": context}
