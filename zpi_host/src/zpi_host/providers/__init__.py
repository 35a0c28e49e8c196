"""Model providers: the protocol and errors (``base``), the model catalog (``catalog``), the
scripted replay model and the HTTP wire formats (``openai``, ``responses``, ``anthropic``).
Registered through ``zpi_register_providers`` by the kernel plugin ``zpi.models``.

Names are imported on first use: listing plugins imports this package without needing them.
"""

from __future__ import annotations

from typing import Any

_BASE = (
    "Done", "ModelRequest", "Provider", "ProviderAuthError", "ProviderConnectionError",
    "ProviderError", "ProviderFactory", "ProviderHTTPError", "ProviderResponseTooLarge",
    "ProviderStreamBroken",
    "ProviderStreamError", "ReasoningDelta", "StreamEvent", "TextDelta", "ToolCallDelta",
    "ToolCallEnd", "ToolCallStart", "ToolSpec", "UsageReport",
)
_CATALOG = (
    "CatalogError", "Credential", "ModelEntry", "Price", "RequestPolicy", "cost",
    "credentials", "has_credentials", "list_models", "resolve_model",
)

__all__ = [*_BASE, *_CATALOG]


def __getattr__(name: str) -> Any:
    if name in _BASE:
        from . import base

        return getattr(base, name)
    if name in _CATALOG:
        from . import catalog

        return getattr(catalog, name)
    raise AttributeError(f"module 'zpi_host.providers' has no attribute {name!r}")
