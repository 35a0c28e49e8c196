"""Entry-point plugin ``claude``: finds Claude Code plugin folders and registers each one.

Every folder becomes one plugin named ``claude:<name>`` (source ``claude``) whose record says
what it contributes; a folder that cannot load is listed as failed with the reason, and the
others load anyway. See ``docs/claude-plugins.md`` for where folders come from and the settings.
Only folder discovery happens here; the work is in :mod:`.folder` and the hook engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from zpi_host import hookimpl

if TYPE_CHECKING:
    from .discovery import FolderRef
    from .folder import LoadContext, LoadedFolder


@hookimpl
def zpi_load_plugins(host: Any) -> None:
    """Register the folders of ``compat.claude.plugin_dirs`` (``--plugin-dir``), Claude Code's
    installed plugins (``compat.claude.use_installed``), ``~/.claude`` and the project's
    ``.claude``, and the hooks of the Claude settings files named in
    ``compat.claude.settings_sources``."""
    if _nothing_to_load(host):
        return  # the common case costs a few stat calls, not the folder machinery's imports
    from zpi_host.settings import agent_dir

    from .discovery import (
        ClaudeSettings,
        claude_home,
        configured_folders,
        installed_folders,
    )
    from .folder import LoadContext

    cwd = Path(host.config.cwd or Path.cwd()).resolve()
    config = ClaudeSettings.from_settings(host.config.settings, cwd)
    home = claude_home()
    ctx = LoadContext(cwd, agent_dir(), home, config)
    loaded: dict[str, LoadedFolder] = {}
    for ref in configured_folders(config):
        _load(host, ref, ctx, loaded, installed=False)
    if config.use_installed:
        refs, broken = installed_folders(home, cwd)
        for item in broken:
            _report(host, item.name, item.reason)
        for ref in refs:
            _load(host, ref, ctx, loaded, installed=True)
    _load_claude_dirs(host, ctx)
    for source in config.settings_sources:
        _load_settings_hooks(host, source, ctx)
    for folder in loaded.values():
        for dependency in folder.dependencies:
            record = host.get(f"claude:{dependency}")
            if record is None or record.status != "ok":
                folder.warnings.append(f"depends on plugin {dependency!r}, which is not "
                                       "loaded; add its folder with --plugin-dir")


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
                   for part in ("skills", "commands", "agents"))


def _report(host: Any, name: str, reason: str, path: Path | None = None) -> None:
    """List a failure without replacing the record of a plugin that loaded under that name."""
    record = host.get(name)
    if record is not None and record.status == "ok":
        name = f"{name} ({path})" if path is not None else f"{name} (failed copy)"
    host.report_failed_plugin(name, reason, source="claude")


def _guess_name(ref: FolderRef) -> str:
    """The name a broken folder is listed under: its manifest's name if that much reads."""
    import json

    try:
        data = json.loads((ref.path / ".claude-plugin" / "plugin.json").read_text("utf-8"))
        if isinstance(data, dict) and isinstance(data.get("name"), str) and data["name"]:
            return str(data["name"])
    except (OSError, ValueError):
        pass
    return ref.plugin_id.split("@", 1)[0] if ref.plugin_id else ref.path.name


def _load(host: Any, ref: FolderRef, ctx: LoadContext, loaded: dict[str, LoadedFolder], *,
          installed: bool) -> None:
    from zpi_host.errors import PluginLoadError

    from .folder import load_plugin_folder

    try:
        folder = load_plugin_folder(ref, ctx)
    except PluginLoadError:
        raise
    except Exception as exc:  # one broken folder must not stop the others
        _report(host, f"claude:{_guess_name(ref)}", _reason(exc), ref.path)
        return
    first = loaded.get(folder.name)
    if first is not None:
        if installed:
            first.warnings.append(f"the installed plugin of the same name at {ref.path} is not "
                                  "loaded: this folder overrides it")
            return
        _report(host, folder.plugin_name, f"{ref.path}: another plugin named {folder.name!r} "
                f"was loaded first from {first.source}; rename one (the manifest's \"name\")",
                ref.path)
        return
    if _register(host, folder, ctx):
        loaded[folder.name] = folder


