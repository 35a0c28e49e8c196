"""Claude Code hooks: parse a hooks configuration and run its command handlers from the
kernel's ``zpi_*`` hooks (see docs/claude-hooks.md).

Light to import (no anyio): the folder loader builds these objects while plugins are listed.
"""

from .config import EVENTS, CommandHandler, HookConfig, MatcherGroup, parse_hooks
from .engine import HookDiagnostic
from .plugin import ClaudeHooks

__all__ = ["EVENTS", "ClaudeHooks", "CommandHandler", "HookConfig", "HookDiagnostic",
           "MatcherGroup", "parse_hooks"]
