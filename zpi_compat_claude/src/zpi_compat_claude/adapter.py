"""Registering what a dialect's discovery found: plugin folders, personal folders, hook-only
plugins. Shared by the ``claude`` entry point and the ``zcode`` one (``zpi_compat_zcode``);
everything dialect-specific comes from ``ctx.dialect``.

A folder that cannot load is listed as failed (``<dialect>:<name>``) with the reason and the
others load anyway; the first folder holding a name keeps it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .discovery import Broken, FolderRef
    from .folder import LoadContext, LoadedFolder

#: a dialect's installed plugins: (home, cwd) -> (folders to load, entries that are broken)
InstalledFinder = Callable[[Path, Path], "tuple[Sequence[FolderRef], Sequence[Broken]]"]


def load_dialect(host: Any, ctx: LoadContext, installed: InstalledFinder,
                 own_sources: Callable[[], None]) -> dict[str, LoadedFolder]:
    """The load order every dialect shares: the configured folders
    (``compat.<dialect>.plugin_dirs``), the installed plugins when
    ``compat.<dialect>.use_installed`` is set, the personal folders, then the dialect's own
    sources (``own_sources``: Claude's settings-file hooks, ZCode's config-file hooks), and
    last the dependency check over the folders loaded. Returns those folders by name."""
    from .discovery import configured_folders

    loaded: dict[str, LoadedFolder] = {}
    load_folders(host, configured_folders(ctx.config, ctx.dialect.name), ctx, loaded,
                 installed=False)
    if ctx.config.use_installed:
        refs, broken = installed(ctx.home, ctx.cwd)
        for item in broken:
            report(host, ctx, item.name, item.reason)
        load_folders(host, refs, ctx, loaded, installed=True)
    load_personal_dirs(host, ctx)
    own_sources()
    check_dependencies(host, loaded)
    return loaded


def report(host: Any, ctx: LoadContext, name: str, reason: str,
           path: Path | None = None) -> None:
    """List a failure without replacing the record of a plugin that loaded under that name."""
    record = host.get(name)
    if record is not None and record.status == "ok":
        name = f"{name} ({path})" if path is not None else f"{name} (failed copy)"
    host.report_failed_plugin(name, reason, source=ctx.dialect.name)


def reason_of(exc: Exception) -> str:
    from zpi_host.errors import ZpiError

    return str(exc) if isinstance(exc, ZpiError) else f"{type(exc).__name__}: {exc}"


def _guess_name(ref: FolderRef, ctx: LoadContext) -> str:
    """The name a broken folder is listed under: its manifest's name if that much reads."""
    from .manifest import ManifestError, manifest_file, read_json

    try:
        path = manifest_file(ref.path, ctx.dialect)
        data = read_json(path, ref.path) if path is not None else None
        if isinstance(data, dict) and isinstance(data.get("name"), str) and data["name"]:
            return str(data["name"])
    except (OSError, ManifestError):
        pass
    return ref.plugin_id.split("@", 1)[0] if ref.plugin_id else ref.path.name


def load_folders(host: Any, refs: Iterable[FolderRef], ctx: LoadContext,
                 loaded: dict[str, LoadedFolder], *, installed: bool) -> None:
    """Load and register each folder of ``refs`` (``loaded``: name -> folder, updated)."""
    for ref in refs:
        _load(host, ref, ctx, loaded, installed=installed)


def _load(host: Any, ref: FolderRef, ctx: LoadContext, loaded: dict[str, LoadedFolder], *,
          installed: bool) -> None:
    from zpi_host.errors import PluginLoadError

    from .folder import load_plugin_folder

    try:
        folder = load_plugin_folder(ref, ctx)
    except PluginLoadError:
        raise
    except Exception as exc:  # one broken folder must not stop the others
        report(host, ctx, ctx.dialect.plugin(_guess_name(ref, ctx)), reason_of(exc), ref.path)
        return
    first = loaded.get(folder.name)
    if first is not None:
        if installed:
            first.warnings.append(f"the installed plugin of the same name at {ref.path} is not "
                                  "loaded: this folder overrides it")
            return
        report(host, ctx, folder.plugin_name, f"{ref.path}: another plugin named "
               f"{folder.name!r} was loaded first from {first.source}; rename one (the "
               "manifest's \"name\")", ref.path)
        return
    if _register(host, folder, ctx):
        loaded[folder.name] = folder


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
        report(host, ctx, folder.plugin_name, f"{folder.source}: hooks: {reason_of(exc)}",
               folder.source)
        return False
    record = host.register_plugin(plugin, folder.plugin_name, source=ctx.dialect.name,
                                  version=folder.version,
                                  contributes=folder.contributes(events))
    if record.status == "ok" and folder.mcp_servers:
        add_mcp_servers(host, folder)
    return bool(record.status == "ok")


