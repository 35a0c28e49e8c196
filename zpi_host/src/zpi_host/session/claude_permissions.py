"""The ``permissions`` of Claude Code's settings files, read as this host's rules.

``~/.claude/settings.json`` (``CLAUDE_CONFIG_DIR`` moves it), the project's
``.claude/settings.json`` and ``.claude/settings.local.json``: their ``allow``, ``deny`` and
``ask`` rules (Claude's spelling, ``Bash(git status:*)``, matches this host's tools through
:mod:`zpi_host.permissions.toolnames`), ``additionalDirectories`` and ``defaultMode``. The
setting ``compat.claude.read_permissions`` (user settings only, default on) switches it off.

Trust (docs/reliability.md): what loosens the checks (``allow``, ``additionalDirectories``,
a ``defaultMode`` of ``acceptEdits``) comes from the project's two files only once the project
is trusted, and ``bypassPermissions`` never does; ``deny``, ``ask`` and ``plan`` only tighten
and always apply. Precedence: the host's own settings and options choose the mode first;
rules of every file add up (deny wins over ask over allow).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

__all__ = ["ClaudePermissions", "claude_settings_path", "read_claude_permissions"]

#: Claude's file of each scope, in the order they are read (a later mode wins)
SCOPES = ("user", "project", "local")
#: defaultMode values that loosen the checks (held back for an untrusted project)
_LOOSENING_MODES = frozenset({"acceptEdits", "bypassPermissions"})


def claude_settings_path(scope: str, cwd: Path, environ: Mapping[str, str]) -> Path:
    """Where Claude Code keeps the settings file of ``scope``."""
    if scope == "user":
        home = environ.get("CLAUDE_CONFIG_DIR") or os.path.join(
            environ.get("HOME") or os.path.expanduser("~"), ".claude")
        return Path(os.path.expanduser(home)) / "settings.json"
    name = "settings.json" if scope == "project" else "settings.local.json"
    return cwd / ".claude" / name


class ClaudePermissions:
    """What the files say, as rules (``(text, source)``), directories and a mode."""

    def __init__(self) -> None:
        self.rules: dict[str, list[tuple[str, str]]] = {"allow": [], "deny": [], "ask": []}
        self.directories: list[Path] = []
        #: Claude's ``defaultMode`` and the file that set it (the last file wins)
        self.mode: tuple[str, Path] | None = None
        self.warnings: list[str] = []
        #: what an untrusted project's files would have loosened, one line each
        self.held: list[str] = []


def read_claude_permissions(cwd: Path, environ: Mapping[str, str], *, trusted: bool,
                            read_user: bool = True,
                            read_project: bool | Collection[str] = True
                            ) -> ClaudePermissions:
    """The permissions of the three files; a file that cannot be read or a bad entry is a
    warning naming it, and the rest applies. ``read_project``: both project files, none, or
    the scopes to read (``project``, ``local``)."""
    from ..fs.shipped import TEXT_LIMIT, ShippedFileError, read_shipped

    found = ClaudePermissions()
    for scope in SCOPES:
        wanted = read_user if scope == "user" else (
            read_project if isinstance(read_project, bool) else scope in read_project)
        if not wanted:
            continue
        path = claude_settings_path(scope, cwd, environ)
        try:
            data = json.loads(read_shipped(path, limit=TEXT_LIMIT, root=None if scope == "user"
                                           else cwd, what="settings file"))
        except FileNotFoundError:
            continue
        except (ShippedFileError, ValueError, UnicodeDecodeError) as exc:
            found.warnings.append(f"{path}: not read ({exc}); its permissions do not apply")
            continue
        section = data.get("permissions") if isinstance(data, dict) else None
        if section is None:
            continue
        if not isinstance(section, dict):
            found.warnings.append(f"{path}: permissions must be an object; ignored")
            continue
        _read_section(found, section, path, shipped=scope != "user", trusted=trusted,
                      cwd=cwd)
    return found


def _read_section(found: ClaudePermissions, section: Mapping[str, Any], path: Path, *,
                  shipped: bool, trusted: bool, cwd: Path) -> None:
    from ..permissions.rules import PermissionRuleError, parse_rule

    held = shipped and not trusted
    for kind in ("allow", "deny", "ask"):
        entries = section.get(kind, [])
        if not isinstance(entries, list):
            found.warnings.append(f"{path}: permissions.{kind} must be a list; ignored")
            continue
        for i, text in enumerate(entries):
            source = f"{path} permissions.{kind}[{i}]"
            try:
                parse_rule(text, source=source)
            except PermissionRuleError as exc:
                found.warnings.append(f"{exc}; ignored")
                continue
            if held and kind == "allow":
                found.held.append(f"{source} {json.dumps(text)}")
                continue
            found.rules[kind].append((text, source))
    directories = section.get("additionalDirectories", [])
    if not isinstance(directories, list):
        found.warnings.append(f"{path}: permissions.additionalDirectories must be a list; "
                              "ignored")
        directories = []
    for i, entry in enumerate(directories):
        where = f"{path} permissions.additionalDirectories[{i}]"
        if not isinstance(entry, str) or not entry:
            found.warnings.append(f"{where} must be a directory path; ignored")
            continue
        if held:
            found.held.append(f"{where} {json.dumps(entry)}")
            continue
        base = path.parent.parent if shipped else cwd
        directory = Path(os.path.expanduser(entry))
        directory = directory if directory.is_absolute() else base / directory
        if not directory.is_dir():
            found.warnings.append(f"{where}: {directory} is not a directory; ignored")
            continue
        found.directories.append(directory)
    mode = section.get("defaultMode")
    if mode is None:
        return
    from ..permissions.modes import CLAUDE_MODES

    if mode not in CLAUDE_MODES:
        found.warnings.append(f"{path} permissions.defaultMode {mode!r} is not supported "
                              f"here (known: {', '.join(CLAUDE_MODES)}); ignored")
    elif shipped and mode == "bypassPermissions":
        found.warnings.append(f"{path}: a project may not set permissions.defaultMode to "
                              "bypassPermissions (it would switch off permission checks for "
                              "whoever opens it); ignored")
    elif held and mode in _LOOSENING_MODES:
        found.held.append(f"{path} permissions.defaultMode {json.dumps(mode)}")
    else:
        found.mode = (mode, path)
