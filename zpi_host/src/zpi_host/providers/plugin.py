"""Kernel plugin ``zpi.models``: registers the built-in model providers.

The factories here are deliberately tiny: listing plugins constructs them, and the provider
machinery (messages, stream events) is imported only when a provider is created.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..hookspecs import hookimpl


class ScriptedProviderFactory:
    """``scripted:PATH``: replays the JSONL script at PATH (relative to the current dir)."""

    name = "scripted"

    def create(self, model: str, settings: Mapping[str, Any]) -> Any:
        from .scripted import create_scripted_provider

        return create_scripted_provider(model)


@hookimpl
def zpi_register_providers(settings: Mapping[str, Any]) -> list[Any]:
    return [ScriptedProviderFactory()]
