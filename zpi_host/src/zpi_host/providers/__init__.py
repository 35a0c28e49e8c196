"""Model providers: the protocol (``base``), the scripted replay model and, later, the HTTP
wire formats. Registered through ``zpi_register_providers`` by the kernel plugin ``zpi.models``."""

from .base import (
    Done,
    ModelRequest,
    Provider,
    ProviderError,
    ProviderFactory,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    UsageReport,
)

__all__ = [
    "Done", "ModelRequest", "Provider", "ProviderError", "ProviderFactory", "ReasoningDelta",
    "StreamEvent", "TextDelta", "ToolCallDelta", "ToolCallEnd", "ToolCallStart", "ToolSpec",
    "UsageReport",
]
