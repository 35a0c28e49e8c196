"""Model providers: the protocol (``base``), the scripted replay model and, later, the HTTP
wire formats. Registered through ``zpi_register_providers`` by the kernel plugin ``zpi.models``.

Names are imported on first use: listing plugins imports this package without needing them.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Done", "ModelRequest", "Provider", "ProviderError", "ProviderFactory", "ReasoningDelta",
    "StreamEvent", "TextDelta", "ToolCallDelta", "ToolCallEnd", "ToolCallStart", "ToolSpec",
    "UsageReport",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import base

        return getattr(base, name)
    raise AttributeError(f"module 'zpi_host.providers' has no attribute {name!r}")
