"""The shapes of what the SDK reports, with claude-agent-sdk's names and (wire) keys: the
``init`` message's data, task usage and statuses, per-model usage, message origins, MCP status
and context usage answers, rate limits and server tools (which need Claude's servers), and
the control protocol's requests (claude-agent-sdk speaks it to its CLI; this host has no CLI,
so they are only types here).

No ``from __future__ import annotations``: ``NotRequired`` must be evaluated.
"""

from typing import Any, Literal, NotRequired, Required, TypedDict

from .config_types import (
    McpHttpServerConfig,
    McpSSEServerConfig,
    McpStdioServerConfig,
    PermissionMode,
)
from .hook_types import HookEvent

__all__ = [
    "TERMINAL_TASK_STATUSES", "AssistantMessageError", "ContextUsageCategory",
    "ContextUsageResponse", "ControlErrorResponse", "ControlResponse", "FastModeDisabledReason",
    "FastModeState", "McpClaudeAIProxyServerConfig", "McpSdkServerConfigStatus",
    "McpServerConnectionStatus", "McpServerInfo", "McpServerStatus", "McpServerStatusConfig",
    "McpStatusResponse", "McpToolAnnotations", "McpToolInfo", "MessageOrigin",
    "MessageOriginKind", "ModelUsage", "RateLimitStatus", "RateLimitType",
    "SDKControlInitializeRequest", "SDKControlInterruptRequest", "SDKControlMcpMessageRequest",
    "SDKControlMcpReconnectRequest", "SDKControlMcpToggleRequest",
    "SDKControlPermissionRequest", "SDKControlRequest", "SDKControlResponse",
    "SDKControlRewindFilesRequest", "SDKControlSetPermissionModeRequest",
    "SDKControlStopTaskRequest", "SDKHookCallbackRequest", "ServerToolName",
    "SystemInitData", "SystemInitMcpServer", "SystemInitPlugin", "SystemInitPluginError",
    "TaskNotificationOriginSubkind", "TaskNotificationStatus", "TaskUpdatedStatus", "TaskUsage",
]

# ----------------------------------------------------------------------------- messages

#: ``AssistantMessage.error`` values
AssistantMessageError = Literal["authentication_failed", "billing_error", "rate_limit",
                                "invalid_request", "server_error", "unknown"]
#: what started a user-role message (this host's own inputs are ``human`` or None)
MessageOriginKind = Literal["human", "channel", "peer", "task-notification", "coordinator",
                            "unclassified", "observer", "auto-continuation",
                            "observer-activity"]
TaskNotificationOriginSubkind = Literal["scheduled-trigger", "peer-send-message"]

#: ``origin`` of a user message or result (``from`` is a keyword: the functional form)
MessageOrigin = TypedDict("MessageOrigin", {
    "kind": Required[MessageOriginKind], "server": str, "from": str, "name": str,
    "fromSession": str, "senderTaskId": str, "body": str, "verifiedPeerPid": int,
    "subkind": TaskNotificationOriginSubkind,
}, total=False)


class SystemInitMcpServer(TypedDict):
    name: str
    status: str
    source: NotRequired[str]


class SystemInitPlugin(TypedDict):
    name: str
    path: str
    version: NotRequired[str]


class SystemInitPluginError(TypedDict):
    plugin: str
    type: str
    message: str
    path: NotRequired[str]


#: Claude's fast mode (this host reports none)
FastModeState = Literal["off", "cooldown", "on"]
FastModeDisabledReason = Literal["free", "preference", "extra_usage_disabled", "network_error",
                                 "unknown", "not_first_party", "disabled_by_env",
                                 "model_not_allowed", "sdk_opt_in_required", "pending"]


class SystemInitData(TypedDict):
    """``SystemMessage.data`` of the ``init`` message (docs/sdk.md says what this host puts
    in each key)."""

    type: Literal["system"]
    subtype: Literal["init"]
    uuid: str
    session_id: str
    agents: NotRequired[list[str]]
    apiKeySource: str
    betas: NotRequired[list[str]]
    claude_code_version: str
    cwd: str
    tools: list[str]
    mcp_servers: list[SystemInitMcpServer]
    model: str
    permissionMode: PermissionMode
    slash_commands: list[str]
    terminal_slash_commands: NotRequired[list[str]]
    output_style: str
    skills: list[str]
    plugins: list[SystemInitPlugin]
    plugin_errors: NotRequired[list[SystemInitPluginError]]
    fast_mode_state: NotRequired[FastModeState]
    fast_mode_disabled_reason: NotRequired[FastModeDisabledReason]
    capabilities: NotRequired[list[str]]


class TaskUsage(TypedDict):
    """A background task's usage (``task_progress``, ``task_notification``)."""

    total_tokens: int
    tool_uses: int
    duration_ms: int


TaskNotificationStatus = Literal["completed", "failed", "stopped"]
TaskUpdatedStatus = Literal["pending", "running", "paused", "completed", "failed", "killed"]
#: a task with one of these statuses has ended (either message's vocabulary)
TERMINAL_TASK_STATUSES: frozenset[str] = frozenset({"completed", "failed", "stopped", "killed"})


class ModelUsage(TypedDict):
    """One model's usage and cost in ``ResultMessage.model_usage`` (camelCase keys)."""

    inputTokens: int
    outputTokens: int
    cacheReadInputTokens: int
    cacheCreationInputTokens: int
    webSearchRequests: int
    costUSD: float
    contextWindow: int
    maxOutputTokens: int
    canonicalModel: NotRequired[str]
    provider: NotRequired[str]


