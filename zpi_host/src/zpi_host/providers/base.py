"""The provider protocol: a request goes in, typed stream events come out.

Every wire format (scripted replay, OpenAI chat, Anthropic messages) is an adapter that turns
its stream into these events, so the loop has one shape to handle. The errors below are the
failure kinds of every provider; none of their messages ever contains an API key.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from ..errors import ConnectionFailure, ZpiError
from ..support.attrs_methods import FrozenFieldsEq
from ..tools.arguments import json_safe_arguments
from .messages import Message, Usage

if TYPE_CHECKING:
    from ..support.redaction import Redactor
    from .catalog import ModelEntry


# ----------------------------------------------------------------------------------- errors


class ProviderError(ZpiError):
    """A model request failed; says which provider, and what to do where possible.

    ``detail`` is the message without the provider prefix. ``started`` is True only for
    :class:`ProviderStreamBroken`: events of this response already reached the consumer.
    """

    started = False

    def __init__(self, provider: str, message: str, *, status: int | None = None) -> None:
        super().__init__()
        self.provider, self.status = provider, status
        self._set_detail(message)

    def _set_detail(self, message: str) -> None:
        where = f"{self.provider}" + (f" (HTTP {self.status})" if self.status is not None
                                      else "")
        self.detail = message
        self.args = (f"model provider {where}: {message}",)

    def redact(self, redactor: Redactor) -> None:
        """Replace the keys ``redactor`` knows in this error's message, in place."""
        self._set_detail(redactor.text(self.detail))


class ProviderHTTPError(ProviderError):
    """The service answered with an error status (after any retries). ``error_type`` is the
    service's own error type when its body said (``rate_limit_error``, ...)."""

    def __init__(self, provider: str, message: str, *, status: int,
                 error_type: str | None = None) -> None:
        super().__init__(provider, message, status=status)
        self.error_type = error_type


class ProviderAuthError(ProviderHTTPError):
    """401/403: the key is missing, wrong or not allowed; the message names where the key
    is read from (an environment variable or a setting), never the key itself."""


class ProviderConnectionError(ProviderError, ConnectionFailure):
    """The service could not be reached (refused, DNS, TLS, timeout) before any answer, after
    the retries the ``requests`` settings allow."""


class ProviderStreamError(ProviderError):
    """A response stream that broke the wire format or ended early: malformed SSE, an unknown
    event, invalid tool-argument JSON, no stop event, a dropped connection, or an error event
    sent by the service (``error_type`` then holds its type)."""

    def __init__(self, provider: str, message: str, *, status: int | None = 200,
                 data: bytes | str | None = None, error_type: str | None = None) -> None:
        self._bare, self.data = message, data
        if data is not None:
            message += f"; received: {excerpt(data)}"
        super().__init__(provider, message, status=status)
        self.error_type = error_type

    def redact(self, redactor: Redactor) -> None:
        """As ProviderError's; the quoted data is redacted whole, before it is cut to an
        excerpt, so a key at the cut cannot leave a prefix behind."""
        if self.data is None:
            super().redact(redactor)
            return
        self.data = redactor.value(self.data)
        self._bare = redactor.text(self._bare)
        self._set_detail(f"{self._bare}; received: {excerpt(self.data)}")


class ProviderResponseTooLarge(ProviderStreamError):
    """One answer grew past a cap: ``requests.max_answer_chars`` characters of text, thinking
    and tool arguments, or ``requests.max_response_bytes`` bytes on the wire (a stream of
    overhead). The host stops reading (a runaway or hostile service must not exhaust memory
    or run forever). Not retried. ``setting`` names the cap, ``limit`` its value."""

    def __init__(self, provider: str, limit: int, setting: str = "max_response_bytes") -> None:
        what = ("characters of text, thinking and tool arguments"
                if setting == "max_answer_chars" else "bytes on the wire")
        super().__init__(provider, f"the answer exceeded {limit:,} {what}, so reading stopped "
                                   f"(raise requests.{setting} if such answers are expected)")
        self.limit, self.setting = limit, setting


