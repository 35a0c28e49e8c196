"""Entry-point plugin ``claude``: finds Claude Code plugin folders and registers each one.

Every folder becomes one plugin named ``claude:<name>`` (source ``claude``) whose record says
what it contributes; a folder that cannot load is listed as failed with the reason, and the
others load anyway. See ``docs/claude-plugins.md`` for where folders come from and the settings.
Only Claude's discovery happens here; registering is :mod:`.adapter` (shared with the ZCode
dialect), the work is in :mod:`.folder` and the hook engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from zpi_host import hookimpl

if TYPE_CHECKING:
    from .folder import LoadContext


@hookimpl
def zpi_load_plugins(host: Any) -> None:
    """Register the folders of ``compat.claude.plugin_dirs`` (``--plugin-dir``), Claude Code's
    installed plugins (``compat.claude.use_installed``), ``~/.claude`` and the project's
    ``.claude``, and the hooks of the Claude settings files named in
    ``compat.claude.settings_sources``."""
    if _nothing_to_load(host):
        return  # the common case costs a few stat calls, not the folder machinery's imports
    from zpi_host.settings.manager import agent_dir

    from .adapter import load_dialect
    from .discovery import ClaudeSettings, claude_home, installed_folders
    from .folder import LoadContext

    cwd = Path(host.config.cwd or Path.cwd()).resolve()
    config = ClaudeSettings.from_settings(host.config.settings, cwd)
    ctx = LoadContext(cwd, agent_dir(), claude_home(), config)

    def settings_hooks() -> None:
        for source in config.settings_sources:
            _load_settings_hooks(host, source, ctx)

    loaded = load_dialect(host, ctx, _installed_finder(host, installed_folders), settings_hooks)
    _register_skill_access(host, loaded.values())


def _installed_finder(host: Any, installed_folders: Any) -> Any:
    """Claude Code's installed plugins, enabled by the settings files the session reads: the
    user's (unless ``setting_sources`` leaves ``user`` out), and the project's only when the
    project is trusted and read (a repository's ``enabledPlugins`` must not turn one on):
    ``settings.json`` with the ``project`` source, ``settings.local.json`` with ``local``."""
    from .adapter import project_scopes

    user = bool(getattr(host.config, "user_files", True))
    scopes = project_scopes(host) if host.config.trusted else frozenset()
    if user and scopes == {"project", "local"}:
        return installed_folders
    from .discovery import SETTINGS_SOURCES, settings_file

    chosen = [s for s in SETTINGS_SOURCES if (s == "user" and user) or s in scopes]

    def enabled_by_chosen(home: Path, cwd: Path) -> Any:
        return installed_folders(home, cwd,
                                 enabled_files=[settings_file(s, home, cwd) for s in chosen])

    return enabled_by_chosen


def _register_skill_access(host: Any, folders: Any) -> None:
    """The ``skill`` tool and reads of the frozen copies, when a loaded folder has skills
    (:mod:`.skills`)."""
    roots = [root for folder in folders if folder.skills
             for root in (folder.root, folder.resource_root) if root is not None]
    if not roots:
        return
    from .skills import PluginFilesAccess

    host.register_plugin(PluginFilesAccess(roots), "claude/skills", source="claude",
                         contributes={"tools": ["skill"]})


def _nothing_to_load(host: Any) -> bool:
    """True when no setting names a Claude folder and neither ``~/.claude`` nor the project's
    ``.claude`` holds skills, commands or agents (checked with the standard library only)."""
    import os

    compat = host.config.settings.get("compat")
    claude = compat.get("claude") if isinstance(compat, dict) else None
    if compat is not None and (not isinstance(compat, dict) or claude is not None):
        return False  # configured (or misconfigured: the full path reports it)
    home = Path(os.path.expanduser(os.environ.get("CLAUDE_CONFIG_DIR") or "~/.claude"))
    cwd = Path(host.config.cwd or os.getcwd())
    return not any((folder / part).is_dir() for folder in (home, cwd / ".claude")
                   for part in ("skills", "commands", "agents")) and not any(
        (folder / "CLAUDE.md").is_file() for folder in (home, cwd / ".claude"))


def _load_settings_hooks(host: Any, source: str, ctx: LoadContext) -> None:
    """The ``hooks`` of one Claude settings file as plugin ``claude:settings-<source>``; its
    root is the folder holding the file (``~/.claude`` or the project's ``.claude``). A
    project file's hooks wait for the project's trust (``host.config.trusted``)."""
    import os

    from .adapter import project_scopes, register_hooks, report, withhold_hooks
    from .discovery import settings_file
    from .manifest import ManifestError, read_json

    in_project = source != "user"
    if in_project and source not in project_scopes(host):
        return
    if not in_project and not getattr(host.config, "user_files", True):
        return
    path = settings_file(source, ctx.home, ctx.cwd)
    name = f"claude:settings-{source}"
    if not os.path.lexists(path) or path.is_dir():
        return
    try:
        data = read_json(path, None if source == "user" else ctx.cwd)
    except ManifestError as exc:
        report(host, ctx, name, str(exc))
        return
    if not isinstance(data, dict):
        report(host, ctx, name, f"{path}: a settings file must be a JSON object")
        return
    hooks = data.get("hooks")
    if hooks is None or data.get("disableAllHooks") is True:
        return
    from .hooks import parse_hooks

    config, diagnostics = parse_hooks(hooks, f"{path}: hooks")
    if in_project and not host.config.trusted:
        withhold_hooks(host, config, str(path))
        return
    register_hooks(host, ctx, name, config, diagnostics, root=path.parent,
                   data_key=f"settings-{source}", where=str(path))
