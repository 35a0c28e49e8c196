"""The shapes of ``ClaudeAgentOptions``' values, with claude-agent-sdk's names and keys: the
permission modes, setting sources, system prompt and tools forms, MCP server configs, plugins,
sandbox settings, thinking, and the ``can_use_tool`` callback's type. ``options.py`` checks
the values; what this host refuses is named there (and in docs/sdk.md).

No ``from __future__ import annotations``: ``NotRequired`` must be evaluated.
"""

from collections.abc import Awaitable, Callable
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

from .mcp_tools import McpSdkServerConfig
from .permissions import PermissionResult, ToolPermissionContext

__all__ = [
    "CanUseTool", "EffortLevel", "McpHttpServerConfig", "McpSSEServerConfig",
    "McpServerConfig", "McpStdioServerConfig", "PermissionBehavior", "PermissionMode",
    "PermissionUpdateDestination", "SandboxIgnoreViolations", "SandboxNetworkConfig",
    "SandboxSettings", "SdkBeta", "SdkPluginConfig", "SettingSource", "SystemPromptCustom",
    "SystemPromptFile", "SystemPromptPreset", "TaskBudget", "ThinkingConfig",
    "ThinkingConfigAdaptive", "ThinkingConfigDisabled", "ThinkingConfigEnabled",
    "ThinkingDisplay", "ToolsPreset",
]

#: Claude's permission modes (``auto`` is refused here: it needs Claude's classifier)
PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"]
#: Anthropic beta headers (the ``betas`` option is refused: set headers in settings)
SdkBeta = Literal["context-1m-2025-08-07"]
#: which settings files are read (``setting_sources``)
SettingSource = Literal["user", "project", "local"]
#: the ``effort`` option's levels
EffortLevel: TypeAlias = Literal["low", "medium", "high", "xhigh", "max"]
#: where a permission update is kept
PermissionUpdateDestination = Literal["userSettings", "projectSettings", "localSettings",
                                      "session"]
#: what a permission rule says
PermissionBehavior = Literal["allow", "deny", "ask"]

#: ``async (tool_name, input, context) -> PermissionResultAllow | PermissionResultDeny``
CanUseTool = Callable[[str, dict[str, Any], ToolPermissionContext], Awaitable[PermissionResult]]


class SystemPromptPreset(TypedDict):
    """``system_prompt={"type": "preset", "preset": "claude_code", "append": ...}``: this
    host's own coding prompt, with ``append`` after it."""

    type: Literal["preset"]
    preset: Literal["claude_code"]
    append: NotRequired[str]
    exclude_dynamic_sections: NotRequired[bool]
    snapshot: NotRequired[bool]


class SystemPromptCustom(TypedDict):
    type: Literal["custom"]
    prompt: str
    snapshot: NotRequired[bool]


class SystemPromptFile(TypedDict):
    type: Literal["file"]
    path: str


class TaskBudget(TypedDict):
    """A token budget the model is told about (the option is refused here)."""

    total: int


class ToolsPreset(TypedDict):
    type: Literal["preset"]
    preset: Literal["claude_code"]


class McpStdioServerConfig(TypedDict):
    """A server run as a process speaking MCP on its standard streams."""

    type: NotRequired[Literal["stdio"]]
    command: str
    args: NotRequired[list[str]]
    env: NotRequired[dict[str, str]]


class McpSSEServerConfig(TypedDict):
    type: Literal["sse"]
    url: str
    headers: NotRequired[dict[str, str]]


class McpHttpServerConfig(TypedDict):
    type: Literal["http"]
    url: str
    headers: NotRequired[dict[str, str]]


McpServerConfig = (
    McpStdioServerConfig | McpSSEServerConfig | McpHttpServerConfig | McpSdkServerConfig
)


class SdkPluginConfig(TypedDict):
    """``plugins=[{"type": "local", "path": ...}]``: a Claude Code plugin folder."""

    type: Literal["local"]
    path: str


class SandboxNetworkConfig(TypedDict, total=False):
    allowedDomains: list[str]
    deniedDomains: list[str]
    allowManagedDomainsOnly: bool
    allowUnixSockets: list[str]
    allowAllUnixSockets: bool
    allowLocalBinding: bool
    allowMachLookup: list[str]
    httpProxyPort: int
    socksProxyPort: int


#: command pattern -> substrings of violations left unreported
SandboxIgnoreViolations: TypeAlias = dict[str, list[str]]


class SandboxSettings(TypedDict, total=False):
    """Claude Code's bash sandbox (the ``sandbox`` option is refused here)."""

    enabled: bool
    autoAllowBashIfSandboxed: bool
    excludedCommands: list[str]
    allowUnsandboxedCommands: bool
    network: SandboxNetworkConfig
    ignoreViolations: SandboxIgnoreViolations
    enableWeakerNestedSandbox: bool


#: whether thinking text is shown (only ``summarized`` is supported here)
ThinkingDisplay = Literal["summarized", "omitted"]


class ThinkingConfigAdaptive(TypedDict):
    type: Literal["adaptive"]
    display: NotRequired[ThinkingDisplay]


class ThinkingConfigEnabled(TypedDict):
    type: Literal["enabled"]
    budget_tokens: int
    display: NotRequired[ThinkingDisplay]


class ThinkingConfigDisabled(TypedDict):
    type: Literal["disabled"]


ThinkingConfig = ThinkingConfigAdaptive | ThinkingConfigEnabled | ThinkingConfigDisabled
