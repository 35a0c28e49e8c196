"""The Claude-style SDK: ``query()``, ``SDKClient``, options, messages and session helpers.

Written for programs that use claude-agent-sdk: change the import line to
``from zpi_host.sdk import ...`` (docs/sdk.md has the migration table); every name of
claude-agent-sdk's ``__all__`` is here, and ``zpi_host.sdk.types`` mirrors its ``types``.
Everything here sits above the kernel (``create_session``, ``AgentSession``); names are
imported on first use so that nothing of it loads on the CLI's listing path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..support.lazy import lazy_attributes

if TYPE_CHECKING:
    from ..session.ports import TaskError, UnknownTaskError
    from ..stores.postgres_store import PostgresSessionStore
    from ..stores.session_store import (
        InMemorySessionStore,
        SessionKey,
        SessionListSubkeysKey,
        SessionStore,
        SessionStoreEntry,
        SessionStoreError,
        SessionStoreFlushMode,
        SessionStoreListEntry,
        SessionSummaryEntry,
        fold_session_summary,
        project_key_for_directory,
    )
    from ..stores.sqlite_store import SQLiteSessionStore
    from .agents import AgentDefinition
    from .client import ClaudeSDKClient, SDKClient
    from .config_types import (
        CanUseTool,
        EffortLevel,
        McpServerConfig,
        PermissionMode,
        SandboxIgnoreViolations,
        SandboxNetworkConfig,
        SandboxSettings,
        SdkBeta,
        SdkPluginConfig,
        SettingSource,
        TaskBudget,
        ThinkingConfig,
        ThinkingConfigAdaptive,
        ThinkingConfigDisabled,
        ThinkingConfigEnabled,
    )
    from .errors import (
        CanUseToolShadowedWarning,
        ClaudeSDKError,
        CLIConnectionError,
        CLIJSONDecodeError,
        CLINotFoundError,
        ProcessError,
        ResultError,
    )
    from .hook_types import (
        BackgroundTaskSummary,
        BaseHookInput,
        CwdChangedHookSpecificOutput,
        ElicitationHookSpecificOutput,
        ElicitationResultHookSpecificOutput,
        FileChangedHookSpecificOutput,
        HookCallback,
        HookContext,
        HookEffort,
        HookInput,
        HookJSONOutput,
        MessageDisplayHookSpecificOutput,
        NotificationHookInput,
        NotificationHookSpecificOutput,
        PermissionDeniedHookSpecificOutput,
        PermissionRequestHookInput,
        PermissionRequestHookSpecificOutput,
        PostModelSwitchHookSpecificOutput,
        PostToolBatchHookSpecificOutput,
        PostToolUseFailureHookInput,
        PostToolUseFailureHookSpecificOutput,
        PostToolUseHookInput,
        PostToolUseHookSpecificOutput,
        PreCompactHookInput,
        PreModelSwitchHookSpecificOutput,
        PreToolUseHookInput,
        PreToolUseHookSpecificOutput,
        SessionCronSummary,
        SessionStartHookSpecificOutput,
        StopHookInput,
        StopHookSpecificOutput,
        SubagentStartHookInput,
        SubagentStartHookSpecificOutput,
        SubagentStopHookInput,
        SubagentStopHookSpecificOutput,
        UserPromptExpansionHookSpecificOutput,
        UserPromptSubmitHookInput,
        UserPromptSubmitHookSpecificOutput,
        WorktreeCreateHookSpecificOutput,
    )
    from .mcp_servers import McpServerError
    from .mcp_tools import (
        McpSdkServerConfig,
        SdkMcpTool,
        ToolAnnotations,
        create_sdk_mcp_server,
        tool,
    )
    from .messages import (
        AssistantMessage,
        ContentBlock,
        ConversationResetMessage,
        DeferredToolUse,
        HookEventMessage,
        Message,
        MirrorErrorMessage,
        RateLimitEvent,
        RateLimitInfo,
        ResultMessage,
        ServerToolResultBlock,
        ServerToolUseBlock,
        StreamEvent,
        SystemMessage,
        TaskNotificationMessage,
        TaskProgressMessage,
        TaskStartedMessage,
        TaskUpdatedMessage,
        TextBlock,
        ThinkingBlock,
        ToolResultBlock,
        ToolUseBlock,
        UserMessage,
    )
    from .options import AgentOptions, ClaudeAgentOptions, HookMatcher, UnsupportedOptionError
    from .permissions import (
        NULL_PERMISSION,
        PermissionResult,
        PermissionResultAllow,
        PermissionResultDeny,
        PermissionRuleValue,
        PermissionUpdate,
        ToolPermissionContext,
    )
    from .query import query
    from .sessions import (
        ForkSessionResult,
        SDKSessionInfo,
        SessionMessage,
        delete_session,
        fork_session,
        get_session_info,
        get_session_messages,
        get_subagent_messages,
        list_sessions,
        list_subagents,
        rename_session,
        tag_session,
    )
    from .store_sessions import (
        delete_session_via_store,
        fork_session_via_store,
        get_session_info_from_store,
        get_session_messages_from_store,
        get_subagent_messages_from_store,
        import_session_to_store,
        list_sessions_from_store,
        list_subagents_from_store,
        rename_session_via_store,
        tag_session_via_store,
    )
    from .transport import (
        Transport,
    )
    from .wire_types import (
        TERMINAL_TASK_STATUSES,
        ContextUsageCategory,
        ContextUsageResponse,
        FastModeDisabledReason,
        FastModeState,
        McpServerConnectionStatus,
        McpServerInfo,
        McpServerStatus,
        McpServerStatusConfig,
        McpStatusResponse,
        McpToolAnnotations,
        McpToolInfo,
        MessageOrigin,
        MessageOriginKind,
        ModelUsage,
        RateLimitStatus,
        RateLimitType,
        ServerToolName,
        SystemInitData,
        SystemInitMcpServer,
        SystemInitPlugin,
        SystemInitPluginError,
        TaskNotificationOriginSubkind,
        TaskNotificationStatus,
        TaskUpdatedStatus,
        TaskUsage,
    )

_LAZY: dict[str, str] = {
    **dict.fromkeys(("ClaudeSDKClient", "SDKClient", "TaskError", "UnknownTaskError"),
                    "client"),
    **dict.fromkeys((
        "AssistantMessage", "ContentBlock", "ConversationResetMessage", "HookEventMessage",
        "Message",
        "MirrorErrorMessage", "ResultMessage", "StreamEvent",
        "SystemMessage", "TaskNotificationMessage", "TaskProgressMessage",
        "TaskStartedMessage", "TaskUpdatedMessage", "TextBlock", "ThinkingBlock",
        "ToolResultBlock", "ToolUseBlock",
        "UserMessage"), "messages"),
    "AgentDefinition": "agents",
    "McpServerError": "mcp_servers",
    **dict.fromkeys(("McpSdkServerConfig", "SdkMcpTool", "ToolAnnotations",
                     "create_sdk_mcp_server", "tool"), "mcp_tools"),
    **dict.fromkeys(("AgentOptions", "ClaudeAgentOptions", "HookMatcher"), "options"),
    "UnsupportedOptionError": "unsupported",
    **dict.fromkeys((
        "NULL_PERMISSION", "PermissionResult", "PermissionResultAllow", "PermissionResultDeny",
        "PermissionRuleValue", "PermissionUpdate", "ToolPermissionContext"), "permissions"),
    "query": "query",
    **dict.fromkeys((
        "InMemorySessionStore", "SessionKey", "SessionStore", "SessionStoreError",
        "fold_session_summary", "project_key_for_directory"), "..stores.session_store"),
    "SQLiteSessionStore": "..stores.sqlite_store",
    "PostgresSessionStore": "..stores.postgres_store",
    **dict.fromkeys((
        "delete_session_via_store", "fork_session_via_store", "get_session_info_from_store",
        "get_session_messages_from_store", "get_subagent_messages_from_store",
        "list_sessions_from_store", "list_subagents_from_store",
        "rename_session_via_store", "tag_session_via_store"), "store_sessions"),
    **dict.fromkeys((
        "ForkSessionResult", "SDKSessionInfo", "SessionMessage", "delete_session",
        "fork_session", "get_session_info", "get_session_messages", "get_subagent_messages",
        "list_sessions", "list_subagents", "rename_session", "tag_session"), "sessions"),
    **dict.fromkeys(("Transport",), "transport"),
    **dict.fromkeys(("CanUseTool", "EffortLevel", "McpServerConfig", "PermissionMode",
        "SandboxIgnoreViolations", "SandboxNetworkConfig", "SandboxSettings", "SdkBeta",
        "SdkPluginConfig", "SettingSource", "TaskBudget", "ThinkingConfig",
        "ThinkingConfigAdaptive", "ThinkingConfigDisabled", "ThinkingConfigEnabled"),
        "config_types"),
    **dict.fromkeys(("ContextUsageCategory", "ContextUsageResponse", "FastModeDisabledReason",
        "FastModeState", "McpServerConnectionStatus", "McpServerInfo", "McpServerStatus",
        "McpServerStatusConfig", "McpStatusResponse", "McpToolAnnotations", "McpToolInfo",
        "MessageOrigin", "MessageOriginKind", "ModelUsage", "RateLimitStatus", "RateLimitType",
        "ServerToolName", "SystemInitData", "SystemInitMcpServer", "SystemInitPlugin",
        "SystemInitPluginError", "TERMINAL_TASK_STATUSES", "TaskNotificationOriginSubkind",
        "TaskNotificationStatus", "TaskUpdatedStatus", "TaskUsage"), "wire_types"),
    **dict.fromkeys(("ConversationResetMessage", "DeferredToolUse", "HookEventMessage",
        "RateLimitEvent", "RateLimitInfo", "ServerToolResultBlock", "ServerToolUseBlock",
        "TaskUpdatedMessage"), "messages"),
    **dict.fromkeys(("CLIConnectionError", "CLIJSONDecodeError", "CLINotFoundError",
        "CanUseToolShadowedWarning", "ClaudeSDKError", "ProcessError", "ResultError"), "errors"),
    **dict.fromkeys(("BackgroundTaskSummary", "BaseHookInput", "CwdChangedHookSpecificOutput",
        "ElicitationHookSpecificOutput", "ElicitationResultHookSpecificOutput",
        "FileChangedHookSpecificOutput", "HookCallback", "HookContext", "HookEffort", "HookInput",
        "HookJSONOutput", "MessageDisplayHookSpecificOutput", "NotificationHookInput",
        "NotificationHookSpecificOutput", "PermissionDeniedHookSpecificOutput",
        "PermissionRequestHookInput", "PermissionRequestHookSpecificOutput",
        "PostModelSwitchHookSpecificOutput", "PostToolBatchHookSpecificOutput",
        "PostToolUseFailureHookInput", "PostToolUseFailureHookSpecificOutput",
        "PostToolUseHookInput", "PostToolUseHookSpecificOutput", "PreCompactHookInput",
        "PreModelSwitchHookSpecificOutput", "PreToolUseHookInput", "PreToolUseHookSpecificOutput",
        "SessionCronSummary", "SessionStartHookSpecificOutput", "StopHookInput",
        "StopHookSpecificOutput", "SubagentStartHookInput", "SubagentStartHookSpecificOutput",
        "SubagentStopHookInput", "SubagentStopHookSpecificOutput",
        "UserPromptExpansionHookSpecificOutput", "UserPromptSubmitHookInput",
        "UserPromptSubmitHookSpecificOutput", "WorktreeCreateHookSpecificOutput"), "hook_types"),
    **dict.fromkeys(("SessionListSubkeysKey", "SessionStoreEntry", "SessionStoreFlushMode",
        "SessionStoreListEntry", "SessionSummaryEntry"), "..stores.session_store"),
    **dict.fromkeys(("import_session_to_store",), "store_sessions"),
    "__version__": "..",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())
