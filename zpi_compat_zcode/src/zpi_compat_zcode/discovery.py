"""Where ZCode keeps what this adapter loads: its user folder, its config files, the plugins it
installed.

- ``~/.zcode``: ``skills/``, ``commands/``, ``cli/config.json`` (user config, hooks);
  ``~/.agents/skills`` too. In the project: ``.zcode/`` (``skills/``, ``commands/``,
  ``config.json``) and ``.agents/`` (``skills/``, ``commands/``).
- Installed plugins (``compat.zcode.use_installed``): ``~/.zcode/plugins/installed_plugins.json``
  in Claude Code's format, enabled by ``enabledPlugins`` in the two config files. ZCode's
  documentation does not describe its registry; this layout is an assumption (see
  ``docs/zcode-plugins.md``), so it is off unless asked for.

Standard library only at import: ``--list-plugins`` passes through here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zpi_compat_claude.discovery import Broken, FolderRef


def zcode_home() -> Path:
    """ZCode's user folder, ``~/.zcode``."""
    return Path(os.path.abspath(Path("~/.zcode").expanduser()))


def config_files(home: Path, cwd: Path) -> list[tuple[str, Path]]:
    """ZCode's config files in the order their hooks run: user, then workspace."""
    return [("user", home / "cli" / "config.json"), ("workspace", cwd / ".zcode" / "config.json")]


def installed_folders(home: Path, cwd: Path, *, project: bool = True
                      ) -> tuple[list[FolderRef], list[Broken]]:
    """The plugins ZCode installed and enabled (Claude Code's registry format under
    ``~/.zcode/plugins``; ``enabledPlugins`` in ZCode's config files, the workspace one
    deciding for a plugin it names; only the user's file when ``project`` is False: the
    project is not trusted)."""
    from zpi_compat_claude.discovery import installed_folders as registry_folders

    return registry_folders(home, cwd, prefix="zcode", product="ZCode",
                            settings_label="ZCode's config files",
                            enabled_files=[path for scope, path in config_files(home, cwd)
                                           if project or scope == "user"])
