"""Provider test support: keys in the environment, providers connected to the loopback model
server (through the kernel plugin's factories), and helpers to read what a stream said."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import pytest

from zpi_host.providers.base import (
    Done,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    UsageReport,
)
from zpi_host.providers.catalog import resolve_model
from zpi_host.providers.messages import UserMessage
from zpi_host.providers.plugin import zpi_register_providers

FORMATS = ("openai", "anthropic")
KEYS = {"openai": "sk-test-SECRET-openai-1234", "anthropic": "sk-ant-SECRET-5678"}
ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
READ = ToolSpec("read", "Read a file", {"type": "object", "properties": {
    "path": {"type": "string"}}, "required": ["path"]})


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for fmt, key in KEYS.items():
        monkeypatch.setenv(ENV[fmt], key)
    return KEYS


def settings_for(base_url: str, fmt: str, **requests: Any) -> dict[str, Any]:
    """Settings pointing ``fmt`` at ``base_url``; retries wait a millisecond at most."""
    return {"providers": {fmt: {"base_url": base_url}},
            "requests": {"retry_base_delay": 0.001, "retry_max_delay": 0.001, **requests}}


@pytest.fixture
async def connect(zpi_model_server: Any, keys: dict[str, str]) -> AsyncIterator[Callable[..., Any]]:
    """``connect(fmt, requests={...}, settings={...}, **entry_fields)``: a provider made by
    the registered factory for ``fmt:test-model`` at the model server; closed at teardown."""
    made: list[Any] = []

    def connect(fmt: str, *, base_url: str | None = None, requests: dict[str, Any] | None = None,
                settings: dict[str, Any] | None = None, **fields: Any) -> Any:
        settings = {**settings_for(base_url or zpi_model_server.base_url, fmt,
                                   **(requests or {})), **(settings or {})}
        entry = resolve_model(f"{fmt}:test-model", settings)
        if fields:
            entry = attrs.evolve(entry, **fields)
        factory = next(f for f in zpi_register_providers(settings) if f.name == fmt)
        provider = factory.create(entry, settings)
        made.append(provider)
        return provider

    yield connect
    for provider in made:
        await provider.aclose()


def ask(*messages: Any, tools: tuple[ToolSpec, ...] = (READ,), system: str = "Be brief.",
        options: dict[str, Any] | None = None, reasoning: str | None = None) -> ModelRequest:
    history = [UserMessage.text(m) if isinstance(m, str) else m for m in messages] or \
        [UserMessage.text("hi")]
    return ModelRequest("test-model", system, history, tools, options or {}, reasoning)


async def collect(provider: Any, request: ModelRequest | None = None) -> list[Any]:
    return [event async for event in provider.stream(request or ask())]


@attrs.frozen
class Said:
    """What a stream said, independent of how deltas were split or merged."""

    text: str
    reasoning: str
    signature: str | None
    calls: tuple[tuple[str, str, Any], ...]
    argument_text: dict[int, str]
    usage: Any
    stop: str | None


def said(events: list[Any]) -> Said:
    text, reasoning, signature, calls, args, usage, stop = [], [], None, [], {}, None, None
    started: dict[int, tuple[str, str]] = {}
    for e in events:
        if isinstance(e, TextDelta):
            text.append(e.text)
        elif isinstance(e, ReasoningDelta):
            reasoning.append(e.text)
            signature = e.signature or signature
        elif isinstance(e, ToolCallStart):
            started[e.index] = (e.id, e.name)
        elif isinstance(e, ToolCallDelta):
            args[e.index] = args.get(e.index, "") + e.arguments
        elif isinstance(e, ToolCallEnd):
            assert started[e.index] == (e.id, e.name)
            calls.append((e.id, e.name, dict(e.arguments)))
        elif isinstance(e, UsageReport):
            assert usage is None, "one usage report per response"
            usage = e.usage
        elif isinstance(e, Done):
            assert e is events[-1], "Done comes last"
            stop = e.stop_reason
    return Said("".join(text), "".join(reasoning), signature, tuple(calls), args, usage, stop)