#: Claude's subscription rate limits (never reported here: they need Claude's servers)
RateLimitStatus = Literal["allowed", "allowed_warning", "rejected"]
RateLimitType = Literal["five_hour", "seven_day", "seven_day_opus", "seven_day_sonnet",
                        "overage"]
#: tools Anthropic's API runs itself (never called here)
ServerToolName = Literal["advisor", "web_search", "web_fetch", "code_execution",
                         "bash_code_execution", "text_editor_code_execution",
                         "tool_search_tool_regex", "tool_search_tool_bm25"]

# ------------------------------------------------------------------- MCP status, context

class McpSdkServerConfigStatus(TypedDict):
    type: Literal["sdk"]
    name: str


class McpClaudeAIProxyServerConfig(TypedDict):
    type: Literal["claudeai-proxy"]
    url: str
    id: str


McpServerStatusConfig = (
    McpStdioServerConfig | McpSSEServerConfig | McpHttpServerConfig | McpSdkServerConfigStatus
    | McpClaudeAIProxyServerConfig
)


class McpToolAnnotations(TypedDict, total=False):
    readOnly: bool
    destructive: bool
    openWorld: bool


class McpToolInfo(TypedDict):
    name: str
    description: NotRequired[str]
    annotations: NotRequired[McpToolAnnotations]


class McpServerInfo(TypedDict):
    name: str
    version: str


McpServerConnectionStatus = Literal["connected", "failed", "needs-auth", "pending", "disabled"]


class McpServerStatus(TypedDict):
    """One server in ``get_mcp_status()["mcpServers"]``."""

    name: str
    status: McpServerConnectionStatus
    serverInfo: NotRequired[McpServerInfo]
    error: NotRequired[str]
    config: NotRequired[McpServerStatusConfig]
    scope: NotRequired[str]
    tools: NotRequired[list[McpToolInfo]]


class McpStatusResponse(TypedDict):
    mcpServers: list[McpServerStatus]


class ContextUsageCategory(TypedDict):
    name: str
    tokens: int
    color: str
    isDeferred: NotRequired[bool]


class ContextUsageResponse(TypedDict):
    """What ``get_context_usage()`` answers."""

    categories: list[ContextUsageCategory]
    totalTokens: int
    maxTokens: int
    rawMaxTokens: int
    percentage: float
    model: str
    isAutoCompactEnabled: bool
    memoryFiles: list[dict[str, Any]]
    mcpTools: list[dict[str, Any]]
    agents: list[dict[str, Any]]
    gridRows: list[list[dict[str, Any]]]
    autoCompactThreshold: NotRequired[int]
    deferredBuiltinTools: NotRequired[list[dict[str, Any]]]
    systemTools: NotRequired[list[dict[str, Any]]]
    systemPromptSections: NotRequired[list[dict[str, Any]]]
    slashCommands: NotRequired[dict[str, Any]]
    skills: NotRequired[dict[str, Any]]
    messageBreakdown: NotRequired[dict[str, Any]]
    apiUsage: NotRequired[dict[str, Any] | None]


# ------------------------------------------------------- the control protocol (types only)

class SDKControlInterruptRequest(TypedDict):
    subtype: Literal["interrupt"]


class SDKControlPermissionRequest(TypedDict):
    subtype: Literal["can_use_tool"]
    tool_name: str
    input: dict[str, Any]
    permission_suggestions: list[dict[str, Any]] | None
    blocked_path: str | None
    decision_reason: NotRequired[str]
    title: NotRequired[str]
    display_name: NotRequired[str]
    description: NotRequired[str]
    tool_use_id: str
    agent_id: NotRequired[str]


class SDKControlInitializeRequest(TypedDict):
    subtype: Literal["initialize"]
    hooks: dict[HookEvent, Any] | None
    agents: NotRequired[dict[str, dict[str, Any]]]
    excludeDynamicSections: NotRequired[bool]
    systemPromptSnapshot: NotRequired[bool]
    skills: NotRequired[list[str]]
    forwardSubagentText: NotRequired[bool]


class SDKControlSetPermissionModeRequest(TypedDict):
    subtype: Literal["set_permission_mode"]
    mode: PermissionMode


class SDKHookCallbackRequest(TypedDict):
    subtype: Literal["hook_callback"]
    callback_id: str
    input: Any
    tool_use_id: str | None


class SDKControlMcpMessageRequest(TypedDict):
    subtype: Literal["mcp_message"]
    server_name: str
    message: Any


class SDKControlRewindFilesRequest(TypedDict):
    subtype: Literal["rewind_files"]
    user_message_id: str


class SDKControlMcpReconnectRequest(TypedDict):
    subtype: Literal["mcp_reconnect"]
    serverName: str


class SDKControlMcpToggleRequest(TypedDict):
    subtype: Literal["mcp_toggle"]
    serverName: str
    enabled: bool


class SDKControlStopTaskRequest(TypedDict):
    subtype: Literal["stop_task"]
    task_id: str


class SDKControlRequest(TypedDict):
    type: Literal["control_request"]
    request_id: str
    request: (SDKControlInterruptRequest | SDKControlPermissionRequest
              | SDKControlInitializeRequest | SDKControlSetPermissionModeRequest
              | SDKHookCallbackRequest | SDKControlMcpMessageRequest
              | SDKControlRewindFilesRequest | SDKControlMcpReconnectRequest
              | SDKControlMcpToggleRequest | SDKControlStopTaskRequest)


class ControlResponse(TypedDict):
    subtype: Literal["success"]
    request_id: str
    response: dict[str, Any] | None


class ControlErrorResponse(TypedDict):
    subtype: Literal["error"]
    request_id: str
    error: str


class SDKControlResponse(TypedDict):
    type: Literal["control_response"]
    response: ControlResponse | ControlErrorResponse
