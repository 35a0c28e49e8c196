"""Kernel plugin ``zpi.models``: registers the built-in model providers.

The factories here are deliberately tiny: listing plugins constructs them, and the provider
machinery (httpx, messages, stream events) is imported only when a provider is created.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..contract.hookspecs import hookimpl


class ScriptedProviderFactory:
    """``scripted:PATH``: replays the JSONL script at PATH (relative to the current dir)."""

    name = "scripted"

    def create(self, entry: Any, settings: Mapping[str, Any]) -> Any:
        from .scripted import create_scripted_provider

        return create_scripted_provider(entry)


class OpenAIProviderFactory:
    """``openai:MODEL``: the Chat Completions API and every server that speaks it; an entry
    with ``"api": "responses"`` uses the Responses API instead."""

    name = "openai"

    def create(self, entry: Any, settings: Mapping[str, Any]) -> Any:
        if getattr(entry, "api", None) == "responses":
            from .responses import ResponsesProvider

            return ResponsesProvider(entry, settings)
        from .openai import OpenAIProvider

        return OpenAIProvider(entry, settings)


class ResponsesProviderFactory:
    """``openai-responses:MODEL``: OpenAI's Responses API (reasoning kept across turns)."""

    name = "openai-responses"

    def create(self, entry: Any, settings: Mapping[str, Any]) -> Any:
        from .responses import ResponsesProvider

        return ResponsesProvider(entry, settings)


class AnthropicProviderFactory:
    """``anthropic:MODEL``: the Anthropic Messages API."""

    name = "anthropic"

    def create(self, entry: Any, settings: Mapping[str, Any]) -> Any:
        from .anthropic import AnthropicProvider

        return AnthropicProvider(entry, settings)


@hookimpl
def zpi_register_providers(settings: Mapping[str, Any]) -> list[Any]:
    return [OpenAIProviderFactory(), ResponsesProviderFactory(), AnthropicProviderFactory(),
            ScriptedProviderFactory()]
