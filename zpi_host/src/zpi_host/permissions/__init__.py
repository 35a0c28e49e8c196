"""Permissions: modes, allow/deny/ask rules, workspace roots and the ``can_use_tool`` callback.

Build a session's policy with :func:`build_policy` (settings + options) and ask it about every
tool call with :meth:`PermissionPolicy.check`; a denied call becomes an error result for the
model and a :class:`Denial` record for the transcript and the run's result. The full story,
including the evaluation order, is in ``docs/permissions.md``.
"""

from .matching import COMMAND_ARGUMENTS, RULE_ARGUMENTS, canonical_argument
from .paths import PATH_ARGUMENTS, READ_TOOLS, WorkspaceRoots, paths_of
from .policy import (
    NO_APPROVER,
    PERMISSION_KEYS,
    AskHook,
    PermissionPolicy,
    build_policy,
    check_mode,
)
from .results import (
    MODES,
    SOURCES,
    CanUseTool,
    Denial,
    PermissionAllow,
    PermissionContext,
    PermissionDeny,
    PermissionMode,
    PermissionResult,
    Source,
    summarize_input,
)
from .rules import (
    DIMENSIONS,
    Dimension,
    PermissionConfigError,
    PermissionRuleError,
    PermissionRules,
    Rule,
    parse_rule,
)

__all__ = [
    "COMMAND_ARGUMENTS", "DIMENSIONS", "MODES", "NO_APPROVER", "PATH_ARGUMENTS",
    "PERMISSION_KEYS", "READ_TOOLS", "RULE_ARGUMENTS", "SOURCES", "AskHook", "CanUseTool", "Denial",
    "Dimension", "PermissionAllow", "PermissionConfigError", "PermissionContext",
    "PermissionDeny", "PermissionMode", "PermissionPolicy", "PermissionResult",
    "PermissionRuleError", "PermissionRules", "Rule", "Source", "WorkspaceRoots",
    "build_policy", "canonical_argument", "check_mode", "parse_rule", "paths_of",
    "summarize_input",
]
