"""ResourceLoader: one pass over the agent dir, the project and plugin sources.

Search order decides every collision: the agent dir (``~/.zpi/agent``), then the project's
``.zpi/``, then plugin sources in registration order, then commands plugins built in code; the
first holder of a name keeps it and later ones are reported. A bad file never fails the load;
it becomes a :class:`ResourceDiagnostic` naming the file and the problem.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..fs.shipped import TEXT_LIMIT, ShippedFileError, read_shipped
from ..support.digests import sha256
from .frontmatter import FrontmatterError, read_frontmatter
from .items import AgentDefinition, Command, ContextFile, ResourceDiagnostic, ResourceSource, Skill
from .rules import Invalid, build_agent, build_command, build_skill, check_code_command

#: Per folder, the first of these that exists is its context file.
CONTEXT_FILE_NAMES = ("AGENTS.md", "CLAUDE.md")
#: Claude Code's project-local memory, read in each project folder after its context file
LOCAL_CONTEXT_FILE_NAME = "CLAUDE.local.md"
_LOCAL_KINDS = frozenset({"skills", "commands", "agents"})


def _problem(error: FrontmatterError) -> str:
    return f"line {error.line}: {error.problem}" if error.line is not None else error.problem


class _Scan:
    """One load's results, built aside and swapped in whole, so a refresh never shows a
    half-loaded state to a reader."""

    def __init__(self) -> None:
        self.skills: dict[str, Skill] = {}
        self.commands: dict[str, Command] = {}
        self.agents: dict[str, AgentDefinition] = {}
        self.context: list[ContextFile] = []
        self.diagnostics: list[ResourceDiagnostic] = []
        self.watched: dict[str, None] = {}  # ordered set: files and folders read or looked for

    def watch(self, path: Path) -> None:
        self.watched.setdefault(str(path))

    def report(self, path: Path | None, kind: str, problem: str, origin: str) -> None:
        self.diagnostics.append(ResourceDiagnostic(path, kind, problem, origin))

    def add(self, table: dict[str, Any], item: Any, kind: str) -> None:
        first = table.get(item.name)
        if first is None:
            table[item.name] = item
            return
        holder = (str(first.path) if first.path is not None
                  else f"a {kind} registered in code by {first.origin}")
        self.report(item.path, kind, f"{kind} name {item.name!r} is already taken by {holder}; "
                    "this one is ignored (the first one found wins)", item.origin)


class ResourceLoader:
    """Skills, commands, agent definitions and context files for one working directory.

    Construct, then :meth:`load`; :meth:`refresh` reloads in place, so every holder of the
    loader sees the new state. Accessors return tuples in search order. ``file_origins`` are
    the host's own folders read: ``agent`` (the agent dir), ``project`` (``.zpi`` and the
    context files of the working directory and its parents) and ``local`` (the
    ``CLAUDE.local.md`` files of those folders); plugins' sources always are.
    """

    def __init__(
        self,
        cwd: Path,
        agent_dir: Path,
        sources: Sequence[ResourceSource] = (),
        commands: Sequence[Command] = (),
        file_origins: Collection[str] = ("agent", "project", "local"),
        agents: Sequence[AgentDefinition] = (),
    ) -> None:
        self.cwd = Path(cwd).expanduser().resolve()
        self.agent_dir = Path(agent_dir).expanduser()
        self.file_origins = frozenset(file_origins)
        self.sources = tuple(sources)
        self.registered_commands = tuple(commands)
        #: agent definitions given in code (``create_session(agents=...)``): they come first,
        #: so they win over a file of the same name
        self.registered_agents = tuple(agents)
        #: ``(kind, name) -> bool``: the skills (``skill``) and agent types (``agent``) this
        #: session withholds from the model, set by :meth:`withhold`
        self.withheld: Callable[[str, str], bool] | None = None
        self._scan = _Scan()

    def withhold(self, hides: Callable[[str, str], bool]) -> ResourceLoader:
        """Leave out what ``hides(kind, name)`` says (a skill or an agent type denied to the
        session: permission is disclosure), now and at every reload. Returns self."""
        self.withheld = hides
        self._drop_withheld(self._scan)
        return self

    def hides(self, kind: str, name: str) -> bool:
        """Whether the ``kind`` (``skill``, ``agent``) named ``name`` is withheld."""
        return self.withheld is not None and bool(self.withheld(kind, name))

    def _drop_withheld(self, scan: _Scan) -> None:
        for kind, table in (("skill", scan.skills), ("agent", scan.agents)):
            for name in [n for n in table if self.hides(kind, n)]:
                del table[name]

    # -- loading -------------------------------------------------------------------------------

    def load(self) -> ResourceLoader:
        """Find everything (frontmatter only; skill bodies stay on disk). Never raises for
        file content. Returns self."""
        scan = _Scan()
        for agent in self.registered_agents:
            scan.add(scan.agents, agent, "agent")
        for source in self._file_sources(scan):
            if "skills" in source.kinds:
                self._load_skills(source, scan)
            if "commands" in source.kinds:
                self._load_commands(source, scan)
            if "agents" in source.kinds:
                self._load_agents(source, scan)
        for command in self.registered_commands:
            problem = check_code_command(command)
            if problem:
                origin = getattr(command, "origin", None)
                scan.report(None, "command", problem, origin if isinstance(origin, str) else "?")
            else:
                scan.add(scan.commands, command, "command")
        self._load_context(scan)
        self._drop_withheld(scan)
        self._scan = scan
        return self

    def refresh(self) -> ResourceLoader:
        """Load again in place (same object): picks up added, edited and removed files."""
        return self.load()

    def _file_sources(self, scan: _Scan) -> Iterator[ResourceSource]:
        if "agent" in self.file_origins:
            yield ResourceSource(self.agent_dir, None, _LOCAL_KINDS, "agent")
        if "project" in self.file_origins:
            yield ResourceSource(self.cwd / ".zpi", None, _LOCAL_KINDS, "project",
                                 confine=self.cwd)
        for source in self.sources:
            if isinstance(source, ResourceSource):
                yield source
            else:
                scan.report(None, "source", f"{source!r} is not a ResourceSource", "?")

    def _entries(self, folder: Path, scan: _Scan, kind: str, origin: str) -> list[os.DirEntry[str]]:
        """Visible entries of ``folder`` by name; a missing folder is simply empty."""
        scan.watch(folder)
        try:
            with os.scandir(folder) as iterator:
                return sorted((e for e in iterator if not e.name.startswith(".")),
                              key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            scan.report(folder, kind, f"cannot list the folder: {exc.strerror or exc}", origin)
            return []

    def _markdown_files(
        self, folder: Path, scan: _Scan, kind: str, origin: str
    ) -> Iterator[tuple[Path, list[str]]]:
        """``*.md`` below ``folder`` with their relative parts (``a/b.md`` -> ``["a", "b"]``).

        Symlinked folders are followed; one that leads to a folder already scanned (a loop) is
        skipped with a diagnostic.
        """
        seen: set[str] = set()

        def walk(directory: Path, prefix: list[str]) -> Iterator[tuple[Path, list[str]]]:
            real = os.path.realpath(directory)
            if real in seen:
                scan.report(directory, kind, f"skipped: it leads to {real}, which was already "
                            "scanned (a symlink loop or a second link to the same folder)",
                            origin)
                return
            seen.add(real)
            for entry in self._entries(directory, scan, kind, origin):
                path = Path(entry.path)
                if _is_dir(entry):
                    yield from walk(path, [*prefix, entry.name])
                elif entry.name.lower().endswith(".md") and _is_file(entry):
                    yield path, [*prefix, entry.name[:-3]]

        yield from walk(folder, [])

    def _load_skills(self, source: ResourceSource, scan: _Scan) -> None:
        for entry in self._entries(source.root / "skills", scan, "skill", source.origin):
            if not _is_dir(entry):
                continue
            folder = Path(entry.path)
            scan.watch(folder)
            path = folder / "SKILL.md"
            if not _is_entry(path):
                continue
            scan.watch(path)
            try:
                metadata, _ = read_frontmatter(path, root=source.confine)
                skill = build_skill(folder, path, metadata, source.namespace, source.origin,
                                    name_may_differ=source.skills_named_by_frontmatter)
            except FrontmatterError as exc:
                scan.report(path, "skill", _problem(exc), source.origin)
            except Invalid as exc:
                scan.report(path, "skill", str(exc), source.origin)
            else:
                scan.add(scan.skills, skill, "skill")

    def _load_commands(self, source: ResourceSource, scan: _Scan) -> None:
        folder = source.root / "commands"
        for path, parts in self._markdown_files(folder, scan, "command", source.origin):
            scan.watch(path)
            try:
                metadata, body = read_frontmatter(path, root=source.confine)
                command = build_command(parts, path, metadata, body, source.namespace,
                                        source.origin)
            except FrontmatterError as exc:
                scan.report(path, "command", _problem(exc), source.origin)
            except Invalid as exc:
                scan.report(path, "command", str(exc), source.origin)
            else:
                scan.add(scan.commands, command, "command")

    def _load_agents(self, source: ResourceSource, scan: _Scan) -> None:
        folder = source.root / "agents"
        for path, _ in self._markdown_files(folder, scan, "agent", source.origin):
            scan.watch(path)
            try:
                metadata, body = read_frontmatter(path, root=source.confine)
                agent = build_agent(path, metadata, body, source.namespace, source.origin)
            except FrontmatterError as exc:
                scan.report(path, "agent", _problem(exc), source.origin)
            except Invalid as exc:
                scan.report(path, "agent", str(exc), source.origin)
            else:
                scan.add(scan.agents, agent, "agent")
        for entry in self._entries(folder, scan, "agent", source.origin):
            if not entry.name.lower().endswith(".json") or not _is_file(entry):
                continue
            path = Path(entry.path)
            scan.watch(path)
            try:
                metadata, body = read_json_definition(path, source.confine)
                agent = build_agent(path, metadata, body, source.namespace, source.origin)
            except Invalid as exc:
                scan.report(path, "agent", str(exc), source.origin)
            else:
                scan.add(scan.agents, agent, "agent")

    def _load_context(self, scan: _Scan) -> None:
        """Per folder, the first context file there is, and in the project's folders
        ``CLAUDE.local.md`` after it (origin ``local``), as Claude Code reads its project-local
        memory. A project's (the working directory's and its parents') is a file the folder
        ships: it may link only within that folder; a plugin's within its ``confine``; the
        user's own (agent dir) anywhere. All are read only when regular and at most
        ``TEXT_LIMIT`` bytes."""
        project = "project" in self.file_origins
        local = "local" in self.file_origins
        folders: list[tuple[Path, str, Path | None]] = (
            [(self.agent_dir, "agent", None)] if "agent" in self.file_origins else [])
        if project or local:
            folders += [(f, "project", f) for f in reversed((self.cwd, *self.cwd.parents))]
        folders += [(s.root, s.origin, s.confine) for s in self.sources
                    if isinstance(s, ResourceSource) and "context" in s.kinds]
        seen: set[str] = set()
        for folder, origin, root in folders:
            if origin != "project" or project:
                for name in CONTEXT_FILE_NAMES:
                    scan.watch(folder / name)
                path = next((folder / n for n in CONTEXT_FILE_NAMES if _is_entry(folder / n)),
                            None)
                self._add_context(path, root, origin, scan, seen)
            if origin == "project" and local:
                scan.watch(folder / LOCAL_CONTEXT_FILE_NAME)
                path = folder / LOCAL_CONTEXT_FILE_NAME
                self._add_context(path if _is_entry(path) else None, root, "local", scan, seen)

    def _add_context(self, path: Path | None, root: Path | None, origin: str, scan: _Scan,
                     seen: set[str]) -> None:
        """``path`` (a context file found, or None) and, for Claude's files, its imports."""
        if path is None or os.path.realpath(path) in seen:
            return
        seen.add(os.path.realpath(path))
        text = self._read_context(path, root, origin, scan)
        if text is None:
            return
        scan.context.append(ContextFile(path, text, origin))
        if path.name in ("CLAUDE.md", LOCAL_CONTEXT_FILE_NAME):
            self._load_imports(path, text, root, origin, scan, seen)

    @staticmethod
    def _read_context(path: Path, root: Path | None, origin: str, scan: _Scan) -> str | None:
        """A context file's text, or None (a problem is reported, a missing file is not)."""
        try:
            return read_shipped(path, limit=TEXT_LIMIT, root=root,
                                what="context file").decode("utf-8-sig")
        except FileNotFoundError:
            return None  # a link to nothing, or removed meanwhile
        except ShippedFileError as exc:
            scan.report(path, "context", exc.detail, origin)
        except UnicodeDecodeError as exc:
            scan.report(path, "context", f"not UTF-8 text (invalid byte at offset "
                        f"{exc.start}); save it as UTF-8", origin)
        return None

    def _load_imports(self, path: Path, text: str, root: Path | None, origin: str,
                      scan: _Scan, seen: set[str]) -> None:
        """The ``@path`` imports of a ``CLAUDE.md`` (:mod:`.imports`), each a context file
        after it; a shipped file's imports stay inside its ``root``."""
        from .imports import walk_imports

        def read(target: Path) -> str | None:
            scan.watch(target)
            return self._read_context(target, root, origin, scan)

        for target, body in walk_imports(path, text, read, seen):
            scan.context.append(ContextFile(target, body, origin))

    # -- reading -------------------------------------------------------------------------------

    @property
    def skills(self) -> tuple[Skill, ...]:
        return tuple(self._scan.skills.values())

    @property
    def commands(self) -> tuple[Command, ...]:
        return tuple(self._scan.commands.values())

    @property
    def agents(self) -> tuple[AgentDefinition, ...]:
        return tuple(self._scan.agents.values())

    @property
    def context_files(self) -> tuple[ContextFile, ...]:
        return tuple(self._scan.context)

    @property
    def diagnostics(self) -> tuple[ResourceDiagnostic, ...]:
        return tuple(self._scan.diagnostics)

    def skill(self, name: str) -> Skill | None:
        return self._scan.skills.get(name)

    def command(self, name: str) -> Command | None:
        """By name, with or without the leading ``/``."""
        return self._scan.commands.get(name.removeprefix("/"))

    def agent(self, name: str) -> AgentDefinition | None:
        return self._scan.agents.get(name)

    def skills_prompt(self) -> str:
        """The system-prompt block that lists skills: name, description and the SKILL.md path.

        Bodies are left out on purpose; the model reads a skill with the read tool when a task
        matches, which keeps the prompt small however many skills are installed. Skills marked
        ``disable-model-invocation: true`` are not listed. Empty when there is nothing to list.
        """
        visible = [skill for skill in self._scan.skills.values() if skill.model_invocable]
        if not visible:
            return ""
        lines = [
            "The following skills provide specialised instructions for specific tasks. When a "
            "task matches a skill's description, read its SKILL.md at the location given with "
            "the read tool and follow it; relative paths in a skill are relative to its folder.",
            "",
            "<available_skills>",
        ]
        for skill in visible:
            lines += [
                "  <skill>",
                f"    <name>{_escape(skill.name)}</name>",
                f"    <description>{_escape(skill.description)}</description>",
                f"    <location>{_escape(str(skill.path))}</location>",
                "  </skill>",
            ]
        lines.append("</available_skills>")
        return "\n".join(lines)

    def context_prompt(self) -> str:
        """Context files' text, each under a header naming its path, most general first (so
        the project's own file comes last and is read as the most specific)."""
        parts = [
            f"## {item.path}\n\n{item.text.strip()}"
            for item in self._scan.context if item.text.strip()
        ]
        if not parts:
            return ""
        return ("# Context files\n\nInstructions from context files, from the most general to "
                "the most specific; where they conflict, the later one wins.\n\n"
                + "\n\n".join(parts))

    def fingerprint(self) -> str:
        """A hash of the current (path, mtime_ns, size) of every file and folder the last load
        read or looked for, including missing ones; compare with an earlier value to learn
        whether a reload would see anything different (an edit, a new or removed file)."""
        digest = sha256()
        for path in self._scan.watched:
            try:
                stat = os.stat(path)
            except OSError:
                digest.update(f"{path}\0missing\n".encode(errors="surrogateescape"))
            else:
                digest.update(f"{path}\0{stat.st_mtime_ns}\0{stat.st_size}\n"
                              .encode(errors="surrogateescape"))
        return digest.hexdigest()


