"""Where each component sits in a plugin folder, and how it becomes what the kernel uses.

Component paths are checked against the live folder (:class:`ComponentPaths`), then everything
is read from the snapshot: skills and agents are laid out for the ResourceLoader
(:func:`build_layout`), command files become handler commands (:func:`build_commands`), hook
files are read for the hook engine, MCP and LSP servers are recorded as unsupported, and
userConfig values are resolved. Frontmatter is parsed through a cache (:class:`MarkdownCache`),
so an unchanged folder costs no YAML parsing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from zpi_host.errors import ZpiError
from zpi_host.resources import Command
from zpi_host.support.digests import sha256

from .agent_text import repaired_agent_text
from .commands import CommandHandler, Value, substitute
from .dialect import CLAUDE, Dialect
from .discovery import ClaudeSettings, FolderRef, claude_options
from .freeze import Snapshot, write_json_atomic
from .manifest import (
    Manifest,
    ManifestError,
    UserOption,
    contained,
    read_json,
    resolve_component,
)
from .records import record

#: Agent frontmatter fields Claude Code ignores for plugin agents.
IGNORED_AGENT_FIELDS = ("hooks", "mcpServers", "permissionMode")


class LoadingFolder(Protocol):
    """What the builders read of the folder being loaded, and the ``agents`` they fill in: a
    :class:`.folder.LoadedFolder`, named by shape since :mod:`.folder` imports this module."""

    agents: tuple[str, ...]

    @property
    def namespace(self) -> str | None: ...
    @property
    def plugin_name(self) -> str: ...
    @property
    def dialect(self) -> Dialect: ...
    @property
    def warnings(self) -> list[str]: ...


class OptionSources(Protocol):
    """Where :func:`resolve_options` finds userConfig values (a :class:`.folder.LoadContext`)."""

    @property
    def home(self) -> Path: ...
    @property
    def config(self) -> ClaudeSettings: ...
    @property
    def dialect(self) -> Dialect: ...


class FolderError(ZpiError):
    """A plugin folder that cannot be loaded; the message is the reason ``--list-plugins``
    shows."""


#: the largest parsed-frontmatter cache read back (it is the host's own file, in the agent dir)
CACHE_LIMIT = 64 * 1024 * 1024


@record
class Parsed:
    metadata: Mapping[str, Any]
    body: str
    problem: str | None = None


class MarkdownCache:
    """Parsed frontmatter of Markdown files kept in a JSON file and keyed by each file's
    (size, mtime, inode, where it leads, its confine): loading plugins (and
    ``--list-plugins``) parses YAML only for files that changed since the last load."""

    def __init__(self, path: Path | None, confine: Path | None = None) -> None:
        self.path = path
        #: what the files parsed may link within (:func:`zpi_host.fs.shipped.read_shipped`)
        self.confine = confine
        self._entries: dict[str, Any] = {}
        self._dirty = False
        if path is not None:
            try:
                # the host's own cache (bodies of every command): bounded, but not as tightly
                data = read_json(path, limit=CACHE_LIMIT) if path.exists() else {}
            except ManifestError:
                data = {}
            if isinstance(data, dict):
                self._entries = data

    def parse(self, file: Path) -> Parsed:
        key = str(file)
        try:
            info = file.stat()
        except OSError as exc:
            return Parsed({}, "", f"cannot read the file: {exc.strerror or exc}")
        # where it leads and what it may link within are part of it: a file read under other
        # rules (another confine, or before links out of the project were refused) is read
        # again, never served from the cache
        signature = [info.st_size, info.st_mtime_ns, info.st_ino, os.path.realpath(file),
                     str(self.confine)]
        entry = self._entries.get(key)
        if isinstance(entry, dict) and entry.get("sig") == signature:
            return Parsed(entry.get("meta") or {}, entry.get("body") or "", entry.get("problem"))
        from zpi_host.resources.frontmatter import FrontmatterError, read_frontmatter

        try:
            metadata, body = read_frontmatter(file, self.confine)
            parsed = Parsed(_plain(metadata), body)
        except FrontmatterError as exc:  # the problem without the path: callers name the file
            where = f"line {exc.line}: " if exc.line is not None else ""
            parsed = Parsed({}, "", where + exc.problem)
        self._entries[key] = {"sig": signature, "meta": parsed.metadata, "body": parsed.body,
                              "problem": parsed.problem}
        self._dirty = True
        return parsed

    def save(self, warnings: list[str]) -> None:
        if self.path is None or not self._dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_json_atomic(self.path, self._entries)
        except OSError as exc:
            warnings.append(f"{self.path}: cannot write the parse cache ({exc.strerror or exc}); "
                            "Markdown files are parsed again next time")


def _plain(value: Any) -> Any:
    """Frontmatter as JSON-ready data (a YAML date becomes its text), so the cache keeps it."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


