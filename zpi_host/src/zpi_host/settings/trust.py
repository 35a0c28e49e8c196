"""The per-project trust decision: whether what a repository ships may run programs.

A cloned repository is not the user. Hooks of every dialect, plugin folders named by the
project's settings and anything else in the project that makes a program run wait for one
decision per project folder, kept in the USER settings file under ``trusted_projects`` (the
resolved real paths, like Claude Code's ``hasTrustDialogAccepted`` per project). A project or
local settings file can never set it (``USER_ONLY_SETTINGS`` in ``session/project_guards.py``).
A folder is trusted when it, or a folder above it, was trusted.

Plugins do not decide: the assembly tells them (``PluginConfig.trusted``) and they hand what
they held back to ``PluginHost.withhold``; the assembly then asks (``chat``), refuses (a
non-interactive ``run``) or goes on without it (and says so). docs/reliability.md lists every
setting and file that makes something run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError

if TYPE_CHECKING:
    from .manager import SettingsManager

#: the user-settings key: a list of project folders (resolved real paths) the user trusted
TRUSTED_PROJECTS = "trusted_projects"

#: project settings whose folders load plugins (hooks, commands): honoured only when trusted
GATED_SETTINGS: Mapping[str, str] = {
    "compat.claude.plugin_dirs": "Claude plugin folder",
    "compat.zcode.plugin_dirs": "ZCode plugin folder",
}

#: project settings that loosen the user's protections (what may run unasked, where file
#: tools may write, whether the user's guard hooks fail open): applied only when trusted
LOOSENING_SETTINGS: Mapping[str, str] = {
    "permissions.allow": "allow rules",
    "permissions.additional_directories": "workspace roots",
    "hooks.on_error": "the error policy of every hook",
    "hooks.policies": "error policies of hooks",
}

#: what waits for the trust decision when the project ships it (docs, messages)
GATED = (
    "hooks in .claude/settings.json and .claude/settings.local.json "
    "(with compat.claude.settings_sources)",
    "hooks in .zcode/config.json (hooks.enabled in that file does not by itself enable them)",
    "plugin folders named by compat.claude.plugin_dirs / compat.zcode.plugin_dirs in "
    ".zpi/settings.json or .zpi/settings.local.json",
    "plugins enabled by enabledPlugins in the project's Claude or ZCode settings files",
)


class UntrustedProjectError(UsageError):
    """The project ships programs that would run and nobody said it may be trusted."""

    def __init__(self, root: Path, withheld: Sequence[str]) -> None:
        super().__init__(refusal(root, withheld))
        self.root = root
        self.withheld = tuple(withheld)


def project_root(cwd: str | Path) -> Path:
    """The folder a trust decision is about: the real path of the working directory."""
    return Path(os.path.realpath(Path(cwd).expanduser()))


def trusted_folders(user_settings: Mapping[str, Any]) -> list[Path]:
    """The folders in the user's ``trusted_projects`` (entries of the wrong type skipped: the
    schema has already reported them)."""
    raw = user_settings.get(TRUSTED_PROJECTS)
    if not isinstance(raw, list):
        return []
    return [project_root(item) for item in raw if isinstance(item, str) and item]


def is_trusted(user_settings: Mapping[str, Any], cwd: str | Path) -> bool:
    """Whether the user trusted the project at ``cwd`` (or a folder above it)."""
    root = project_root(cwd)
    chosen = set(trusted_folders(user_settings))
    return any(folder in chosen for folder in (root, *root.parents))


def trust(manager: SettingsManager, cwd: str | Path) -> Path:
    """Record that the user trusts the project at ``cwd``: added to ``trusted_projects`` in
    the user settings file (a surgical, atomic update of that one key). Returns the folder."""
    root = project_root(cwd)

    def add(data: dict[str, Any]) -> None:
        current = data.get(TRUSTED_PROJECTS)
        if current is not None and not isinstance(current, list):
            raise UsageError(f"{manager.path('user')}: setting {TRUSTED_PROJECTS} must be a "
                             "list of folders; fix it to record the trust of " + str(root))
        items = list(current or [])
        if str(root) not in items:
            items.append(str(root))
        data[TRUSTED_PROJECTS] = items

    manager.edit("user", add)
    return root


def hold_back_gated(manager: SettingsManager, settings: dict[str, Any],
                    cwd: Path) -> list[str]:
    """The project is not trusted: the plugin folders its settings files name
    (:data:`GATED_SETTINGS`) are taken out of the merged ``settings`` (the user's own list
    stays); returns one line for each, naming the folder and the file."""
    from .manager import restore_user_value

    held: list[str] = []
    for scope in ("project", "local"):
        for dotted, label in GATED_SETTINGS.items():
            node = _value(manager.layer(scope), dotted)
            if not isinstance(node, list) or not node:
                continue
            restore_user_value(manager, settings, dotted)
            held += [f"{label} {(Path(cwd) / str(item)).resolve()} (from "
                     f"{manager.path(scope)} {dotted})" for item in node]
    return held


def hold_back_loosening(manager: SettingsManager, settings: dict[str, Any],
                        cwd: Path) -> str | None:
    """The project is not trusted: what its settings files say of
    :data:`LOOSENING_SETTINGS` is taken out of the merged ``settings`` (the user's own values
    stay). Returns the warning naming each, or None when the project sets none of them."""
    import json

    from .manager import restore_user_value

    held: list[str] = []
    for scope in ("project", "local"):
        for dotted, label in LOOSENING_SETTINGS.items():
            node = _value(manager.layer(scope), dotted)
            if node is None or node == [] or node == {}:
                continue
            restore_user_value(manager, settings, dotted)
            held.append(f"{dotted} ({label}) {json.dumps(node)} from {manager.path(scope)}")
    if not held:
        return None
    return (f"not applied, because the project {project_root(cwd)} is not trusted: "
            f"{'; '.join(held)} (trust it with --trust-project)")


def _value(layer: Mapping[str, Any], dotted: str) -> Any:
    """The value of a dotted key in one settings file's object (None when it is not set)."""
    node: Any = layer
    for key in dotted.split("."):
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


def refusal(root: Path, withheld: Sequence[str]) -> str:
    """The one line a non-interactive run refuses with: what would run and how to trust."""
    from ..support.terminal_text import for_terminal

    more = f"; and {len(withheld) - 3} more" if len(withheld) > 3 else ""
    shown = for_terminal("; ".join(" ".join(item.split()) for item in withheld[:3])) + more
    return (f"the project {root} is not trusted and would run: {shown}. Trust it with "
            "--trust-project (recorded in your user settings) if you trust what it runs")


def not_run(root: Path, withheld: Sequence[str]) -> str:
    """The warning of a session that goes on without what the project would run."""
    return (f"not run, because the project {root} is not trusted: {'; '.join(withheld)} "
            "(trust it with --trust-project)")
