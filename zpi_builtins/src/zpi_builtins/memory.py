"""Service ``builtins:memory``: notes kept across sessions, per user and per project.

The files are :mod:`.memory_store`'s. This module is the plugin: the ``memory`` tool (view,
add, replace, remove), a bounded index of the memories in the system prompt
(``zpi_instructions``), and the session's :class:`MemoryService`, which remembers what the
session read of each memory (its fingerprint) so that no change, the tool's or a batch's,
is written over an edit the session never saw. Memory batches (``batch: true``) run at
session end, in :mod:`.memory_batch`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zpi_host import hookimpl
from zpi_host.tools import Tool, ToolArgumentError, ToolContext, ToolMetadata, ToolResult

from .settings import enabled, service_settings

if TYPE_CHECKING:  # the store is imported when the memories are first read
    from zpi_host.contract.decisions import Instruction
    from zpi_host.fs.files import FileFingerprint

    from .memory_store import Memory, MemoryDir, Outcome, Skipped, Update
    from .runtime import BuiltinPluginRuntime

__all__ = ["MEMORY_TOOL", "MemoryService", "memory_dirs", "render_index"]

NAME = "memory"
SERVICE = "memory"

#: shown by ``zpi-host --list-plugins``
contributes = {"tools": [NAME], "instructions": ["memory index"],
               "side requests": ["memory batch (setting batch)"]}

PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["view", "add", "replace", "remove"],
                   "description": "view: list the memories, or show one (with name); add: a "
                                  "new memory; replace: its content and/or description; "
                                  "remove: delete it"},
        "scope": {"type": "string", "enum": ["user", "project"],  # memory_store.SCOPES
                  "description": "user: for every project of this user; project: for this "
                                 "project only (shared with the repository). Required to "
                                 "change a memory; view without it shows both"},
        "name": {"type": "string",
                 "description": "the memory's name: lowercase letters, digits, '-', '_'"},
        "description": {"type": "string",
                        "description": "one line saying what the memory is about (the index "
                                       "in the system prompt shows it)"},
        "content": {"type": "string", "description": "the memory itself (Markdown)"},
    },
    "required": ["action"],
    "additionalProperties": False,
}

DESCRIPTION = """\
Keep notes that outlive this session: facts about the user's preferences (scope user) or \
about this project (scope project) that a later session needs: build and test commands, \
conventions, decisions and their reasons. The system prompt lists every memory by name and \
description; view one before relying on it or changing it. Save what is stable and useful, \
not the state of the current task, and never credentials. A change to a memory that was \
edited on disk since you viewed it is refused: view it again, then redo the change."""


def memory_dirs(agent_dir: Path, cwd: Path) -> dict[str, MemoryDir]:
    from .memory_store import SCOPES, MemoryDir

    return {scope: MemoryDir.of(scope, agent_dir, cwd) for scope in SCOPES}


def no_memory_folder(agent_dir: Path, cwd: Path) -> bool:
    """Whether neither scope's memory folder exists (their last part not followed, as the
    store opens them): then a session has no memory to read, and the store is not imported
    at its start. Anything but "no such file" (a folder that cannot be read) is left to the
    store to report."""
    for folder in (agent_dir / "memory", cwd / ".zpi" / "memory"):
        try:
            os.lstat(os.path.abspath(folder))
        except FileNotFoundError:
            continue
        except OSError:
            return False
        return False
    return True


def load_all(dirs: Mapping[str, MemoryDir]) -> tuple[list[Memory], list[Skipped]]:
    """The memories of every scope (project first: the more specific), and what was left
    out; a directory that cannot be used is one skipped entry."""
    from .memory_store import MemoryPathError, Skipped

    memories: list[Memory] = []
    skipped: list[Skipped] = []
    for scope in ("project", "user"):
        try:
            found, left = dirs[scope].load()
        except (MemoryPathError, OSError) as exc:
            skipped.append(Skipped(scope, str(dirs[scope].path), str(exc)))
            continue
        memories += found
        skipped += left
    return memories, skipped


def _line(memory: Memory) -> str:
    return f"- [{memory.scope}] {memory.name}: {memory.description}"


