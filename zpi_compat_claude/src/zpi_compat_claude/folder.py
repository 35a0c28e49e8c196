"""One Claude plugin folder (or ``~/.claude``, or the project's ``.claude``) as one zpi plugin.

:func:`load_plugin_folder` reads the manifest, checks every component path, snapshots the
folder (:mod:`.freeze`) and gathers from the snapshot what the session will use: skills and
agents (through a :class:`FolderSource` the kernel's ResourceLoader reads), commands (kernel
``Command`` objects with a handler, so `` !`cmd` `` and ``@path`` can run), hook configurations
(handed to the hook engine), userConfig values. :class:`ClaudeFolderPlugin` is what gets
registered; when the folder has hooks, :func:`make_plugin` combines it with the hook engine's
``ClaudeHooks`` into one object, because pluggy registers one object per plugin name.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from zpi_host import hookimpl
from zpi_host.resources import Command, ResourceSource
from zpi_host.support.digests import sha256

from .commands import Value, format_option, substitute
from .components import (
    ComponentPaths,
    FolderError,
    MarkdownCache,
    build_commands,
    build_layout,
    hook_sources,
    layout_path,
    markdown_below,
    mcp_servers,
    plugin_agents,
    plugin_skills,
    resolve_options,
    skill_dirs_of,
    skill_name,
    unsupported,
)
from .dialect import CLAUDE, Dialect, PersonalDir
from .discovery import ClaudeSettings, FolderRef
from .freeze import FreezeError, Snapshot, build_once, freeze
from .hookable import Hookable
from .manifest import Manifest, UserOption, folder_name_problem, read_manifest
from .records import field, record

__all__ = ["ClaudeFolderPlugin", "FolderError", "FolderSource", "LoadContext", "LoadedFolder",
           "load_claude_dir", "load_plugin_folder", "make_plugin", "merge_hook_sources"]


@attrs.frozen(kw_only=True, repr=False, eq=False, slots=False)
class FolderSource(ResourceSource):
    """A ResourceSource that names itself (``--list-plugins`` shows sources by name)."""

    name: str = ""


@record
class LoadContext:
    """What loading needs besides the folder: the project, the agent dir, the dialect's home
    (``~/.claude``), the settings, and the dialect itself."""

    cwd: Path
    agent_dir: Path
    home: Path
    config: ClaudeSettings = field(factory=ClaudeSettings)
    dialect: Dialect = CLAUDE

    def cache_dir(self, name: str) -> Path:
        return self.agent_dir / "plugin-cache" / self.dialect.name / name

    def data_dir(self, name: str) -> Path:
        return self.agent_dir / "plugin-data" / self.dialect.name / name


# ------------------------------------------------------------------------------ the folder


@record(frozen=False)
class LoadedFolder:
    """Everything a loaded folder contributes, read from its snapshot."""

    name: str
    source: Path
    namespace: str | None
    #: ``${CLAUDE_PLUGIN_ROOT}``: the frozen copy (None for ``~/.claude`` and ``.claude``)
    root: Path | None = None
    data_dir: Path | None = None
    resource_root: Path | None = None
    resource_kinds: frozenset[str] = frozenset()
    #: what its files may link within: the project, for a folder of the project's own
    #: (``.claude``, ``.zcode``: files its repository ships); None for the user's folders
    #: and for a plugin's snapshot (which holds only the plugin's own files)
    confine: Path | None = None
    skills: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    commands: tuple[Command, ...] = ()
    #: (configuration, where) for each hook source: hooks/hooks.json, manifest paths, inline
    hooks: tuple[tuple[Any, str], ...] = ()
    options: tuple[UserOption, ...] = ()
    option_values: Mapping[str, Any] = field(factory=dict)
    unsupported: tuple[str, ...] = ()
    #: (where written, server name -> config): ``.mcp.json`` and the manifest's mcpServers
    mcp_servers: tuple[tuple[str, dict[str, Any]], ...] = ()
    dependencies: tuple[str, ...] = ()
    version: str | None = None
    manifest: Manifest | None = None
    snapshot: Snapshot | None = None
    warnings: list[str] = field(factory=list)
    dialect: Dialect = CLAUDE
    #: ``name@marketplace`` of an installed plugin (``ZCODE_PLUGIN_ID``; else the name)
    plugin_id: str | None = None

    @property
    def plugin_name(self) -> str:
        return self.dialect.plugin(self.name)

    def qualified(self, name: str) -> str:
        return f"{self.namespace}:{name}" if self.namespace else name

    def ensure_data_dir(self) -> str:
        """``${CLAUDE_PLUGIN_DATA}``, created the first time it is used."""
        assert self.data_dir is not None
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return str(self.data_dir)

    def variables(self, *, sensitive: bool) -> dict[str, Value]:
        """The plugin-level ``${...}`` values. Sensitive options are left out of text the model
        sees (commands); hook commands get them."""
        values: dict[str, Value] = {}
        if self.root is not None:
            values.update(self.dialect.variables("PLUGIN_ROOT", str(self.root)))
        if self.data_dir is not None:
            for prefix in self.dialect.prefixes:
                values[f"{prefix}_PLUGIN_DATA"] = self.ensure_data_dir
        by_key = {option.key: option for option in self.options}
        for key, value in self.option_values.items():
            option = by_key.get(key)
            if option is not None and (sensitive or not option.sensitive):
                values[f"user_config.{key}"] = format_option(value)
        return values

    def contributes(self, hook_events: Sequence[str] = ()) -> dict[str, list[str]]:
        kinds = {
            "skills": [self.qualified(s) for s in self.skills],
            "commands": [c.name for c in self.commands],
            "agents": [self.qualified(a) for a in self.agents],
            "hooks": list(hook_events),
            "mcp servers": sorted({n for _, servers in self.mcp_servers for n in servers}),
            "unsupported": list(self.unsupported),
        }
        return {kind: names for kind, names in kinds.items() if names}


class ClaudeFolderPlugin(Hookable):
    """The registered plugin of one folder: its skills and agents as a resource source, its
    commands as handler commands. Both are fixed when the folder loads (the snapshot), so every
    session assembled from this plugin object sees the same files.

    Public for the hook engine: ``folder`` (the :class:`LoadedFolder`), ``warnings`` (unknown
    manifest fields, skipped files ...; not shown anywhere yet), :meth:`option_env` and
    :meth:`substitute`.
    """

    def __init__(self, folder: LoadedFolder) -> None:
        self.folder = folder
        self.warnings = folder.warnings

    @property
    def plugin_path(self) -> str:
        """The folder this plugin was loaded from (the SDK's ``init`` message shows it)."""
        return str(self.folder.source)

    @hookimpl
    def zpi_register_resources(self) -> list[ResourceSource] | None:
        folder = self.folder
        if folder.resource_root is None or not folder.resource_kinds:
            return None
        return [FolderSource(folder.resource_root, folder.namespace, folder.resource_kinds,
                             name=str(folder.source), confine=folder.confine,
                             skills_named_by_frontmatter=True)]

    @hookimpl
    def zpi_register_commands(self) -> list[Command] | None:
        return list(self.folder.commands) or None

    def option_env(self) -> dict[str, str]:
        """``CLAUDE_PLUGIN_OPTION_<KEY>`` (and the dialect's twin) for every option that has a
        value (sensitive ones included: hook processes need them); for a dialect with
        ``identity_env``, ``<P>_PLUGIN_ID`` and ``<P>_PLUGIN_NAME``."""
        folder = self.folder
        by_key = {option.key: option for option in folder.options}
        env: dict[str, str] = {}
        for key, value in folder.option_values.items():
            if key in by_key:
                suffix = by_key[key].env_name.removeprefix("CLAUDE_")
                env.update(folder.dialect.variables(suffix, format_option(value)))
        if folder.dialect.identity_env:
            env.update(folder.dialect.variables("PLUGIN_ID", folder.plugin_id or folder.name))
            env.update(folder.dialect.variables("PLUGIN_NAME", folder.name))
        return env

    def substitute(self, text: str) -> str:
        """``${CLAUDE_PLUGIN_ROOT}``, ``${CLAUDE_PLUGIN_DATA}`` and ``${user_config.KEY}`` in a
        hook command; session variables (``${CLAUDE_PROJECT_DIR}``) are the hook engine's."""
        return substitute(text, self.folder.variables(sensitive=True))


@functools.cache
def _combined(hooks_class: type) -> type:
    """``ClaudeFolderPlugin`` + the hook engine's mixin: pluggy sees the hook methods of both."""
    return type("ClaudePlugin", (ClaudeFolderPlugin, hooks_class), {})


def make_plugin(folder: LoadedFolder, hook_timeout: float | None = None
                ) -> tuple[object, list[str]]:
    """The object to register for ``folder`` and the hook events it handles. A folder with
    hooks needs ``zpi_compat_claude.hooks``; its diagnostics join the folder's warnings."""
    if not folder.hooks:
        return ClaudeFolderPlugin(folder), []
    from .hooks import ClaudeHooks, parse_hooks

    data, where = merge_hook_sources(folder.hooks)
    config, diagnostics = parse_hooks(data, where, folder.dialect)
    folder.warnings.extend(diagnostics)
    assert folder.root is not None and folder.data_dir is not None
    cls: Any = _combined(ClaudeHooks)
    plugin = cls.__new__(cls)
    ClaudeFolderPlugin.__init__(plugin, folder)
    timeout = {} if hook_timeout is None else {"timeout_s": hook_timeout}
    ClaudeHooks.__init__(plugin, name=folder.plugin_name, root=folder.root, hooks=config,
                         data_dir=folder.data_dir, env=plugin.option_env(),
                         substitute=plugin.substitute, dialect=folder.dialect, **timeout)
    return plugin, list(plugin.hook_events())


def merge_hook_sources(sources: Sequence[tuple[Any, str]]) -> tuple[Any, str]:
    """One hook configuration from several (``hooks/hooks.json`` plus manifest entries): the
    handler groups of each event, in source order. A single source is passed unchanged."""
    if len(sources) == 1:
        return sources[0]
    events: dict[str, list[Any]] = {}
    for data, where in sources:
        table = data.get("hooks") if isinstance(data, dict) and isinstance(
            data.get("hooks"), dict) else data
        if not isinstance(table, dict):
            return data, where  # the engine reports the shape problem
        for event, groups in table.items():
            events.setdefault(event, []).extend(groups if isinstance(groups, list) else [groups])
    return {"hooks": events}, " + ".join(where for _, where in sources)


# ------------------------------------------------------------------------------ loading


def personal_dir_path(entry: PersonalDir, ctx: LoadContext) -> Path:
    """Where a personal folder of the dialect is for this project and user."""
    base = {"~": ctx.home, "~user": Path.home(), ".": ctx.cwd}[entry.base]
    return base / entry.path if entry.path else base


def load_plugin_folder(ref: FolderRef, ctx: LoadContext) -> LoadedFolder:
    """Read and snapshot one plugin folder. Raises FolderError (or ManifestError) with the
    reason it cannot load."""
    live = ref.path
    dialect = ctx.dialect
    if not live.is_dir():
        raise FolderError(f"{live} is not a folder (from {ref.origin}); fix the path")
    warnings: list[str] = []
    manifest = read_manifest(live, warnings, dialect)
    if manifest is not None:
        name = manifest.name
    else:
        name = ref.plugin_id.split("@", 1)[0] if ref.plugin_id else live.resolve().name
        problem = folder_name_problem(name, dialect)
        if problem:
            raise FolderError(f"{live}: {problem}")
    paths = ComponentPaths.check(live, manifest, warnings, dialect)
    options, values = resolve_options(name, manifest, ref, ctx, warnings)
    try:
        snapshot = freeze(live, ctx.cache_dir(name), warnings)
    except FreezeError as exc:
        raise FolderError(str(exc)) from exc
    root = snapshot.root
    folder = LoadedFolder(
        name=name, source=live, namespace=name, root=root, data_dir=ctx.data_dir(name),
        options=options, option_values=values, version=(manifest.version if manifest else None)
        or ref.version or dialect.default_version, manifest=manifest, snapshot=snapshot,
        warnings=warnings, dependencies=manifest.dependencies if manifest else (),
        dialect=dialect, plugin_id=ref.plugin_id,
    )
    cache = MarkdownCache(snapshot.sibling(".index.json"))
    skills = plugin_skills(root, paths, name, cache, warnings)
    agents = plugin_agents(root, paths, folder, cache)
    if skills or agents:
        variables = folder.variables(sensitive=False)
        layout = layout_path(snapshot, variables)
        folder.resource_root = build_once(layout, functools.partial(
            build_layout, skills, agents, variables, layout, prefixes=dialect.prefixes))
        folder.resource_kinds = frozenset(
            kind for kind, items in (("skills", skills), ("agents", agents)) if items)
    folder.skills = tuple(skill for skill, _ in skills)
    files = [(parts, root / rel) for parts, rel in paths.command_files(root, warnings)]
    folder.commands = build_commands(files, folder, cache, folder.variables(sensitive=False))
    folder.hooks = hook_sources(live, root, manifest, paths, warnings)
    folder.unsupported = unsupported(live, root, manifest, warnings, dialect)
    folder.mcp_servers = mcp_servers(live, root, manifest, warnings, dialect)
    cache.save(warnings)
    return folder


def load_claude_dir(kind: str, path: Path, ctx: LoadContext, taken: Mapping[str, str],
                    parts: Sequence[str] = ("skills", "commands", "agents"),
                    confine: Path | None = None) -> LoadedFolder | None:
    """``~/.claude`` (``kind`` ``user``) or the project's ``.claude`` (``project``), or
    another of the dialect's personal folders: the ``parts`` it may hold (skills, agents,
    commands), not namespaced, used in place (they belong to the user, not to a plugin
    someone installed). Commands named in ``taken`` (command -> the earlier folder that has
    it) are skipped. None when the folder has none of them. ``confine``: the project, for a
    folder of the project (its files may not link out of it)."""
    present = [part for part in parts if (path / part).is_dir()
               or (part == "context" and (path / "CLAUDE.md").is_file())]
    if not present:
        return None
    warnings: list[str] = []
    folder = LoadedFolder(name=kind, source=path, namespace=None, warnings=warnings,
                          resource_root=path, dialect=ctx.dialect,
                          resource_kinds=frozenset(present) - {"commands"}, confine=confine)
    folder.agents = tuple(file.stem for file, _ in markdown_below(path / "agents")) \
        if "agents" in present else ()
    digest = sha256(str(path.resolve()).encode(errors="surrogateescape")).hexdigest()
    cache = MarkdownCache(ctx.cache_dir("_dirs") / f"{digest[:16]}.json", confine)
    # named by their frontmatter, as the loader names them (skills_named_by_frontmatter)
    folder.skills = tuple(skill_name(skill, skill.name, cache, warnings)
                          for skill in skill_dirs_of(path / "skills"))
    files: list[tuple[list[str], Path]] = []
    names: set[str] = set()
    nested = ctx.dialect.nested_command_names
    for file, segments in markdown_below(path / "commands") if "commands" in present else ():
        # Claude Code: subfolders organise, they do not rename; ZCode: a/b.md is /a:b
        name_parts = segments if nested else segments[-1:]
        name = ":".join(name_parts)
        if name in names or name in taken:
            warnings.append(f"command {file}: /{name} is already defined "
                            f"in {'this folder' if name in names else taken[name]} (skipped)")
            continue
        names.add(name)
        files.append((name_parts, file))
    folder.commands = build_commands(files, folder, cache, {})
    cache.save(warnings)
    return folder
