"""How full the model's context is: the provider's own figures where it reported them, marked
estimates otherwise, and "unknown" where neither is honest.

Estimates count about four characters per token (JSON for tool schemas and arguments). Images
cannot be estimated this way, so a category holding one is reported as unknown rather than
guessed. Nothing here calls the model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from ..providers.messages import (
    AssistantMessage,
    ContextMessage,
    Message,
    TextContent,
    ThinkingContent,
    ToolCallContent,
    ToolResultMessage,
)
from ..support.attrs_methods import FrozenFieldsEq

if TYPE_CHECKING:
    from .state import SessionState

CHARS_PER_TOKEN = 4
CATEGORIES = ("system_prompt", "tools", "messages", "tool_results")


@attrs.frozen(repr=False, eq=False, slots=False)
class CategoryUsage(FrozenFieldsEq):
    """Tokens of one category: ``None`` means unknown; ``estimated`` marks a character count
    rather than a figure the provider reported."""

    tokens: int | None
    estimated: bool = True


@attrs.frozen(repr=False, eq=False, slots=False)
class ContextUsage(FrozenFieldsEq):
    """What ``session.get_context_usage()`` returns."""

    categories: Mapping[str, CategoryUsage]
    #: the provider's input figure for the last request plus an estimate of what came after
    #: it, or the sum of the estimates when the provider reported nothing (then ``estimated``)
    total_tokens: int | None
    estimated: bool
    context_window: int | None
    #: input tokens the provider reported for the last request (None: none reported yet)
    last_reported_input_tokens: int | None

    @property
    def fraction_used(self) -> float | None:
        if self.total_tokens is None or not self.context_window:
            return None
        return self.total_tokens / self.context_window


def estimate_text(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def estimate_message(message: Message) -> int | None:
    """Estimated tokens of one message; None when it holds something that cannot be counted
    from characters (an image)."""
    if isinstance(message, ContextMessage):
        return estimate_text(message.text) + 4
    total = 4  # role and framing
    for block in message.content:
        if isinstance(block, TextContent):
            total += estimate_text(block.text)
        elif isinstance(block, ThinkingContent):
            total += estimate_text(block.thinking or block.redacted or "")
        elif isinstance(block, ToolCallContent):
            total += estimate_text(block.name) + estimate_text(json.dumps(block.arguments))
        else:
            return None
    return total


def estimate_messages(messages: Iterable[Message]) -> int | None:
    total = 0
    for message in messages:
        tokens = estimate_message(message)
        if tokens is None:
            return None
        total += tokens
    return total


def reported_input(message: AssistantMessage) -> int:
    """Everything the provider counted as input for the request that produced ``message``."""
    usage = message.usage
    return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens


def last_reported(messages: Sequence[Message]) -> tuple[int, int] | None:
    """(index of the last assistant message, the input the provider reported for it) or None
    when it reported none. Only the last answer counts (an older figure describes a shorter
    history), which also keeps this O(1) per turn whatever the history's length."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AssistantMessage):
            tokens = reported_input(message)
            return (index, tokens) if tokens > 0 else None
    return None


@attrs.frozen(repr=False, eq=False, slots=False)
class ContextSize(FrozenFieldsEq):
    """How many tokens the next request holds (``SessionView.context_size()``): what a guard
    compares with a ceiling, without the categories of :class:`ContextUsage`."""

    total_tokens: int | None
    estimated: bool
    context_window: int | None
    last_reported_input_tokens: int | None


def _categories(session: SessionState) -> dict[str, CategoryUsage]:
    messages = session.messages
    tools = [{"name": t.name, "description": t.description, "parameters": t.parameters}
             for t in session.tools.values()]
    conversation = [m for m in messages if not isinstance(m, ToolResultMessage)]
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    return {
        "system_prompt": CategoryUsage(estimate_text(session.system_prompt)),
        "tools": CategoryUsage(estimate_text(json.dumps(tools)) if tools else 0),
        "messages": CategoryUsage(estimate_messages(conversation)),
        "tool_results": CategoryUsage(estimate_messages(results)),
    }


def context_size(session: SessionState,
                 categories: Mapping[str, CategoryUsage] | None = None) -> ContextSize:
    """The provider's input figure for the last request plus an estimate of what followed
    it (only the messages since that answer are read), else the sum of the categories
    (``categories``, computed when not given)."""
    messages = session.messages
    entry = session.model_entry
    window = entry.context_window if entry is not None else None
    reported = last_reported(messages)
    if reported is not None:
        index, tokens = reported
        after = estimate_messages(messages[index:])  # the answer and what followed it
        return ContextSize(None if after is None else tokens + after, after != 0, window, tokens)
    if categories is None:
        if session.context_estimate is None:
            session.context_estimate = RunningEstimate()
        total = session.context_estimate.total(session)
    else:
        parts = [c.tokens for c in categories.values()]
        total = None if any(p is None for p in parts) else sum(p for p in parts if p is not None)
    return ContextSize(total, True, window, None)


class RunningEstimate:
    """The sum of the categories' estimates, kept up to date as the history grows: a guard
    asks before every request, so each message is counted once (a history replaced by a
    compaction is counted again), and the system prompt and tool schemas once while they stay
    the same objects."""

    __slots__ = ("_count", "_fixed", "_fixed_key", "_messages", "_tokens")

    def __init__(self) -> None:
        self._messages: list[Message] | None = None
        self._count = self._tokens = self._fixed = 0
        self._fixed_key: tuple[Any, Any] | None = None

    def total(self, session: SessionState) -> int | None:
        key = (session.system_prompt, session.tools)
        if self._fixed_key is None or key[0] is not self._fixed_key[0] or \
                key[1] is not self._fixed_key[1]:
            categories = _categories(session)
            self._fixed_key = key
            self._fixed = sum(categories[c].tokens or 0 for c in ("system_prompt", "tools"))
        messages = session.messages
        if messages is not self._messages or len(messages) < self._count:
            self._messages, self._count, self._tokens = messages, 0, 0
        for message in messages[self._count:]:
            tokens = estimate_message(message)
            if tokens is None:  # an image: unknown, asked again next time
                return None
            self._tokens += tokens
            self._count += 1
        return self._fixed + self._tokens


def context_usage(session: SessionState) -> ContextUsage:
    categories = _categories(session)
    size = context_size(session, categories)
    return ContextUsage(categories, size.total_tokens, size.estimated, size.context_window,
                        size.last_reported_input_tokens)


def usage_to_json(usage: ContextUsage) -> dict[str, Any]:
    return {
        "categories": {k: {"tokens": v.tokens, "estimated": v.estimated}
                       for k, v in usage.categories.items()},
        "total_tokens": usage.total_tokens, "estimated": usage.estimated,
        "context_window": usage.context_window,
        "last_reported_input_tokens": usage.last_reported_input_tokens,
    }


__all__ = ["CATEGORIES", "CategoryUsage", "ContextSize", "ContextUsage", "context_size",
           "context_usage", "estimate_message",
           "estimate_messages", "estimate_text", "usage_to_json"]
