"""Mirror of claude-agent-sdk's ``types`` module: ``from zpi_host.sdk.types import X`` gives
the same object as ``from zpi_host.sdk import X``, for every public name of that module
(tests/zpi_host/sdk/test_sdk_names.py pins them). Names load on first use, as in the package.
"""

from __future__ import annotations

from ..support.lazy import lazy_attributes
from . import hook_types  # TypedDicts only: every one of its names is mirrored here

_LAZY: dict[str, str] = {
    **dict.fromkeys(("CanUseTool", "EffortLevel", "McpHttpServerConfig", "McpSSEServerConfig",
        "McpServerConfig", "McpStdioServerConfig", "PermissionBehavior", "PermissionMode",
        "PermissionUpdateDestination", "SandboxIgnoreViolations", "SandboxNetworkConfig",
        "SandboxSettings", "SdkBeta", "SdkPluginConfig", "SettingSource", "SystemPromptCustom",
        "SystemPromptFile", "SystemPromptPreset", "TaskBudget", "ThinkingConfig",
        "ThinkingConfigAdaptive", "ThinkingConfigDisabled", "ThinkingConfigEnabled",
        "ThinkingDisplay", "ToolsPreset"), "config_types"),
    **dict.fromkeys(("AgentDefinition",), "agents"),
    **dict.fromkeys(("PermissionResult", "PermissionResultAllow", "PermissionResultDeny",
        "PermissionRuleValue", "PermissionUpdate", "ToolPermissionContext"), "permissions"),
    **dict.fromkeys(hook_types.__all__, "hook_types"),
    **dict.fromkeys(("ClaudeAgentOptions", "HookMatcher"), "options"),
    **dict.fromkeys(("McpSdkServerConfig",), "mcp_tools"),
    **dict.fromkeys(("AssistantMessageError", "ContextUsageCategory", "ContextUsageResponse",
        "ControlErrorResponse", "ControlResponse", "FastModeDisabledReason", "FastModeState",
        "McpClaudeAIProxyServerConfig", "McpSdkServerConfigStatus", "McpServerConnectionStatus",
        "McpServerInfo", "McpServerStatus", "McpServerStatusConfig", "McpStatusResponse",
        "McpToolAnnotations", "McpToolInfo", "MessageOrigin", "MessageOriginKind", "ModelUsage",
        "RateLimitStatus", "RateLimitType", "SDKControlInitializeRequest",
        "SDKControlInterruptRequest", "SDKControlMcpMessageRequest",
        "SDKControlMcpReconnectRequest", "SDKControlMcpToggleRequest",
        "SDKControlPermissionRequest", "SDKControlRequest", "SDKControlResponse",
        "SDKControlRewindFilesRequest", "SDKControlSetPermissionModeRequest",
        "SDKControlStopTaskRequest", "SDKHookCallbackRequest", "ServerToolName", "SystemInitData",
        "SystemInitMcpServer", "SystemInitPlugin", "SystemInitPluginError",
        "TERMINAL_TASK_STATUSES", "TaskNotificationOriginSubkind", "TaskNotificationStatus",
        "TaskUpdatedStatus", "TaskUsage"), "wire_types"),
    **dict.fromkeys(("AssistantMessage", "ContentBlock", "ConversationResetMessage",
        "DeferredToolUse", "HookEventMessage", "Message", "MirrorErrorMessage", "RateLimitEvent",
        "RateLimitInfo", "ResultMessage", "ServerToolResultBlock", "ServerToolUseBlock",
        "StreamEvent", "SystemMessage", "TaskNotificationMessage", "TaskProgressMessage",
        "TaskStartedMessage", "TaskUpdatedMessage", "TextBlock", "ThinkingBlock", "ToolResultBlock",
        "ToolUseBlock", "UserMessage"), "messages"),
    **dict.fromkeys(("SessionKey", "SessionListSubkeysKey", "SessionStore", "SessionStoreEntry",
        "SessionStoreFlushMode", "SessionStoreListEntry", "SessionSummaryEntry"),
        "..stores.session_store"),
    **dict.fromkeys(("SDKSessionInfo", "SessionMessage"), "sessions"),
    **dict.fromkeys(("CanUseToolShadowedWarning",), "errors"),
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), parent="zpi_host.sdk")