@record(frozen=False)
class ComponentPaths:
    """Component locations relative to the plugin root, checked against the live folder (the
    snapshot follows symlinks, so containment can only be judged on the original)."""

    skills: list[str]
    commands: list[str]
    agents: list[str]
    hooks: list[str]

    @classmethod
    def check(cls, live: Path, manifest: Manifest | None, warnings: list[str],
              dialect: Dialect = CLAUDE) -> ComponentPaths:
        where = manifest.path if manifest and manifest.path else live / dialect.manifest_path

        def default(rel: str) -> list[str]:
            path = live / rel
            if not path.exists():
                return []
            if contained(live, path) is None:
                raise FolderError(f"{path} leads outside the plugin folder (it resolves to "
                                  f"{path.resolve()}); plugins may only use their own files")
            return [rel]

        def declared(values: Sequence[str], field: str) -> list[str]:
            rels = []
            for value in values:
                target = resolve_component(live, value, field, dialect, where)
                if not target.exists():
                    warnings.append(f"{where}: {field} path {value!r} does not exist "
                                    "(skipped)")
                    continue
                rels.append(target.relative_to(live.resolve()).as_posix())
            return rels

        declared_hooks = [h for h in (manifest.hooks if manifest else ()) if isinstance(h, str)]
        return cls(
            skills=default("skills") + declared(manifest.skills if manifest else (), "skills"),
            commands=declared(manifest.commands, "commands")
            if manifest and manifest.commands is not None else default("commands"),
            agents=declared(manifest.agents, "agents")
            if manifest and manifest.agents is not None else default("agents"),
            hooks=default("hooks/hooks.json") + declared(declared_hooks, "hooks"),
        )

    def command_files(self, root: Path, warnings: list[str]
                      ) -> Iterator[tuple[list[str], str]]:
        """``commands/a/b.md`` -> (``["a", "b"]``, relative path); a declared file by its stem."""
        for rel in self.commands:
            path = root / rel
            if path.is_file():
                if path.suffix == ".md":
                    yield [path.stem], rel
                else:
                    warnings.append(f"commands path {rel!r} is not a .md file (skipped)")
                continue
            for file, parts in markdown_below(path):
                yield parts, file.relative_to(root).as_posix()


def markdown_below(folder: Path) -> Iterator[tuple[Path, list[str]]]:
    """``*.md`` below ``folder``, sorted, hidden names skipped, with their name parts."""
    for directory, subdirs, names in os.walk(folder, followlinks=True):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        base = Path(directory)
        prefix = list(base.relative_to(folder).parts)
        for name in sorted(names):
            if name.endswith(".md") and not name.startswith("."):
                yield base / name, [*prefix, name[:-3]]


def skill_dirs(base: Path) -> Iterator[Path]:
    if (base / "SKILL.md").is_file():
        yield base
        return
    if base.is_dir():
        for child in sorted(base.iterdir()):
            if not child.name.startswith(".") and (child / "SKILL.md").is_file():
                yield child


def skill_name(folder: Path, default: str, cache: MarkdownCache, warnings: list[str]) -> str:
    """The name of the skill in ``folder``: its frontmatter ``name`` when it has a valid one
    (Claude Code's rule), else ``default`` (the folder's name), with a warning when the
    frontmatter's cannot be used."""
    from zpi_host.resources.items import skill_name_problem

    declared = cache.parse(folder / "SKILL.md").metadata.get("name")
    if not isinstance(declared, str) or not declared.strip() or declared.strip() == default:
        return default
    problem = skill_name_problem(declared.strip())
    if problem is not None:
        warnings.append(f"skill in {folder}: {problem}; it is named {default!r} after its "
                        "folder")
        return default
    return declared.strip()


