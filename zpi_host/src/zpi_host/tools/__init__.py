"""Tools: the model's hands. Types in ``base``, ``@tool`` in ``decorator``, the four kernel
tools in their own modules, registered by ``tools.plugin``."""

from .base import (
    Content,
    ImageContent,
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

__all__ = [
    "Content", "ImageContent", "TextContent", "Tool", "ToolArgumentError", "ToolCall",
    "ToolContext", "ToolFailure", "ToolMetadata", "ToolResult", "ToolUpdate",
]
