"""The public names: what plugin authors and embedding programs import, at the paths the
documentation gives. A name that disappears from one of these modules fails here; adding one
means adding it to the list (docs/architecture.md, "Public modules")."""

from __future__ import annotations

import importlib

import pytest

#: module -> every public name it must keep (its ``__all__``)
PINNED: dict[str, str] = {
    "zpi_host": """
        AgentSession CompactDecision HookAnswerError HookError Instruction PluginConfig
        PluginHost PluginLoadError PromptDecision StopDecision Tool ToolContext
        ToolDecision ToolMetadata ToolResult ToolResultPatch UsageError ZpiError
        __version__ create_session hookimpl hookspec tool
    """,
    "zpi_host.errors": """
        AssemblyError ConnectionFailure ContextOverflowError DOCS_URL HookAnswerError HookError
        PluginHostSealedError PluginLoadError RunStopped UsageError ZpiError docs_url
    """,
    "zpi_host.sdk": """
        AgentDefinition AgentOptions AssistantMessage BackgroundTaskSummary
        BaseHookInput CLIConnectionError CLIJSONDecodeError CLINotFoundError
        CanUseTool CanUseToolShadowedWarning ClaudeAgentOptions ClaudeSDKClient
        ClaudeSDKError ContentBlock ContextUsageCategory ContextUsageResponse
        ConversationResetMessage CwdChangedHookSpecificOutput DeferredToolUse
        EffortLevel ElicitationHookSpecificOutput
        ElicitationResultHookSpecificOutput FastModeDisabledReason FastModeState
        FileChangedHookSpecificOutput ForkSessionResult HookCallback HookContext
        HookEffort HookEventMessage HookInput HookJSONOutput HookMatcher
        InMemorySessionStore McpSdkServerConfig McpServerConfig
        McpServerConnectionStatus McpServerError McpServerInfo McpServerStatus
        McpServerStatusConfig McpStatusResponse McpToolAnnotations McpToolInfo
        Message MessageDisplayHookSpecificOutput MessageOrigin MessageOriginKind
        MirrorErrorMessage ModelUsage NULL_PERMISSION NotificationHookInput
        NotificationHookSpecificOutput PermissionDeniedHookSpecificOutput
        PermissionMode PermissionRequestHookInput
        PermissionRequestHookSpecificOutput PermissionResult PermissionResultAllow
        PermissionResultDeny PermissionRuleValue PermissionUpdate
        PostModelSwitchHookSpecificOutput PostToolBatchHookSpecificOutput
        PostToolUseFailureHookInput PostToolUseFailureHookSpecificOutput
        PostToolUseHookInput PostToolUseHookSpecificOutput PostgresSessionStore
        PreCompactHookInput PreModelSwitchHookSpecificOutput PreToolUseHookInput
        PreToolUseHookSpecificOutput ProcessError RateLimitEvent RateLimitInfo
        RateLimitStatus RateLimitType ResultError ResultMessage SDKClient
        SDKSessionInfo SQLiteSessionStore SandboxIgnoreViolations
        SandboxNetworkConfig SandboxSettings SdkBeta SdkMcpTool SdkPluginConfig
        ServerToolName ServerToolResultBlock ServerToolUseBlock SessionCronSummary
        SessionKey SessionListSubkeysKey SessionMessage
        SessionStartHookSpecificOutput SessionStore SessionStoreEntry
        SessionStoreError SessionStoreFlushMode SessionStoreListEntry
        SessionSummaryEntry SettingSource StopHookInput StopHookSpecificOutput
        StreamEvent SubagentStartHookInput SubagentStartHookSpecificOutput
        SubagentStopHookInput SubagentStopHookSpecificOutput SystemInitData
        SystemInitMcpServer SystemInitPlugin SystemInitPluginError SystemMessage
        TERMINAL_TASK_STATUSES TaskBudget TaskError TaskNotificationMessage
        TaskNotificationOriginSubkind TaskNotificationStatus TaskProgressMessage
        TaskStartedMessage TaskUpdatedMessage TaskUpdatedStatus TaskUsage TextBlock
        ThinkingBlock ThinkingConfig ThinkingConfigAdaptive ThinkingConfigDisabled
        ThinkingConfigEnabled ToolAnnotations ToolPermissionContext ToolResultBlock
        ToolUseBlock Transport UnknownTaskError UnsupportedOptionError UserMessage
        UserPromptExpansionHookSpecificOutput UserPromptSubmitHookInput
        UserPromptSubmitHookSpecificOutput WorktreeCreateHookSpecificOutput
        __version__ create_sdk_mcp_server delete_session delete_session_via_store
        fold_session_summary fork_session fork_session_via_store get_session_info
        get_session_info_from_store get_session_messages
        get_session_messages_from_store get_subagent_messages
        get_subagent_messages_from_store import_session_to_store list_sessions
        list_sessions_from_store list_subagents list_subagents_from_store
        project_key_for_directory query rename_session rename_session_via_store
        tag_session tag_session_via_store tool
    """,
    "zpi_host.sdk.types": """
        AgentDefinition AssistantMessage AssistantMessageError AsyncHookJSONOutput
        BackgroundTaskSummary BaseHookInput CanUseTool CanUseToolShadowedWarning
        ClaudeAgentOptions ContentBlock ContextUsageCategory ContextUsageResponse
        ControlErrorResponse ControlResponse ConversationResetMessage
        CwdChangedHookSpecificOutput DeferredToolUse EffortLevel
        ElicitationHookSpecificOutput ElicitationResultHookSpecificOutput
        FastModeDisabledReason FastModeState FileChangedHookSpecificOutput
        HookCallback HookContext HookEffort HookEvent HookEventMessage HookInput
        HookJSONOutput HookMatcher HookSpecificOutput McpClaudeAIProxyServerConfig
        McpHttpServerConfig McpSSEServerConfig McpSdkServerConfig
        McpSdkServerConfigStatus McpServerConfig McpServerConnectionStatus
        McpServerInfo McpServerStatus McpServerStatusConfig McpStatusResponse
        McpStdioServerConfig McpToolAnnotations McpToolInfo Message
        MessageDisplayHookSpecificOutput MessageOrigin MessageOriginKind
        MirrorErrorMessage ModelUsage NotificationHookInput
        NotificationHookSpecificOutput PermissionBehavior
        PermissionDeniedHookSpecificOutput PermissionMode PermissionRequestHookInput
        PermissionRequestHookSpecificOutput PermissionResult PermissionResultAllow
        PermissionResultDeny PermissionRuleValue PermissionUpdate
        PermissionUpdateDestination PostModelSwitchHookSpecificOutput
        PostToolBatchHookSpecificOutput PostToolUseFailureHookInput
        PostToolUseFailureHookSpecificOutput PostToolUseHookInput
        PostToolUseHookSpecificOutput PreCompactHookInput
        PreModelSwitchHookSpecificOutput PreToolUseHookInput
        PreToolUseHookSpecificOutput RateLimitEvent RateLimitInfo RateLimitStatus
        RateLimitType ResultMessage SDKControlInitializeRequest
        SDKControlInterruptRequest SDKControlMcpMessageRequest
        SDKControlMcpReconnectRequest SDKControlMcpToggleRequest
        SDKControlPermissionRequest SDKControlRequest SDKControlResponse
        SDKControlRewindFilesRequest SDKControlSetPermissionModeRequest
        SDKControlStopTaskRequest SDKHookCallbackRequest SDKSessionInfo
        SandboxIgnoreViolations SandboxNetworkConfig SandboxSettings SdkBeta
        SdkPluginConfig ServerToolName ServerToolResultBlock ServerToolUseBlock
        SessionCronSummary SessionKey SessionListSubkeysKey SessionMessage
        SessionStartHookSpecificOutput SessionStore SessionStoreEntry
        SessionStoreFlushMode SessionStoreListEntry SessionSummaryEntry
        SettingSource StopHookInput StopHookSpecificOutput StreamEvent
        SubagentStartHookInput SubagentStartHookSpecificOutput SubagentStopHookInput
        SubagentStopHookSpecificOutput SyncHookJSONOutput SystemInitData
        SystemInitMcpServer SystemInitPlugin SystemInitPluginError SystemMessage
        SystemPromptCustom SystemPromptFile SystemPromptPreset
        TERMINAL_TASK_STATUSES TaskBudget TaskNotificationMessage
        TaskNotificationOriginSubkind TaskNotificationStatus TaskProgressMessage
        TaskStartedMessage TaskUpdatedMessage TaskUpdatedStatus TaskUsage TextBlock
        ThinkingBlock ThinkingConfig ThinkingConfigAdaptive ThinkingConfigDisabled
        ThinkingConfigEnabled ThinkingDisplay ToolPermissionContext ToolResultBlock
        ToolUseBlock ToolsPreset UserMessage UserPromptExpansionHookSpecificOutput
        UserPromptSubmitHookInput UserPromptSubmitHookSpecificOutput
        WorktreeCreateHookSpecificOutput
    """,
    "zpi_host.sdk.host": """
        HostSession
    """,
    "zpi_host.stores": """
        ChainError CurrentState Lease LeaseLostError OpenCall PostgresTranscriptStore
        SQLiteTranscriptStore SessionOwnedError StoreSessionManager StoreUnavailableError
        TranscriptStore TranscriptStoreError WriteBarrierError export_jsonl import_jsonl
    """,
    "zpi_host.testing": """
        FakeDistribution FunctionModel ModelServer ScriptedModel install_distribution
        run_session_store_conformance
    """,
    "zpi_host.tools": """
        Content ImageContent SessionDefinition TextContent Tool ToolArgumentError ToolCall
        ToolContext ToolFailure ToolMetadata ToolResult ToolUpdate tool
    """,
    "zpi_host.providers": """
        CatalogError Credential Done ModelEntry ModelRequest Price Provider
        ProviderAuthError ProviderConnectionError ProviderError ProviderFactory
        ProviderHTTPError ProviderResponseTooLarge ProviderStreamBroken
        ProviderStreamError ReasoningDelta RequestPolicy StreamEvent TextDelta
        ToolCallDelta ToolCallEnd ToolCallStart ToolSpec UsageReport cost credentials
        has_credentials list_models resolve_model
    """,
    "zpi_host.permissions": """
        AskHook COMMAND_ARGUMENTS CanUseTool DIMENSIONS Denial Dimension MODES
        NO_APPROVER PATH_ARGUMENTS PERMISSION_KEYS PermissionAllow PermissionConfigError
        PermissionContext PermissionDeny PermissionMode PermissionPolicy
        PermissionResult PermissionRuleError PermissionRules READ_TOOLS RULE_ARGUMENTS
        Rule SOURCES Source WorkspaceRoots build_policy canonical_argument check_mode
        parse_rule paths_of summarize_input
    """,
    "zpi_host.resources": """
        ALL_KINDS AgentDefinition CONTEXT_FILE_NAMES Command ContextFile
        ResourceDiagnostic ResourceLoader ResourceSource Skill expand_template
        split_arguments
    """,
    "zpi_host.transcript": """
        AssistantRecord COMPACTION_SOURCE CompactionRecord ContextRecord CustomRecord
        FORMAT_VERSION ForkOrigin HeaderRecord InvalidSessionIdError ModelChangeRecord
        ReasoningLevelRecord Record RecordError SessionBusyError SessionExistsError
        SessionInfo SessionManager SessionNotFoundError SnapshotRecord TagRecord
        TitleRecord ToolResultRecord ToolUseRecord Transcript TranscriptError
        TranscriptLockedError TranscriptVersionError UserRecord WarningRecord agent_dir
        check_session_id delete_session fork_session get_session_entries
        get_session_info get_session_messages list_sessions message_from_json
        message_to_json open_owner parse_transcript project_key read_transcript
        rename_session session_path summary_message tag_session
    """,
    "zpi_host.contract.hookspecs": """
        LoadingHost PROJECT_NAME hookimpl hookspec zpi_after_compact zpi_after_tool
        zpi_before_compact zpi_before_request zpi_before_tool zpi_event zpi_instructions
        zpi_load_plugins zpi_notification zpi_permission_request zpi_prepare_tools
        zpi_register_commands zpi_register_providers zpi_register_resources
        zpi_register_search_backends zpi_register_tools zpi_request_options zpi_run_end
        zpi_session_end zpi_session_start zpi_stop zpi_subagent_start zpi_subagent_stop
        zpi_system_prompt zpi_tool_failed zpi_tool_overrides zpi_turn_end zpi_turn_start
        zpi_unknown_tool zpi_user_prompt
    """,
    "zpi_host.contract.decisions": """
        Behavior CombinedCompactDecision CombinedPromptDecision CombinedResultPatch
        CombinedStopDecision CombinedToolDecision CompactDecision Instruction
        PromptDecision StopDecision ToolDecision ToolResultPatch answer_problem
        check_answer closed_answer collect_instructions collect_texts
        combine_compact_decisions combine_prompt_decisions combine_result_patches
        combine_stop_decisions combine_tool_decisions merge_options
    """,
    "zpi_host.agent.events": """
        CompactionEvent Event InputDelivered MessageEnd ReasoningDeltaEvent RetryEvent
        RunEnd RunStart SystemMessageEvent TaskNotification TaskProgress TaskStarted
        TextDeltaEvent ToolEnd ToolStart ToolUpdateEvent TurnEnd TurnStart WarningEvent
    """,
    "zpi_host.session.ports": """
        AskUser AskUserError HostPorts McpPort McpRegistry McpServerError ModelPort
        NobodyToAsk Question QuestionOption discard_mcp_registry offer_mcp_registry SearchBackend
        SearchBackendError SearchHit SearchPort SessionPorts StoragePort
        SubagentPort TaskError TaskInfo TaskPort TaskRegistry TerminalAsker
        UnknownTaskError check_answers
    """,
    "zpi_host.providers.messages": """
        AssistantMessage ContextMessage ImageContent Message TextContent ThinkingContent
        ToolCallContent ToolResultMessage Usage UserMessage reminder
    """,
}