def render_index(memories: Sequence[Memory], skipped: Sequence[Skipped], *, max_entries: int,
                 max_bytes: int) -> str | None:
    """The memory index of the system prompt: one line per memory, at most ``max_entries``
    lines and ``max_bytes`` bytes (the header and the closing note included), then a note of
    how many were left out. None when there is nothing to list."""
    if not memories and not skipped:
        return None
    head = ("# Memories\nNotes kept from earlier sessions (the `memory` tool views and "
            "changes them). View a memory before relying on it.")
    lines = [head]
    size = len(head.encode())
    room = max_bytes - 120  # what the closing note may need
    shown = 0
    for memory in memories[:max_entries]:
        line = _line(memory)
        if size + 1 + len(line.encode()) > room:
            break
        lines.append(line)
        size += 1 + len(line.encode())
        shown += 1
    notes = []
    if shown < len(memories):
        left = len(memories) - shown
        notes.append(f"{left} more {'memory is' if left == 1 else 'memories are'} not listed "
                     "here")
    if skipped:
        notes.append(f"{len(skipped)} memory {'file' if len(skipped) == 1 else 'files'} could "
                     "not be read")
    if notes:
        lines.append(f"({'; '.join(notes)}: `memory` with action view lists them all.)")
    return "\n".join(lines)


class MemoryService:
    """The memories of one session: where they are, and what the session read of each
    (``known``: the fingerprint it saw, None for "absent"), taken when the session starts and
    kept up to date by every view and change of its own."""

    def __init__(self, runtime: BuiltinPluginRuntime) -> None:
        from zpi_host.settings.manager import agent_dir

        session = runtime.session
        self.runtime = runtime
        self.settings = service_settings(runtime.settings, SERVICE)
        self._where = (Path(session.agent_dir or agent_dir()), Path(session.cwd))
        self._dirs: Mapping[str, MemoryDir] | None = None
        self.known: dict[tuple[str, str], FileFingerprint | None] = {}
        #: the memories as the session knows them (what a batch proposes changes to)
        self.seen: dict[tuple[str, str], Memory] = {}
        self.batch_due = False
        if no_memory_folder(*self._where):  # nothing to read: the store is imported on use
            return
        memories, _ = load_all(self.dirs)
        for memory in memories:
            self.remember(memory)

    @property
    def dirs(self) -> Mapping[str, MemoryDir]:
        """The memory folders (found when first needed: at session start when one exists)."""
        if self._dirs is None:
            self._dirs = memory_dirs(*self._where)
        return self._dirs

    def remember(self, memory: Memory) -> None:
        self.known[memory.key] = memory.fingerprint
        self.seen[memory.key] = memory

    def settle(self, outcome: Outcome) -> None:
        """Take the session's own changes as read (its next change builds on them)."""
        for update, fingerprint in outcome.applied:
            if fingerprint is None:
                self.known[update.key] = None
                self.seen.pop(update.key, None)
                continue
            memory = self.dirs[update.scope].read(update.name)
            if memory is not None and memory.fingerprint.same_content(fingerprint):
                self.remember(memory)

    def view(self, scope: str | None, name: str | None) -> ToolResult:
        scopes = [scope] if scope is not None else ["project", "user"]
        from zpi_host.resources.frontmatter import FrontmatterError

        from .memory_store import MemoryPathError

        if name is None:
            memories, skipped = load_all(self.dirs)
            memories = [m for m in memories if m.scope in scopes]
            skipped = [s for s in skipped if s.scope in scopes]
            for each_memory in memories:
                self.remember(each_memory)
            lines = [_line(m) for m in memories] or ["No memories yet."]
            lines += [f"(not used: {s.scope} {s.file}: {s.reason})" for s in skipped]
            return ToolResult.text("\n".join(lines), details={"count": len(memories)})
        found: list[Memory] = []
        for each in scopes:
            try:
                memory = self.dirs[each].read(name)
            except (MemoryPathError, FrontmatterError, OSError) as exc:
                return ToolResult.error(f"cannot read {each} memory {name!r}: {exc}")
            if memory is None:
                self.known[(each, name)] = None
                continue
            self.remember(memory)
            found.append(memory)
        if not found:
            where = f"{scope} memory" if scope else "memory"
            return ToolResult.error(f"there is no {where} named {name!r}; view without a name "
                                    "lists them")
        return ToolResult.text("\n\n".join(
            f"[{m.scope}] {m.name}: {m.description}\n{m.path}\n\n{m.content}" for m in found))

    def change(self, update: Update) -> ToolResult:
        from zpi_host.fs.files import FileCommitError

        from .memory_store import MemoryPathError, apply_updates

        try:
            outcome = apply_updates(self.dirs, [update], self.known)
        except (MemoryPathError, FileCommitError) as exc:
            return ToolResult.error(f"the memory was not changed: {exc}")
        self.settle(outcome)
        if outcome.refused:
            _, reason = outcome.refused[0]
            return ToolResult.error(f"refused: {reason}")
        past = {"add": "added", "replace": "replaced", "remove": "removed"}[update.action]
        return ToolResult.text(f"{update.scope} memory {update.name!r} {past} "
                               f"({self.dirs[update.scope].file(update.name)})",
                               details={"action": update.action, "scope": update.scope,
                                        "name": update.name})

    async def aclose(self) -> None:
        """At session end, the memory batch when one is due."""
        if self.batch_due:
            self.batch_due = False
            from .memory_batch import run_batch

            await run_batch(self)


