"""Permissions: modes, allow/deny/ask rules, workspace roots and the ``can_use_tool`` callback.

Build a session's policy with :func:`build_policy` (settings + options) and ask it about every
tool call with :meth:`PermissionPolicy.check`; a denied call becomes an error result for the
model and a :class:`Denial` record for the transcript and the run's result. The full story,
including the evaluation order, is in ``docs/permissions.md``.
"""

from typing import TYPE_CHECKING

from ..support.lazy import lazy_attributes
from .matching import COMMAND_ARGUMENTS, RULE_ARGUMENTS, canonical_argument
from .paths import PATH_ARGUMENTS, READ_TOOLS, WorkspaceRoots, paths_of

if TYPE_CHECKING:
    from .errors import PermissionConfigError
    from .modes import MODES, SOURCES, PermissionMode, Source
    from .policy import (
        NO_APPROVER,
        PERMISSION_KEYS,
        AskHook,
        PermissionPolicy,
        build_policy,
        check_mode,
    )
    from .results import (
        CanUseTool,
        Denial,
        PermissionAllow,
        PermissionContext,
        PermissionDeny,
        PermissionResult,
        summarize_input,
    )
    from .rules import (
        DIMENSIONS,
        Dimension,
        PermissionRuleError,
        PermissionRules,
        Rule,
        parse_rule,
    )

#: where each name that needs the rule parser or the policy lives: imported on first use, so
#: a tool plugin adding to ``PATH_ARGUMENTS`` or ``RULE_ARGUMENTS`` (``--list-plugins`` loads
#: them all) does not build the policy's classes
_LAZY = {
    "NO_APPROVER": "policy",
    "PERMISSION_KEYS": "policy",
    "AskHook": "policy",
    "PermissionPolicy": "policy",
    "build_policy": "policy",
    "check_mode": "policy",
    "MODES": "modes",
    "SOURCES": "modes",
    "CanUseTool": "results",
    "Denial": "results",
    "PermissionAllow": "results",
    "PermissionContext": "results",
    "PermissionDeny": "results",
    "PermissionMode": "modes",
    "PermissionResult": "results",
    "Source": "modes",
    "summarize_input": "results",
    "DIMENSIONS": "rules",
    "Dimension": "rules",
    "PermissionConfigError": "errors",
    "PermissionRuleError": "rules",
    "PermissionRules": "rules",
    "Rule": "rules",
    "parse_rule": "rules",
}

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())

__all__ = [
    "COMMAND_ARGUMENTS", "DIMENSIONS", "MODES", "NO_APPROVER", "PATH_ARGUMENTS",
    "PERMISSION_KEYS", "READ_TOOLS", "RULE_ARGUMENTS", "SOURCES", "AskHook", "CanUseTool", "Denial",
    "Dimension", "PermissionAllow", "PermissionConfigError", "PermissionContext",
    "PermissionDeny", "PermissionMode", "PermissionPolicy", "PermissionResult",
    "PermissionRuleError", "PermissionRules", "Rule", "Source", "WorkspaceRoots",
    "build_policy", "canonical_argument", "check_mode", "parse_rule", "paths_of",
    "summarize_input",
]