def plugin_skills(root: Path, paths: ComponentPaths, name: str, cache: MarkdownCache,
                   warnings: list[str]) -> list[tuple[str, Path]]:
    """(skill name, folder) from ``skills/``, the manifest's skill paths (added to the
    default) and a root ``SKILL.md`` (a one-skill plugin). Skills are found by folder and
    named by their frontmatter ``name`` when it has one, as Claude Code names them (the
    folder's name otherwise); the layout puts each under its name, so the loader, which
    wants the two equal, keeps it."""
    found: dict[str, Path] = {}
    bases = list(dict.fromkeys(root / rel for rel in paths.skills))
    if (root / "SKILL.md").is_file() and root not in bases:
        bases.append(root)
    for base in bases:
        for folder in skill_dirs(base):
            skill = skill_name(folder, folder.name if folder != root else name, cache,
                               warnings)
            if skill in found:
                warnings.append(f"skill {skill!r} in {folder} is ignored: {found[skill]} "
                                "already has that name")
                continue
            found[skill] = folder
    return list(found.items())


def plugin_agents(root: Path, paths: ComponentPaths, folder: LoadingFolder,
                   cache: MarkdownCache) -> list[tuple[str, Path]]:
    """(path below the layout's ``agents/``, file); names (frontmatter ``name`` or stem) go to
    ``folder.agents``; fields plugin agents may not use are warned about."""
    found: dict[str, Path] = {}
    names: list[str] = []
    for rel in paths.agents:
        path = root / rel
        items = [(path.name, path)] if path.is_file() else [
            (file.relative_to(path).as_posix(), file) for file, _ in markdown_below(path)]
        for key, file in items:
            if file.suffix != ".md" or key in found:
                continue
            found[key] = file
            parsed = cache.parse(file)
            if parsed.problem is not None:  # read as Claude Code reads it, as the layout does
                parsed = _repaired(file, parsed)
            name = parsed.metadata.get("name")
            names.append(name if isinstance(name, str) and name else file.stem)
            ignored = [f for f in IGNORED_AGENT_FIELDS if f in parsed.metadata]
            if ignored:
                folder.warnings.append(
                    f"agent {file.relative_to(root).as_posix()}: {', '.join(ignored)} "
                    "ignored (Claude Code does not apply them to plugin agents)")
    folder.agents = tuple(names)
    return list(found.items())


def _repaired(file: Path, parsed: Parsed) -> Parsed:
    """An agent file's frontmatter read leniently (:mod:`.agent_text`), else ``parsed``."""
    from zpi_host.resources.frontmatter import FrontmatterError, parse_frontmatter

    try:
        repaired = repaired_agent_text(file.read_text(encoding="utf-8"))
        if repaired is None:
            return parsed
        metadata, body = parse_frontmatter(repaired, file)
    except (OSError, UnicodeDecodeError, FrontmatterError):
        return parsed
    return Parsed(_plain(metadata), body)