def parse_arguments(arguments: Mapping[str, Any]) -> tuple[str | None, str | None] | Update:
    """``(scope, name)`` for a view, an :class:`Update` for a change; ToolArgumentError
    names what does not fit."""
    from .memory_store import MemoryInputError, Update, check_name, check_scope

    if not isinstance(arguments, Mapping):
        raise ToolArgumentError(NAME, None, "expected an object")
    extra = set(arguments) - set(PARAMETERS["properties"])
    if extra:
        raise ToolArgumentError(NAME, None, f"unknown argument(s) {', '.join(sorted(extra))}")
    try:
        if arguments.get("action") != "view":
            return Update.parse(arguments)
        scope, name = arguments.get("scope"), arguments.get("name")
        return (None if scope is None else check_scope(scope),
                None if name is None else check_name(name))
    except MemoryInputError as exc:
        raise ToolArgumentError(NAME, None, str(exc)) from exc


async def run_memory_tool(request: tuple[str | None, str | None] | Update, ctx: ToolContext
                          ) -> ToolResult:
    import anyio

    from .memory_store import Update
    from .runtime import runtime_for

    if ctx.session is None:
        return ToolResult.error("the memory tool needs a session")
    service = runtime_for(ctx.session).service(SERVICE, MemoryService)
    if isinstance(request, Update):  # the lock may be held by another process's batch
        return await anyio.to_thread.run_sync(service.change, request)
    return service.view(*request)


def only_views(arguments: Mapping[str, Any]) -> bool:
    """A ``view`` changes nothing: plan mode runs it and ask mode does not ask."""
    return arguments.get("action") == "view"


MEMORY_TOOL = Tool(name=NAME, description=DESCRIPTION, parameters=PARAMETERS,
                   execute=run_memory_tool, prepare=parse_arguments,
                   metadata=ToolMetadata(read_only=False, concurrency_safe=False),
                   read_only_when=only_views)


@hookimpl
def zpi_register_tools(cwd: Path, settings: Mapping[str, Any]) -> list[Tool] | None:
    return [MEMORY_TOOL] if enabled(settings, SERVICE) else None


@hookimpl
def zpi_instructions(cwd: Path, settings: Mapping[str, Any], resources: Any
                     ) -> Instruction | None:
    if not enabled(settings, SERVICE):
        return None
    from zpi_host.contract.decisions import Instruction
    from zpi_host.settings.manager import agent_dir

    own = service_settings(settings, SERVICE)
    agent = getattr(resources, "agent_dir", None) or agent_dir()
    if no_memory_folder(Path(agent), Path(cwd)):
        return None  # what an empty index renders
    memories, skipped = load_all(memory_dirs(Path(agent), Path(cwd)))
    text = render_index(memories, skipped, max_entries=own["index_max_entries"],
                        max_bytes=own["index_max_bytes"])
    return None if text is None else Instruction(text, title="memory index")


@hookimpl
def zpi_session_start(session: Any, source: str) -> None:
    """The service reads the memories now: what the session starts from."""
    if enabled(session.settings, SERVICE):
        from .runtime import runtime_for

        runtime_for(session).service(SERVICE, MemoryService)


@hookimpl
def zpi_session_end(session: Any, reason: str) -> None:
    settings = session.settings
    if enabled(settings, SERVICE) and service_settings(settings, SERVICE)["batch"]:
        from .runtime import runtime_for

        runtime_for(session).service(SERVICE, MemoryService).batch_due = True