class ProviderStreamBroken(ProviderStreamError):
    """A failure after the first event of the response was yielded: never retried (the
    consumer already has part of the answer). ``cause`` is the underlying typed error; the
    loop keeps the partial message and records this error on it."""

    started = True

    def __init__(self, cause: Exception, provider: str, status: int | None = 200) -> None:
        detail = getattr(cause, "detail", None) or str(cause)
        super().__init__(provider, f"the response broke off after it had started streaming "
                                   f"(not retried): {detail}", status=status,
                         error_type=getattr(cause, "error_type", None))
        self.cause = cause

    def redact(self, redactor: Redactor) -> None:
        if isinstance(self.cause, ProviderError):
            self.cause.redact(redactor)
        super().redact(redactor)


def excerpt(data: bytes | str, limit: int = 200) -> str:
    """The first ``limit`` bytes/characters of offending data, repr-escaped."""
    cut = data[:limit]
    more = "..." if len(data) > limit else ""
    return repr(cut) + more


@attrs.frozen(repr=False, eq=False)
class ToolSpec(FrozenFieldsEq):
    """What the model is told about a tool."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@attrs.frozen(repr=False, eq=False)
class ModelRequest(FrozenFieldsEq):
    """One request to a model. ``messages`` is a read-only view of the history."""

    model: str
    system_prompt: str
    messages: Sequence[Message]
    tools: tuple[ToolSpec, ...] = ()
    options: Mapping[str, Any] = attrs.field(factory=dict)
    reasoning_level: str | None = None
    #: a side request's purpose (``"title"``); None for the conversation. Not sent on the
    #: wire: the scripted provider answers it from turns marked with that purpose
    purpose: str | None = None


# ------------------------------------------------------------------------------ stream events


@attrs.frozen(repr=False, eq=False)
class TextDelta(FrozenFieldsEq):
    text: str


@attrs.frozen(repr=False, eq=False)
class ReasoningDelta(FrozenFieldsEq):
    text: str
    signature: str | None = None
    #: a whole redacted reasoning block (its opaque data), not a piece of text
    redacted: str | None = None


@attrs.frozen(repr=False, eq=False)
class ToolCallStart(FrozenFieldsEq):
    index: int
    id: str
    name: str


@attrs.frozen(repr=False, eq=False)
class ToolCallDelta(FrozenFieldsEq):
    index: int
    arguments: str


@attrs.frozen(repr=False, eq=False)
class ToolCallEnd(FrozenFieldsEq):
    """A tool call whose arguments are complete (parsed). Values strict JSON cannot carry
    (NaN, lone surrogates) are replaced on the way in, whichever provider made the event, so
    the call can be recorded and answered with a tool error (:mod:`zpi_host.tools.arguments`)."""

    index: int
    id: str
    name: str
    arguments: Mapping[str, Any] = attrs.field(converter=json_safe_arguments)


@attrs.frozen(repr=False, eq=False)
class UsageReport(FrozenFieldsEq):
    usage: Usage


@attrs.frozen(repr=False, eq=False)
class Done(FrozenFieldsEq):
    stop_reason: str


@attrs.frozen(repr=False, eq=False)
class Retrying(FrozenFieldsEq):
    """The request failed before any answer and is sent again after ``delay`` seconds:
    ``attempt`` (2 or more) of at most ``attempts``; ``reason`` says why ("rate limited")."""

    reason: str
    delay: float
    attempt: int
    attempts: int


StreamEvent = TextDelta | ReasoningDelta | ToolCallStart | ToolCallDelta | ToolCallEnd | \
    UsageReport | Done | Retrying


@runtime_checkable
class Provider(Protocol):
    """A connected model: ``stream`` one request at a time; ``aclose`` releases connections.

    Providers made by a factory also carry ``entry``: the catalog
    :class:`~zpi_host.providers.catalog.ModelEntry` they were made from (price, context
    window); in-process test models may lack it.
    """

    name: str
    model: str

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class ProviderFactory(Protocol):
    """Registered through ``zpi_register_providers``: makes a Provider for a catalog entry
    whose ``provider`` is this factory's ``name``. ``settings`` are the merged settings
    (``requests`` holds timeouts and retries). ``create`` must not connect yet."""

    name: str

    def create(self, entry: ModelEntry, settings: Mapping[str, Any]) -> Provider: ...