def build_layout(skills: Sequence[tuple[str, Path]], agents: Sequence[tuple[str, Path]],
                 variables: Mapping[str, Value], final: Path, tmp: Path,
                 prefixes: Sequence[str] = ("CLAUDE",)) -> None:
    """A folder laid out as the ResourceLoader expects (``skills/<name>``, ``agents/...``).

    Mostly relative links into the snapshot. A ``SKILL.md`` or agent file that uses
    ``${CLAUDE_PLUGIN_ROOT}``, ``${CLAUDE_SKILL_DIR}``, ``${CLAUDE_PLUGIN_DATA}`` or
    ``${user_config.KEY}`` is written with them filled in, as Claude Code shows it to the model
    (the model reads the file itself); the other files of such a skill stay links, so
    ``reference.md`` still sits next to its ``SKILL.md``.
    """
    for key, target in skills:
        folder = tmp / "skills" / key
        folder.parent.mkdir(parents=True, exist_ok=True)
        text = (target / "SKILL.md").read_text(encoding="utf-8", errors="surrogateescape")
        filled = substitute(text, {**variables,
                                   **{f"{p}_SKILL_DIR": str(target) for p in prefixes}})
        if filled == text:
            os.symlink(os.path.relpath(target, final / "skills"), folder)
            continue
        folder.mkdir()
        for entry in sorted(target.iterdir()):
            if entry.name != "SKILL.md":
                os.symlink(os.path.relpath(entry, final / "skills" / key), folder / entry.name)
        (folder / "SKILL.md").write_text(filled, encoding="utf-8", errors="surrogateescape")
    for key, target in agents:
        link = tmp / "agents" / key
        link.parent.mkdir(parents=True, exist_ok=True)
        text = target.read_text(encoding="utf-8", errors="surrogateescape")
        filled = substitute(text, variables)
        filled = repaired_agent_text(filled) or filled
        if filled == text:
            os.symlink(os.path.relpath(target, (final / "agents" / key).parent), link)
        else:
            link.write_text(filled, encoding="utf-8", errors="surrogateescape")


def layout_path(snapshot: Snapshot, variables: Mapping[str, Value]) -> Path:
    """The layout depends on the snapshot and on the values filled into skill and agent text
    (option values come from settings), so its name carries both."""
    digest = sha256(json.dumps(
        {k: v for k, v in variables.items() if isinstance(v, str)}, sort_keys=True
    ).encode()).hexdigest()[:10]
    return snapshot.sibling(f".{digest}.layout")


def build_commands(files: Sequence[tuple[list[str], Path]], folder: LoadingFolder,
              cache: MarkdownCache, variables: Mapping[str, Value]) -> tuple[Command, ...]:
    """Handler commands from command files; the kernel's field rules apply (a bad file is
    skipped with a warning, as the ResourceLoader would)."""
    from zpi_host.resources.rules import Invalid, build_command

    commands: dict[str, Command] = {}
    for parts, path in files:
        parsed = cache.parse(path)
        if parsed.problem:
            folder.warnings.append(f"command {path}: {parsed.problem} (skipped)")
            continue
        try:
            command = build_command(parts, path, parsed.metadata, parsed.body, folder.namespace,
                                    folder.plugin_name)
        except Invalid as exc:
            folder.warnings.append(f"command {path}: {exc} (skipped)")
            continue
        if command.name in commands:
            folder.warnings.append(f"command {path}: /{command.name} is already defined by "
                                   f"{commands[command.name].path} (skipped)")
            continue
        granted = command.allowed_tools
        if granted:  # ralph-loop's Bash(${CLAUDE_PLUGIN_ROOT}/scripts/setup-ralph-loop.sh:*)
            granted = tuple(substitute(rule, variables) for rule in granted)
        commands[command.name] = attrs.evolve(
            command, template=None, allowed_tools=granted,
            handler=CommandHandler(command.name, parsed.body, dict(variables),
                                   folder.dialect.prefixes))
    return tuple(commands.values())


def hook_sources(live: Path, root: Path, manifest: Manifest | None, paths: ComponentPaths,
                 warnings: list[str]) -> tuple[tuple[Any, str], ...]:
    sources: list[tuple[Any, str]] = []
    seen: set[str] = set()
    for rel in paths.hooks:
        if rel in seen:
            warnings.append(f"{live / rel} is listed twice (hooks/hooks.json loads by default; "
                            "the manifest's hooks should name additional files only)")
            continue
        seen.add(rel)
        try:
            data = read_json(root / rel)
        except ManifestError as exc:
            raise FolderError(str(exc).replace(str(root), str(live))) from exc
        sources.append((data, str(live / rel)))
    for index, entry in enumerate(manifest.hooks if manifest else ()):
        if isinstance(entry, dict):
            sources.append((entry, f"{manifest.path if manifest else live}: hooks[{index}]"))
    return tuple(sources)


def server_names(data: Any, key: str) -> list[str]:
    if isinstance(data, dict) and isinstance(data.get(key), dict):
        data = data[key]
    return sorted(data) if isinstance(data, dict) else []


