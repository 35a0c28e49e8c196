"""The permission modes, and who may decide a call: names the policy needs at every start,
apart from the verdict and approver classes of :mod:`.results` (built when a call is
checked)."""

from __future__ import annotations

from typing import Literal

__all__ = ["MODES", "SOURCES", "PermissionMode", "Source"]

PermissionMode = Literal["default", "ask", "plan", "bypass"]
MODES: tuple[PermissionMode, ...] = ("default", "ask", "plan", "bypass")

#: Who decided: a rule, the mode, a hook, the embedding program's callback, or the workspace
#: check of a path.
Source = Literal["rule", "mode", "hook", "callback", "path"]
SOURCES: tuple[Source, ...] = ("rule", "mode", "hook", "callback", "path")
