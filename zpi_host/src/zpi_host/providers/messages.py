"""The conversation: messages and their content blocks, as the loop and providers see them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from ..support.attrs_methods import FrozenFieldsEq
from ..tools.base import Content, ImageContent, TextContent, ToolCall

__all__ = [
    "AssistantMessage", "ContextMessage", "ImageContent", "Message", "TextContent",
    "ThinkingContent", "ToolCallContent", "ToolResultMessage", "Usage", "UserMessage", "reminder",
]


@attrs.frozen(repr=False, eq=False)
class Usage(FrozenFieldsEq):
    """Token counts of one request (or a sum of several)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )


@attrs.frozen(repr=False, eq=False)
class ThinkingContent(FrozenFieldsEq):
    """Model reasoning; ``signature`` must be sent back unchanged to providers that sign it.
    ``redacted`` holds the opaque data of reasoning the provider encrypted (Anthropic's
    ``redacted_thinking``): ``thinking`` is then empty, and the data goes back as it came."""

    thinking: str
    signature: str | None = None
    type: Literal["thinking"] = "thinking"
    redacted: str | None = None


@attrs.frozen(repr=False, eq=False)
class ToolCallContent(FrozenFieldsEq):
    id: str
    name: str
    arguments: Mapping[str, Any] = attrs.field(factory=dict)
    type: Literal["tool_call"] = "tool_call"

    def as_call(self) -> ToolCall:
        return ToolCall(self.id, self.name, self.arguments)


AssistantContent = TextContent | ThinkingContent | ToolCallContent


@attrs.frozen(repr=False, eq=False)
class UserMessage(FrozenFieldsEq):
    content: tuple[Content, ...]
    role: Literal["user"] = "user"

    @classmethod
    def text(cls, text: str) -> UserMessage:
        return cls((TextContent(text),))

    @property
    def text_content(self) -> str:
        return "\n".join(c.text for c in self.content if isinstance(c, TextContent))


@attrs.frozen(repr=False, eq=False)
class AssistantMessage(FrozenFieldsEq):
    content: tuple[AssistantContent, ...]
    stop_reason: str = "end_turn"
    usage: Usage = Usage()
    provider: str = ""
    model: str = ""
    error: str | None = None
    role: Literal["assistant"] = "assistant"

    @property
    def text(self) -> str:
        return "".join(c.text for c in self.content if isinstance(c, TextContent))

    @property
    def tool_calls(self) -> tuple[ToolCallContent, ...]:
        return tuple(c for c in self.content if isinstance(c, ToolCallContent))


@attrs.frozen(repr=False, eq=False)
class ToolResultMessage(FrozenFieldsEq):
    call_id: str
    tool_name: str
    content: tuple[Content, ...]
    is_error: bool = False
    details: Mapping[str, Any] | None = None
    role: Literal["tool"] = "tool"


@attrs.frozen(repr=False, eq=False)
class ContextMessage(FrozenFieldsEq):
    """Context a plugin added (session start, prompt, after a tool): shown to the model as user
    content, attributed to its plugin."""

    text: str
    source: str
    role: Literal["context"] = "context"


Message = UserMessage | AssistantMessage | ToolResultMessage | ContextMessage


def reminder(text: str) -> str:
    """Context as the model reads it, in a tool result or a user message: a
    ``<system-reminder>`` block, the convention models are trained to read as host-added
    context rather than something the user typed."""
    return f"<system-reminder>\n{text}\n</system-reminder>"