def mcp_servers(live: Path, root: Path, manifest: Manifest | None, warnings: list[str],
                dialect: Dialect = CLAUDE) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The folder's MCP servers: ``.mcp.json`` and the manifest's ``mcpServers`` (paths or
    inline objects), each with where it was written; ``builtins:mcp`` starts them."""
    entries: list[Any] = list(manifest.mcp_servers if manifest else ())
    if (live / ".mcp.json").is_file() and contained(live, live / ".mcp.json"):
        entries.insert(0, "./.mcp.json")
    found: list[tuple[str, dict[str, Any]]] = []
    for index, entry in enumerate(entries):
        data, where = entry, f"{manifest.path if manifest else live}: mcpServers[{index}]"
        if isinstance(entry, str):
            try:
                target = resolve_component(live, entry, "mcpServers", dialect)
                data = read_json(root / target.relative_to(live.resolve()))
            except ManifestError as exc:
                warnings.append(f"{exc} (its MCP servers are not started)")
                continue
            where = str(live / entry)
        if isinstance(data, dict) and isinstance(data.get("mcpServers"), dict):
            data = data["mcpServers"]
        if not isinstance(data, dict):
            warnings.append(f"{where}: MCP servers must be an object of server name -> config")
            continue
        found.append((where, dict(data)))
    return tuple(found)


def unsupported(live: Path, root: Path, manifest: Manifest | None, warnings: list[str],
                dialect: Dialect = CLAUDE) -> tuple[str, ...]:
    """LSP servers and output styles: recorded, listed, not run."""
    found: list[str] = []
    declared = {"lspServers": manifest.lsp_servers if manifest else ()}
    for field, default, label in (("lspServers", ".lsp.json", "LSP servers"),):
        entries: list[Any] = list(declared[field])
        if (live / default).is_file() and contained(live, live / default):
            entries.insert(0, f"./{default}")
        names: list[str] = []
        for entry in entries:
            data = entry
            if isinstance(entry, str):
                try:
                    target = resolve_component(live, entry, field, dialect)
                    data = read_json(root / target.relative_to(live.resolve()))
                except ManifestError as exc:
                    warnings.append(f"{exc} (the {label} are not supported anyway)")
                    data = None
            names += server_names(data, field)
        if entries:
            found += [f"{field}.{n}" for n in names] or [field]
            warnings.append(f"{label} are not supported by this host (it has no "
                            f"{label.split()[0]} client): {', '.join(names) or 'declared'} "
                            "ignored")
    if manifest and manifest.output_styles:
        found.append("outputStyles")
        warnings.append("outputStyles are not supported by this host (ignored)")
    return tuple(found)


def resolve_options(name: str, manifest: Manifest | None, ref: FolderRef, ctx: OptionSources,
             warnings: list[str]) -> tuple[tuple[UserOption, ...], dict[str, Any]]:
    """userConfig values: settings ``compat.<dialect>.plugins.<name>.options``, then (for a
    plugin Claude Code installed) what Claude stored, then the declared default."""
    options = manifest.user_config if manifest else ()
    key = f"compat.{ctx.dialect.name}.plugins.{name}.options"
    given = dict(ctx.config.plugin_options.get(name, {}))
    stored = claude_options(ctx.home, ref.plugin_id) if ref.plugin_id and options else {}
    known = {option.key for option in options}
    for given_key in given:
        if given_key not in known:
            warnings.append(f"setting {key}.{given_key}: the plugin declares no such "
                            "userConfig option (ignored)")
    values: dict[str, Any] = {}
    problems = []
    for option in options:
        value = given.get(option.key, stored.get(option.key, option.default))
        label = f"option {option.key!r}" + (f" ({option.title})" if option.title else "")
        if value is None:
            if option.required:
                problems.append(f"{label} is required: set {key}.{option.key} in settings")
            continue
        problem = option.problem(value)
        if problem:
            problems.append(f"setting {key}.{option.key} {problem}")
            continue
        values[option.key] = value
    if problems:
        raise FolderError("; ".join(problems))
    return options, values


def skill_dirs_of(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [child for child in sorted(folder.iterdir())
            if not child.name.startswith(".") and (child / "SKILL.md").is_file()]