def read_json_definition(path: Path, root: Path | None) -> tuple[dict[str, Any], str]:
    """An agent definition in JSON (``agents/NAME.json``): the frontmatter's fields as one
    object, with the system prompt as ``prompt``; (metadata, body) as a Markdown file gives."""
    import json

    try:
        text = read_shipped(path, limit=TEXT_LIMIT, root=root, what="JSON file")
        data = json.loads(text)
    except ShippedFileError as exc:
        raise Invalid(exc.detail) from None
    except OSError as exc:
        raise Invalid(f"cannot read the file: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise Invalid(f"not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise Invalid("an agent definition in JSON must be an object such as "
                      '{"name": "reviewer", "description": "...", "prompt": "..."}')
    prompt = data.pop("prompt", "")
    if not isinstance(prompt, str):
        raise Invalid("prompt must be a string (the agent's system prompt)")
    return data, prompt.strip()


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_file(entry: os.DirEntry[str]) -> bool:
    """Anything but a folder: a FIFO, a device or a link out of the source is then refused
    by the read, and reported, rather than skipped unseen."""
    return not _is_dir(entry)


def _is_entry(path: Path) -> bool:
    """Whether ``path`` is there (a dangling link too) and not a folder."""
    return os.path.lexists(path) and not path.is_dir()


def _escape(text: str) -> str:
    """``html.escape(text, quote=False)`` without importing ``html`` and its entity table
    (every run lists at least the shipped hand-off skill)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
