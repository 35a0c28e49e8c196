"""The provider protocol: a request goes in, typed stream events come out.

Every wire format (scripted replay, OpenAI chat, Anthropic messages) is an adapter that turns
its stream into these events, so the loop has one shape to handle.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from ..errors import ZpiError
from ..messages import Message, Usage


class ProviderError(ZpiError):
    """A model request failed; says which provider, and what to do where possible."""

    def __init__(self, provider: str, message: str, *, status: int | None = None) -> None:
        where = f"{provider}" + (f" (HTTP {status})" if status is not None else "")
        super().__init__(f"model provider {where}: {message}")
        self.provider, self.status = provider, status


@attrs.frozen
class ToolSpec:
    """What the model is told about a tool."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@attrs.frozen
class ModelRequest:
    """One request to a model. ``messages`` is a read-only view of the history."""

    model: str
    system_prompt: str
    messages: Sequence[Message]
    tools: tuple[ToolSpec, ...] = ()
    options: Mapping[str, Any] = attrs.field(factory=dict)
    reasoning_level: str | None = None


# ------------------------------------------------------------------------------ stream events


@attrs.frozen
class TextDelta:
    text: str


@attrs.frozen
class ReasoningDelta:
    text: str
    signature: str | None = None


@attrs.frozen
class ToolCallStart:
    index: int
    id: str
    name: str


@attrs.frozen
class ToolCallDelta:
    index: int
    arguments: str


@attrs.frozen
class ToolCallEnd:
    """A tool call whose arguments are complete (parsed)."""

    index: int
    id: str
    name: str
    arguments: Mapping[str, Any]


@attrs.frozen
class UsageReport:
    usage: Usage


@attrs.frozen
class Done:
    stop_reason: str


StreamEvent = TextDelta | ReasoningDelta | ToolCallStart | ToolCallDelta | ToolCallEnd | \
    UsageReport | Done


@runtime_checkable
class Provider(Protocol):
    """A connected model: ``stream`` one request at a time; ``aclose`` releases connections."""

    name: str
    model: str

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class ProviderFactory(Protocol):
    """Registered through ``zpi_register_providers``: makes a Provider for a model id."""

    name: str

    def create(self, model: str, settings: Mapping[str, Any]) -> Provider: ...
