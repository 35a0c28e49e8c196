"""Tools: the model's hands. Types in ``base``, ``@tool`` in ``decorator``, the four kernel
tools in their own modules, registered by ``tools.plugin``."""

from typing import Any

from .base import (
    Content,
    ImageContent,
    SessionDefinition,
    TextContent,
    Tool,
    ToolArgumentError,
    ToolCall,
    ToolContext,
    ToolFailure,
    ToolMetadata,
    ToolResult,
    ToolUpdate,
)


def __getattr__(name: str) -> Any:
    if name == "tool":  # lazily: the decorator is not needed to list or run kernel tools
        from .decorator import tool

        return tool
    raise AttributeError(f"module 'zpi_host.tools' has no attribute {name!r}")


__all__ = [
    "Content", "ImageContent", "SessionDefinition", "TextContent", "Tool", "ToolArgumentError",
    "ToolCall", "ToolContext", "ToolFailure", "ToolMetadata", "ToolResult", "ToolUpdate", "tool",
]