def add_mcp_servers(host: Any, folder: LoadedFolder) -> None:
    """The folder's MCP servers join the session's sources (:data:`MCP_SOURCES`), below every
    configured server of the same name, with ``${CLAUDE_PLUGIN_ROOT}`` (and the dialect's
    twins) set and the plugin's folder as their working directory."""
    from zpi_host.settings.mcp_sources import MCP_SOURCES

    gathered = host.config.settings.get(MCP_SOURCES)
    if not isinstance(gathered, dict) or not isinstance(gathered.get("sources"), list) or \
            gathered.get("strict"):
        return
    variables = {key: value for key, value in folder.variables(sensitive=True).items()
                 if isinstance(value, str)}
    sources = gathered["sources"]
    at = sum(1 for source in sources if source.get("scope") == "plugin")
    for where, servers in folder.mcp_servers:
        sources.insert(at, {"scope": "plugin", "origin": f"plugin {folder.name} ({where})",
                            "servers": servers, "variables": variables,
                            "root": str(folder.root)})
        at += 1


def check_dependencies(host: Any, loaded: Mapping[str, LoadedFolder]) -> None:
    """A warning on each loaded folder whose manifest depends on a plugin that is not loaded."""
    for folder in loaded.values():
        for dependency in folder.dependencies:
            record = host.get(folder.dialect.plugin(dependency))
            if record is None or record.status != "ok":
                folder.warnings.append(f"depends on plugin {dependency!r}, which is not "
                                       "loaded; add its folder with --plugin-dir")


def load_personal_dirs(host: Any, ctx: LoadContext) -> None:
    """The dialect's personal folders in order (``claude:user`` for ``~/.claude``, then
    ``claude:project``): the first to define a command keeps it, as personal skills and
    commands win over project ones."""
    from .folder import ClaudeFolderPlugin, load_claude_dir, personal_dir_path

    taken: dict[str, str] = {}
    seen: set[Path] = set()
    for entry in ctx.dialect.personal_dirs:
        if not project_allowed(host, entry.base):
            continue
        path = personal_dir_path(entry, ctx)
        if path.resolve() in seen:
            continue  # the project is the home folder: already loaded as the user folder
        seen.add(path.resolve())
        name = ctx.dialect.plugin(entry.kind)
        try:
            folder = load_claude_dir(entry.kind, path, ctx, taken, entry.parts,
                                     confine=ctx.cwd if entry.base == "." else None)
        except OSError as exc:
            report(host, ctx, name, f"{path}: {exc}")
            continue
        if folder is None:
            continue
        host.register_plugin(ClaudeFolderPlugin(folder), folder.plugin_name,
                             source=ctx.dialect.name, contributes=folder.contributes())
        taken.update((command.name, entry.label) for command in folder.commands)


def withhold_hooks(host: Any, config: Any, where: str) -> None:
    """The project is not trusted: list each command of ``config`` (a parsed ``HookConfig``)
    as held back (``host.withhold``) instead of registering a plugin that would run it."""
    items = []
    for event, groups in config.events.items():
        for group in groups:
            for handler in group.handlers:
                argv = " ".join(" ".join([handler.command, *(handler.args or ())]).split())
                shown = argv if len(argv) <= 120 else argv[:119] + "…"
                items.append(f"{event} hook `{shown}` (from {where})")
    host.withhold(items)


def project_allowed(host: Any, base: str) -> bool:
    """Whether a personal folder of ``base`` (``.``: the project's, ``~``: the user's) may be
    read at all: not when the session reads no files of that source (the SDK's
    ``setting_sources`` without ``project``, or without ``user``)."""
    if base == ".":
        return "project" in project_scopes(host)
    return bool(getattr(host.config, "user_files", True))


def project_scopes(host: Any) -> frozenset[str]:
    """The project's settings scopes the session reads (``project``: its folders and
    ``settings.json``; ``local``: ``settings.local.json`` alone), as the SDK's
    ``setting_sources`` name them."""
    scopes = getattr(host.config, "project_scopes", None)
    if scopes is not None:
        return frozenset(scopes)
    return frozenset(("project", "local") if getattr(host.config, "project_files", True)
                     else ())


def register_hooks(host: Any, ctx: LoadContext, name: str, config: Any,
                   diagnostics: Sequence[str], *, root: Path, data_key: str, where: str,
                   extra: Mapping[str, list[str]] | None = None) -> None:
    """A plugin made only of hooks (Claude's settings files, ZCode's config files):
    ``config`` is the parsed ``HookConfig``, ``where`` names its files in a failure, ``extra``
    joins what ``--list-plugins`` shows it contributes."""
    try:
        from .hooks import ClaudeHooks

        timeout = ctx.config.hook_timeout
        plugin = ClaudeHooks(name=name, root=root, hooks=config,
                             data_dir=ctx.data_dir(data_key), env={},
                             substitute=lambda text: text, dialect=ctx.dialect,
                             **({} if timeout is None else {"timeout_s": timeout}))
        events = list(plugin.hook_events())
    except Exception as exc:
        report(host, ctx, name, f"{where}: hooks: {reason_of(exc)}")
        return
    if not hasattr(plugin, "warnings"):
        plugin.warnings = list(diagnostics)  # type: ignore[attr-defined]
    contributes = {kind: names for kind, names in {"hooks": events, **(extra or {})}.items()
                   if names}
    host.register_plugin(plugin, name, source=ctx.dialect.name, contributes=contributes)
