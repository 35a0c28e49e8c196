"""Messages and content blocks with claude-agent-sdk's names and fields.

Plain mutable records, as in claude-agent-sdk, so that programs written for it (``isinstance``
checks, ``message.content``, ``block.text``) work unchanged. ``translate.py`` makes them from
session events.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..support.attrs_methods import FieldsEq

__all__ = [
    "AssistantMessage", "ContentBlock", "ConversationResetMessage", "DeferredToolUse",
    "HookEventMessage", "Message", "MirrorErrorMessage", "RateLimitEvent", "RateLimitInfo",
    "ResultMessage", "ServerToolResultBlock", "ServerToolUseBlock", "StreamEvent",
    "SystemMessage", "TaskNotificationMessage", "TaskProgressMessage", "TaskStartedMessage",
    "TaskUpdatedMessage", "TextBlock", "ThinkingBlock", "ToolResultBlock", "ToolUseBlock",
    "UserMessage",
]


@attrs.define(repr=False, eq=False, slots=False)
class TextBlock(FieldsEq):
    text: str


@attrs.define(repr=False, eq=False, slots=False)
class ThinkingBlock(FieldsEq):
    thinking: str
    signature: str = ""


@attrs.define(repr=False, eq=False, slots=False)
class ToolUseBlock(FieldsEq):
    id: str
    name: str
    input: dict[str, Any]


@attrs.define(repr=False, eq=False, slots=False)
class ToolResultBlock(FieldsEq):
    tool_use_id: str
    content: str | list[dict[str, Any]] | None = None
    is_error: bool | None = None


@attrs.define(repr=False, eq=False, slots=False)
class ServerToolUseBlock(FieldsEq):
    """A tool Anthropic's API runs itself (web search, code execution ...); this host's
    providers never produce one (docs/sdk.md)."""

    id: str
    name: str
    input: dict[str, Any]


@attrs.define(repr=False, eq=False, slots=False)
class ServerToolResultBlock(FieldsEq):
    """The result of a :class:`ServerToolUseBlock`; never produced here."""

    tool_use_id: str
    content: dict[str, Any]


ContentBlock = (TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock | ServerToolUseBlock
                | ServerToolResultBlock)


@attrs.define(repr=False, eq=False, slots=False)
class UserMessage(FieldsEq):
    """Input to the model: tool results (``ToolResultBlock``) as the session produces them."""

    content: str | list[ContentBlock]
    uuid: str | None = None
    parent_tool_use_id: str | None = None
    tool_use_result: dict[str, Any] | None = None
    #: what started the message (``MessageOrigin``); None: not attributed
    origin: dict[str, Any] | None = None


@attrs.define(repr=False, eq=False, slots=False)
class AssistantMessage(FieldsEq):
    """One answer of the model. ``model`` is ``provider:model``; ``usage`` uses the Anthropic
    API's key names."""

    content: list[ContentBlock]
    model: str
    parent_tool_use_id: str | None = None
    error: str | None = None
    usage: dict[str, Any] | None = None
    message_id: str | None = None
    stop_reason: str | None = None
    session_id: str | None = None
    uuid: str | None = None
    #: the ``uuid`` of the streamed input this answers, and of every one taken in so far
    user_message_uuid: str | None = None
    user_message_uuids: list[str] | None = None


@attrs.define(repr=False, eq=False, slots=False)
class SystemMessage(FieldsEq):
    """``subtype`` ``init`` (``data``: session id, tools, model, permission mode, plugins,
    cwd ...) at the start of each query; ``warning`` for what the session reports;
    ``hook_message`` (``data``: ``message``, ``source``) for a hook's message to the user
    (Claude's ``systemMessage``)."""

    subtype: str
    data: dict[str, Any]


@attrs.define(repr=False, eq=False, slots=False)
class MirrorErrorMessage(SystemMessage):
    """Subtype ``mirror_error``: a batch could not be written to the session store (tried 3
    times, or timed out). The local transcript has it; the session goes on."""

    key: dict[str, Any] | None = None
    error: str = ""


@attrs.define(repr=False, eq=False, slots=False)
class HookEventMessage(SystemMessage):
    """Subtype ``hook_started`` (a ``hooks=`` callback begins) or ``hook_response`` (it
    answered: ``data`` has ``output``, ``exit_code`` and ``outcome``), with
    ``include_hook_events``; ``hook_event_name`` is the event (``PreToolUse`` ...)."""

    hook_event_name: str = ""
    session_id: str | None = None
    uuid: str | None = None