def public_names(module: object) -> set[str]:
    names = getattr(module, "__all__", None)
    if names is not None:
        return set(names)
    return {n for n, v in vars(module).items()
            if not n.startswith("_") and getattr(v, "__module__", None) == module.__name__}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_every_pinned_name_is_still_there(name: str) -> None:
    module = importlib.import_module(name)
    pinned = set(PINNED[name].split())
    missing = sorted(pinned - public_names(module))
    assert not missing, f"{name} lost public names: {missing}"
    unreachable = sorted(n for n in pinned if not hasattr(module, n))
    assert not unreachable, f"{name} lists names it cannot give: {unreachable}"


@pytest.mark.parametrize("name", sorted(PINNED))
def test_a_new_public_name_is_pinned_too(name: str) -> None:
    """So that the list stays the whole public surface (a name added by accident is seen)."""
    added = sorted(public_names(importlib.import_module(name)) - set(PINNED[name].split()))
    assert not added, f"{name} has public names not pinned here: {added}"


REPO = __import__("pathlib").Path(__file__).resolve().parents[2]
PLUGIN_DISTRIBUTIONS = ("zpi_builtins", "zpi_compat_claude", "zpi_compat_zcode")


def documented_kernel_names() -> dict[str, set[str]]:
    """The table of docs/architecture.md, "What the other distributions use of the kernel"."""
    text = (REPO / "docs" / "architecture.md").read_text()
    table = text.split("<!-- kernel-names-for-distributions -->")[1].split(
        "<!-- end kernel-names-for-distributions -->")[0]
    names: dict[str, set[str]] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`zpi_host"):
            names[cells[0].strip("`")] = {n.strip().strip("`") for n in cells[1].split(",")}
    return names


def kernel_imports_of(distribution: str) -> dict[str, set[str]]:
    import ast

    found: dict[str, set[str]] = {}
    for path in (REPO / distribution / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and \
                    (node.module or "").split(".")[0] == "zpi_host":
                found.setdefault(node.module or "", set()).update(a.name for a in node.names)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "zpi_host":
                        found.setdefault(alias.name, set())
    return found


@pytest.mark.parametrize("distribution", PLUGIN_DISTRIBUTIONS)
def test_the_other_distributions_use_only_public_or_documented_kernel_names(
        distribution: str) -> None:
    documented = documented_kernel_names()
    assert documented, "the table of docs/architecture.md was not found"
    undocumented = []
    for module, names in sorted(kernel_imports_of(distribution).items()):
        public = set(PINNED[module].split()) if module in PINNED else set()
        extra = names - public - documented.get(module, set())
        if extra or (not names and module not in PINNED and module not in documented):
            undocumented.append(f"{module}: {sorted(extra) or 'the module'}")
    assert not undocumented, (
        f"{distribution} imports kernel names that are neither public nor listed in "
        f"docs/architecture.md: {undocumented}")


def test_every_documented_kernel_name_exists() -> None:
    for module, names in documented_kernel_names().items():
        imported = importlib.import_module(module)
        missing = sorted(n for n in names if not hasattr(imported, n))
        assert not missing, f"docs/architecture.md lists {module} names it lacks: {missing}"