def _reason(exc: Exception) -> str:
    from zpi_host.errors import ZpiError

    return str(exc) if isinstance(exc, ZpiError) else f"{type(exc).__name__}: {exc}"


def _register(host: Any, folder: LoadedFolder, ctx: LoadContext) -> bool:
    from zpi_host.errors import PluginLoadError

    from .folder import ClaudeFolderPlugin, make_plugin

    try:
        plugin, events = make_plugin(folder, ctx.config.hook_timeout)
    except ModuleNotFoundError as exc:
        if exc.name != f"{__package__}.hooks":
            raise
        folder.warnings.append("its hooks are not run: the hook engine "
                               f"({__package__}.hooks) is not installed")
        plugin, events = ClaudeFolderPlugin(folder), []
    except PluginLoadError:
        raise
    except Exception as exc:
        _report(host, folder.plugin_name, f"{folder.source}: hooks: {_reason(exc)}",
                folder.source)
        return False
    record = host.register_plugin(plugin, folder.plugin_name, source="claude",
                                  version=folder.version,
                                  contributes=folder.contributes(events))
    return bool(record.status == "ok")


def _load_claude_dirs(host: Any, ctx: LoadContext) -> None:
    """``claude:user`` (``~/.claude``) then ``claude:project`` (``.claude``): user first, as
    Claude Code lets personal skills win over project ones."""
    from .folder import ClaudeFolderPlugin, load_claude_dir

    taken: set[str] = set()
    project = ctx.cwd / ".claude"
    for kind, path in (("user", ctx.home), ("project", project)):
        if kind == "project" and path.resolve() == ctx.home.resolve():
            continue  # the project is the home folder: already loaded as the user folder
        try:
            folder = load_claude_dir(kind, path, ctx, taken)
        except OSError as exc:
            _report(host, f"claude:{kind}", f"{path}: {exc}")
            continue
        if folder is None:
            continue
        host.register_plugin(ClaudeFolderPlugin(folder), folder.plugin_name, source="claude",
                             contributes=folder.contributes())
        taken.update(command.name for command in folder.commands)


def _load_settings_hooks(host: Any, source: str, ctx: LoadContext) -> None:
    """The ``hooks`` of one Claude settings file as plugin ``claude:settings-<source>``; its
    root is the folder holding the file (``~/.claude`` or the project's ``.claude``)."""
    from .discovery import settings_file
    from .manifest import ManifestError, read_json

    path = settings_file(source, ctx.home, ctx.cwd)
    name = f"claude:settings-{source}"
    if not path.is_file():
        return
    try:
        data = read_json(path)
    except ManifestError as exc:
        _report(host, name, str(exc))
        return
    if not isinstance(data, dict):
        _report(host, name, f"{path}: a settings file must be a JSON object")
        return
    hooks = data.get("hooks")
    if hooks is None or data.get("disableAllHooks") is True:
        return
    try:
        from .hooks import ClaudeHooks, parse_hooks

        config, diagnostics = parse_hooks(hooks, f"{path}: hooks")
        timeout = ctx.config.hook_timeout
        plugin = ClaudeHooks(name=name, root=path.parent, hooks=config,
                             data_dir=ctx.data_dir(f"settings-{source}"), env={},
                             substitute=lambda text: text,
                             **({} if timeout is None else {"timeout_s": timeout}))
        events = list(plugin.hook_events())
    except Exception as exc:
        _report(host, name, f"{path}: hooks: {_reason(exc)}")
        return
    if not hasattr(plugin, "warnings"):
        plugin.warnings = list(diagnostics)  # type: ignore[attr-defined]
    host.register_plugin(plugin, name, source="claude", contributes={"hooks": events})
