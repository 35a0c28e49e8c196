"""ZPI host: a plugin-driven host for coding agents.

The public names below are imported on first use, so that ``import zpi_host`` (and the CLI's
``--version``) stays cheap.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not ``typing``'s: ``zpi-host --version`` imports this module alone
if TYPE_CHECKING:
    from typing import Any

    from .contract.decisions import (
        CompactDecision,
        Instruction,
        PromptDecision,
        StopDecision,
        ToolDecision,
        ToolResultPatch,
    )
    from .contract.hookspecs import hookimpl, hookspec
    from .contract.plugins import PluginConfig, PluginHost
    from .errors import HookAnswerError, HookError, PluginLoadError, UsageError, ZpiError
    from .session.agent_session import AgentSession
    from .session.assembly import create_session
    from .tools.base import Tool, ToolContext, ToolMetadata, ToolResult
    from .tools.decorator import tool

_LAZY: dict[str, str] = {
    "tool": "tools.decorator",
    "Tool": "tools.base",
    "ToolContext": "tools.base",
    "ToolMetadata": "tools.base",
    "ToolResult": "tools.base",
    "create_session": "session.assembly",
    "AgentSession": "session.agent_session",
    "hookimpl": "contract.hookspecs",
    "hookspec": "contract.hookspecs",
    "PluginHost": "contract.plugins",
    "PluginConfig": "contract.plugins",
    "CompactDecision": "contract.decisions",
    "Instruction": "contract.decisions",
    "PromptDecision": "contract.decisions",
    "StopDecision": "contract.decisions",
    "ToolDecision": "contract.decisions",
    "ToolResultPatch": "contract.decisions",
    "ZpiError": "errors",
    "UsageError": "errors",
    "PluginLoadError": "errors",
    "HookError": "errors",
    "HookAnswerError": "errors",
}

__all__ = sorted([*_LAZY, "__version__"])


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from .support.distinfo import kernel_version

        value = kernel_version()
    elif name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
    else:
        raise AttributeError(f"module 'zpi_host' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