@attrs.define(repr=False, eq=False, slots=False)
class TaskStartedMessage(SystemMessage):
    """Subtype ``task_started``: a background task (``Bash`` with ``run_in_background``)
    started. ``task_type`` is ``local_bash``."""

    task_id: str = ""
    description: str = ""
    uuid: str = ""
    session_id: str = ""
    tool_use_id: str | None = None
    task_type: str | None = None


@attrs.define(repr=False, eq=False, slots=False)
class TaskProgressMessage(SystemMessage):
    """Subtype ``task_progress``: a running task's output grew. ``usage``: ``total_tokens``
    and ``tool_uses`` (0 for a command), ``duration_ms``."""

    task_id: str = ""
    description: str = ""
    usage: dict[str, int] = attrs.field(factory=dict)
    uuid: str = ""
    session_id: str = ""
    tool_use_id: str | None = None
    last_tool_name: str | None = None


@attrs.define(repr=False, eq=False, slots=False)
class TaskNotificationMessage(SystemMessage):
    """Subtype ``task_notification``: a task ended; ``status`` is ``completed``, ``failed``
    or ``stopped``; ``output_file`` holds its whole output."""

    task_id: str = ""
    status: str = ""
    output_file: str = ""
    summary: str = ""
    uuid: str = ""
    session_id: str = ""
    tool_use_id: str | None = None
    usage: dict[str, int] | None = None


@attrs.define(repr=False, eq=False, slots=False)
class TaskUpdatedMessage(SystemMessage):
    """Subtype ``task_updated``: a background task's state changed; ``patch`` holds the
    changed fields (``status``, ``end_time``). Sent when a task ends, just before its
    ``TaskNotificationMessage``, with the raw status: ``completed``, ``failed`` or ``killed``
    (a stopped task)."""

    task_id: str = ""
    patch: dict[str, Any] = attrs.field(factory=dict)
    status: str | None = None
    session_id: str | None = None
    uuid: str | None = None


@attrs.define(repr=False, eq=False, slots=False)
class DeferredToolUse(FieldsEq):
    """A tool call a ``PreToolUse`` hook deferred (``permissionDecision: "defer"``)."""

    id: str
    name: str
    input: dict[str, Any]


@attrs.define(repr=False, eq=False, slots=False)
class ResultMessage(FieldsEq):
    """The end of one input: subtype ``success``, ``error_max_turns``,
    ``error_during_execution`` or ``error_max_budget_usd``."""

    subtype: str
    duration_ms: int
    duration_api_ms: int
    is_error: bool
    num_turns: int
    session_id: str
    stop_reason: str | None = None
    total_cost_usd: float | None = None
    usage: dict[str, Any] | None = None
    result: str | None = None
    structured_output: Any = None
    model_usage: dict[str, dict[str, Any]] | None = None
    permission_denials: list[dict[str, Any]] | None = None
    deferred_tool_use: DeferredToolUse | None = None
    errors: list[str] | None = None
    #: the HTTP status of the failed model request behind an error result, if any
    api_error_status: int | None = None
    uuid: str | None = None
    terminal_reason: str | None = None
    origin: dict[str, Any] | None = None
    user_message_uuid: str | None = None
    user_message_uuids: list[str] | None = None


@attrs.define(repr=False, eq=False, slots=False)
class StreamEvent(FieldsEq):
    """A partial-message event (``include_partial_messages``), in the Anthropic Messages
    streaming shape (``message_start``, ``content_block_delta`` ...)."""

    uuid: str
    session_id: str
    event: dict[str, Any]
    parent_tool_use_id: str | None = None
    user_message_uuid: str | None = None
    user_message_uuids: list[str] | None = None


@attrs.define(repr=False, eq=False, slots=False)
class RateLimitInfo(FieldsEq):
    """Claude's subscription rate limits; never reported here (they need Claude's servers)."""

    status: str
    resets_at: int | None = None
    rate_limit_type: str | None = None
    utilization: float | None = None
    overage_status: str | None = None
    overage_resets_at: int | None = None
    overage_disabled_reason: str | None = None
    raw: dict[str, Any] = attrs.field(factory=dict)


@attrs.define(repr=False, eq=False, slots=False)
class RateLimitEvent(FieldsEq):
    """A change of :class:`RateLimitInfo`; never sent here."""

    rate_limit_info: RateLimitInfo
    uuid: str
    session_id: str


@attrs.define(repr=False, eq=False, slots=False)
class ConversationResetMessage(FieldsEq):
    """The conversation was replaced without ending the connection (``/clear``): history
    and running totals start again; later messages carry a new ``session_id``."""

    new_conversation_id: str
    uuid: str
    session_id: str


Message = (UserMessage | AssistantMessage | SystemMessage | ResultMessage | StreamEvent
           | RateLimitEvent | ConversationResetMessage)
