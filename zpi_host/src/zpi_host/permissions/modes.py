"""The permission modes, and who may decide a call: names the policy needs at every start,
apart from the verdict and approver classes of :mod:`.results` (built when a call is
checked)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

__all__ = ["CLAUDE_MODES", "MODES", "SOURCES", "PermissionMode", "Source"]

PermissionMode = Literal["default", "ask", "plan", "bypass"]
MODES: tuple[PermissionMode, ...] = ("default", "ask", "plan", "bypass")

#: Claude Code's mode names (the CLI's ``--permission-mode``) -> this host's mode and the
#: tools whose calls inside the workspace run unasked in it (allow rules). The SDK maps the
#: same names onto its own tool names (``zpi_host.sdk.options.PERMISSION_MODES``).
CLAUDE_MODES: Mapping[str, tuple[PermissionMode, tuple[str, ...]]] = {
    "default": ("ask", ()),
    "acceptEdits": ("ask", ("edit", "write", "notebook_edit", "batch_edit")),
    "plan": ("plan", ()),
    "bypassPermissions": ("bypass", ()),
}

#: Who decided: a rule, the mode, a hook, the embedding program's callback, or the workspace
#: check of a path.
Source = Literal["rule", "mode", "hook", "callback", "path"]
SOURCES: tuple[Source, ...] = ("rule", "mode", "hook", "callback", "path")
