"""Service ``builtins:search``: the read-only ``glob``, ``grep`` and ``ls`` tools.

``glob`` lists the files a ``**`` pattern matches, newest first. ``grep`` searches file
contents with a regular expression, through ripgrep when ``rg`` is on PATH and in pure Python
otherwise (setting ``plugins.builtins.search.ripgrep``), with the same results: which files are
searched is decided by :mod:`.search_files` (``.gitignore``, hidden names, no symlinks) and the
engines of :mod:`.search_grep` report lines by number, formatted here. ``ls``
(:mod:`.search_ls`) draws a folder's tree by the same rules. Their parameters are Claude's
(``-i``, ``-n``, ``-A`` ...), so the SDK's ``Glob``, ``Grep`` and ``LS`` are these tools under
those names. Paths are judged like ``read``'s (``PATH_ARGUMENTS``): a folder outside the
workspace needs approval, and rules such as ``grep(src/**)`` name them. Long results are
spilled by the loop like every tool's (``tools.output_limit_bytes``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zpi_host import hookimpl
from zpi_host.permissions import PATH_ARGUMENTS, READ_TOOLS
from zpi_host.tools import (
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolFailure,
    ToolMetadata,
    ToolResult,
)

from .search_types import FILE_TYPES
from .settings import enabled, service_settings

if TYPE_CHECKING:  # the walker and the engines (with the arguments' classes) are imported
    # when a search runs
    from .search_files import GlobArgs
    from .search_grep import Collected, FileHits, GrepArgs

__all__ = ["glob_tool", "grep_tool", "zpi_register_tools"]

SERVICE = "search"
#: shown by ``zpi-host --list-plugins``
contributes = {"tools": ["glob", "grep", "ls"]}

PATH_ARGUMENTS.update({"glob": ("path",), "grep": ("path",), "ls": ("path",)})
READ_TOOLS.add("grep")  # it may search what the host hands the model (spilled output)

MODES = ("content", "files_with_matches", "count")
MAX_CONTEXT = 100
MAX_LINE_CHARS = 2000
_READ_ONLY = ToolMetadata(read_only=True, concurrency_safe=True, side_effects=False)

GLOB_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "The glob pattern, relative to path: "
                    "**/*.py (every .py file), src/**/*.{ts,tsx}, *.md (top level only)."},
        "path": {"type": "string", "description": "The folder to search (default: the "
                                                  "working directory)."},
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

GREP_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "The regular expression to search for."},
        "path": {"type": "string", "description": "The file or folder to search (default: "
                                                  "the working directory)."},
        "glob": {"type": "string", "description": "Only files matching this glob (*.py, "
                 "src/**/*.ts, *.{ts,tsx}); several separated by spaces."},
        "type": {"type": "string", "description": "Only files of this type: "
                 + ", ".join(sorted(FILE_TYPES)) + "."},
        "output_mode": {"type": "string", "enum": list(MODES), "description": "content: "
                        "matching lines; files_with_matches: the files, newest first "
                        "(default); count: matches per file."},
        "-i": {"type": "boolean", "description": "Ignore case."},
        "-n": {"type": "boolean", "description": "Show line numbers (content mode; default "
                                                 "true)."},
        "-A": {"type": "integer", "description": "Lines of context after each match."},
        "-B": {"type": "integer", "description": "Lines of context before each match."},
        "-C": {"type": "integer", "description": "Lines of context before and after."},
        "head_limit": {"type": "integer", "description": "Show at most this many lines or "
                                                         "files (0: all)."},
        "multiline": {"type": "boolean", "description": "Let a match span lines (. matches "
                                                        "newlines)."},
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

LS_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The folder to list (absolute, or relative "
                                                  "to the working directory)."},
        "ignore": {"type": "array", "items": {"type": "string"},
                   "description": "Glob patterns of names or paths to leave out "
                                  "(node_modules, *.log, build/)."},
    },
    "required": ["path"],
    "additionalProperties": False,
}

LS_DESCRIPTION = """\
List a folder's files and subfolders as a tree. Files ignored by .gitignore, hidden names and \
what ignore names are left out. Prefer glob and grep when you know what you are looking for."""


GLOB_DESCRIPTION = """\
Find files by name with a glob pattern (** spans folders, {a,b} alternatives); the newest \
files come first. Hidden files and folders (.env, .claude/...) are included; files ignored \
by .gitignore, version-control folders (.git ...) and symlinks are left out. Use it instead \
of `find` or `ls -R`."""

GREP_DESCRIPTION = """\
Search file contents with a regular expression (ripgrep syntax). output_mode chooses what \
comes back: files_with_matches (default), content (matching lines, with -n numbers and \
-A/-B/-C context) or count. Narrow the files with glob or type. Files ignored by .gitignore, \
hidden files, binary files and symlinks are skipped. Use it instead of `grep` or `rg` in \
bash."""


# ------------------------------------------------------------------------------ arguments


def _check(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    from zpi_host.tools.base import _check_object

    _check_object(tool, schema, arguments)


def _text(tool: str, arguments: Mapping[str, Any], name: str) -> str | None:
    value = arguments.get(name)
    if value is None:
        return None
    if not value.strip():
        raise ToolArgumentError(tool, name, "must not be empty")
    return str(value)


def _glob(tool: str, field: str, pattern: str) -> str:
    if pattern.startswith("!"):
        raise ToolArgumentError(tool, field, "exclusions ('!') are not supported; .gitignore "
                                "already leaves ignored files out")
    from .search_files import GlobError, compile_glob

    try:
        compile_glob(pattern)
    except GlobError as exc:
        raise ToolArgumentError(tool, field, str(exc)) from None
    return pattern


def prepare_glob(arguments: Mapping[str, Any]) -> GlobArgs:
    from .search_files import GlobArgs

    _check("glob", GLOB_PARAMETERS, arguments)
    pattern = _text("glob", arguments, "pattern")
    assert pattern is not None
    path = _text("glob", arguments, "path")
    if os.path.isabs(pattern):  # only path is judged by the permission check: no way around it
        raise ToolArgumentError("glob", "pattern", "must be relative to path; give the folder "
                                "as path (e.g. path '/src', pattern '**/*.py')")
    return GlobArgs(_glob("glob", "pattern", pattern), path)


def _whole(arguments: Mapping[str, Any], name: str, top: int | None) -> int | None:
    value = arguments.get(name)
    if value is None:
        return None
    if value < 0 or (top is not None and value > top):
        limit = f"from 0 to {top}" if top is not None else "0 or more"
        raise ToolArgumentError("grep", name, f"must be {limit}, got {value}")
    return int(value)


def prepare_grep(arguments: Mapping[str, Any]) -> GrepArgs:
    _check("grep", GREP_PARAMETERS, arguments)
    pattern = arguments["pattern"]
    if not pattern:
        raise ToolArgumentError("grep", "pattern", "must not be empty")
    multiline = bool(arguments.get("multiline") or False)
    ignore_case = bool(arguments.get("-i") or False)
    from .search_grep import GrepArgs, GrepQuery

    try:
        GrepQuery(pattern, Path("."), ignore_case=ignore_case, multiline=multiline).regex()
    except re.error as exc:
        raise ToolArgumentError("grep", "pattern", f"is not a valid regular expression: "
                                f"{exc}") from None
    glob_text = _text("grep", arguments, "glob")
    globs = tuple(_glob("grep", "glob", g) for g in (glob_text or "").split())
    file_type = _text("grep", arguments, "type")
    if file_type is not None and file_type not in FILE_TYPES:
        raise ToolArgumentError("grep", "type", f"unknown type {file_type!r}; known: "
                                + ", ".join(sorted(FILE_TYPES)) + " (or use glob)")
    mode = arguments.get("output_mode") or "files_with_matches"
    if mode not in MODES:
        raise ToolArgumentError("grep", "output_mode", f"must be one of {', '.join(MODES)}")
    around = _whole(arguments, "-C", MAX_CONTEXT)
    before = _whole(arguments, "-B", MAX_CONTEXT)
    after = _whole(arguments, "-A", MAX_CONTEXT)
    return GrepArgs(
        pattern, _text("grep", arguments, "path"), globs, file_type, mode, ignore_case,
        arguments.get("-n") is not False,
        before if before is not None else around or 0,
        after if after is not None else around or 0,
        _whole(arguments, "head_limit", None) or 0, multiline)


# ------------------------------------------------------------------------------ where


def _real_cwd(ctx: ToolContext) -> Path:
    return Path(os.path.realpath(ctx.cwd))


def _root(ctx: ToolContext, raw: str | None, tool: str) -> Path:
    """The real path of the folder (or file) to search, as the permission check judged it.
    A FIFO, socket or device is refused without opening it: ``/dev/zero`` never ends, so
    reading it whole would take all the memory there is."""
    import stat

    from zpi_host.fs import nofollow

    if raw is None:
        return _real_cwd(ctx)
    try:
        real = ctx.target(raw).real
    except nofollow.UnusablePathError as exc:
        raise ToolFailure(str(exc), {"path": raw}) from None
    try:
        mode = real.stat().st_mode
    except OSError:
        raise ToolFailure(f"{raw} does not exist; give a folder inside the workspace (or "
                          "leave path out to search the working directory)",
                          {"path": raw}) from None
    if tool == "glob" and not stat.S_ISDIR(mode):
        raise ToolFailure(f"{raw} is not a folder; glob searches folders (use it with the "
                          "folder that holds the file)", {"path": raw})
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise ToolFailure(f"{raw} is {nofollow.kind_of(mode)}, not a regular file or a folder; "
                          f"{tool} searches only those and refuses it without opening it",
                          {"path": raw})
    return real


def _shown(root: Path, cwd: Path) -> str:
    """How paths under ``root`` start: relative to the working directory when inside it."""
    try:
        rel = root.relative_to(cwd)
    except ValueError:
        return str(root)
    return "" if rel == Path(".") else str(rel)


def _join(prefix: str, rel: str) -> str:
    return f"{prefix.rstrip('/')}/{rel}" if prefix else rel


def _newest_first(items: list[tuple[str, Path]]) -> list[tuple[str, Path]]:
    def key(item: tuple[str, Path]) -> tuple[float, str]:
        try:
            mtime = os.stat(item[1], follow_symlinks=False).st_mtime
        except OSError:
            mtime = 0.0
        return -mtime, item[0]

    return sorted(items, key=key)


# ------------------------------------------------------------------------------ glob


def execute_glob(args: GlobArgs, ctx: ToolContext) -> ToolResult:
    from .search_files import FileFilter, compile_glob, walk_files

    root = _root(ctx, args.path, "glob")
    regex = compile_glob(args.pattern)
    problems: list[str] = []
    # hidden names are kept, as Claude Code's Glob keeps them (.env, .claude/...)
    walk = walk_files(root, FileFilter(hidden=True), problems=problems)
    found = _newest_first([(rel, path) for rel, path in walk if regex.match(rel)])
    prefix = _shown(root, _real_cwd(ctx))
    details = {"path": str(root), "pattern": args.pattern, "files": len(found)}
    if problems:
        details["ignore_file_problems"] = problems
    if not found:
        text = f"No files found matching {args.pattern!r} in {prefix or '.'}"
    else:
        text = "\n".join(_join(prefix, rel) for rel, _ in found)
    return ToolResult.text(text + _problem_notes(problems), details=details)


def _problem_notes(problems: list[str]) -> str:
    """The ignore files a search left out, after its results (one line each)."""
    return "".join(f"\n\n[ignore file not used: {p}]" for p in problems)


def glob_tool() -> Tool:
    return Tool(name="glob", description=GLOB_DESCRIPTION, parameters=GLOB_PARAMETERS,
                execute=execute_glob, metadata=_READ_ONLY, prepare=prepare_glob)


# ------------------------------------------------------------------------------ ls


def ls_tool() -> Tool:
    """``ls`` (Claude Code's ``LS``): its code, in :mod:`.search_ls`, is imported at the
    first call."""

    def prepare(arguments: Mapping[str, Any]) -> Any:
        from .search_ls import prepare_ls

        _check("ls", LS_PARAMETERS, arguments)
        return prepare_ls(arguments)

    def execute(args: Any, ctx: ToolContext) -> ToolResult:
        from .search_ls import execute_ls

        return execute_ls(args, ctx)

    return Tool(name="ls", description=LS_DESCRIPTION, parameters=LS_PARAMETERS,
                execute=execute, metadata=_READ_ONLY, prepare=prepare)


# ------------------------------------------------------------------------------ grep


def search(args: GrepArgs, root: Path, use_ripgrep: bool) -> tuple[Collected, str]:
    """Run the search; returns what was found and the engine that found it."""
    from .search_files import FileFilter, ignore_file_problems
    from .search_grep import GrepQuery, RipgrepError, grep_python, grep_ripgrep, ripgrep_path

    query = GrepQuery(args.pattern, root, args.globs, args.file_type, args.ignore_case,
                      args.multiline, args.before, args.after,
                      output={"content": "lines", "count": "counts"}.get(args.mode, "files"))
    rg = ripgrep_path() if use_ripgrep and root.is_dir() else None
    if rg is not None and ignore_file_problems(root, FileFilter.of(query.globs,
                                                                    query.file_type)):
        rg = None  # ripgrep would read them itself: Python reads them safely and says so
    if rg is not None:
        try:
            found = grep_ripgrep(query, rg)
        except (RipgrepError, OSError) as exc:
            raise ToolFailure(f"ripgrep failed: {exc}") from None
        if found is not None:
            return found, "ripgrep"
    return grep_python(query), "python"


def _cut(text: str) -> str:
    text = text.removesuffix("\r")
    if len(text) <= MAX_LINE_CHARS:
        return text
    return f"{text[:MAX_LINE_CHARS]}… [line cut: {len(text)} characters in all]"


def _content_lines(files: list[FileHits], args: GrepArgs, name: Any) -> list[str]:
    context = bool(args.before or args.after)
    out: list[str] = []
    for hits in sorted(files, key=lambda h: h.rel):
        shown = name(hits.rel)
        previous = None
        if context and out:
            out.append("--")
        for number in sorted(hits.lines):
            is_match, text = hits.lines[number]
            if context and previous is not None and number != previous + 1:
                out.append("--")
            previous = number
            sep = ":" if is_match else "-"
            where = f"{shown}{sep}{number}{sep}" if args.numbers else f"{shown}{sep}"
            out.append(where + _cut(text))
    return out


def format_grep(found: Collected, args: GrepArgs, root: Path, cwd: Path) -> tuple[str, int]:
    """The result text and how many entries (lines or files) it had before head_limit."""
    prefix = _shown(root, cwd)

    one_file = not root.is_dir()

    def name(rel: str) -> str:
        return prefix or rel if one_file else _join(prefix, rel)

    files = found.files
    if args.mode == "content":
        entries = _content_lines(files, args, name)
        head = "" if entries else "No matches found"
    elif args.mode == "count":
        ordered = sorted(files, key=lambda h: h.rel)
        entries = [f"{name(h.rel)}:{h.count}" for h in ordered]
        total = sum(h.count for h in files)
        head = "" if entries else "No matches found"
        tail = f"\n\nFound {total} matching line(s) in {len(files)} file(s)" if entries else ""
    else:
        newest = sorted(files, key=lambda h: (-h.mtime, h.rel))
        entries = [name(h.rel) for h in newest]
        head = f"Found {len(entries)} file(s)" if entries else "No files found"
    shown = entries[:args.head_limit] if args.head_limit else entries
    parts = [head] if head else []
    parts += shown
    text = "\n".join(parts)
    if args.mode == "count" and entries:
        text += tail
    if len(shown) < len(entries):
        text += (f"\n\n[showing the first {len(shown)} of {len(entries)} "
                 f"{'lines' if args.mode == 'content' else 'entries'}; raise head_limit "
                 "or narrow the search to see more]")
    if found.cut:
        text += ("\n\n[the search stopped early: it found more than the host keeps; narrow "
                 "the pattern, path, glob or type]")
    return text + _problem_notes(found.problems), len(entries)


def grep_tool(use_ripgrep: bool = True) -> Tool:
    """The ``grep`` tool; ``use_ripgrep`` False always searches in Python."""

    def execute(args: GrepArgs, ctx: ToolContext) -> ToolResult:
        root = _root(ctx, args.path, "grep")
        found, engine = search(args, root, use_ripgrep)
        text, entries = format_grep(found, args, root, _real_cwd(ctx))
        details = {"path": str(root), "engine": engine, "mode": args.mode,
                   "files": len(found.files), "entries": entries, "cut": found.cut}
        if found.problems:
            details["ignore_file_problems"] = found.problems
        if args.mode != "files_with_matches":  # that search stops at a file's first match
            details["matched_lines"] = sum(h.count for h in found.files)
        return ToolResult.text(text, details=details)

    return Tool(name="grep", description=GREP_DESCRIPTION, parameters=GREP_PARAMETERS,
                execute=execute, metadata=_READ_ONLY, prepare=prepare_grep)


# ------------------------------------------------------------------------------ hooks


@hookimpl
def zpi_register_tools(cwd: Path, settings: Mapping[str, Any]) -> list[Tool] | None:
    if not enabled(settings, SERVICE):
        return None
    use_ripgrep = service_settings(settings, SERVICE)["ripgrep"] != "off"
    return [glob_tool(), grep_tool(use_ripgrep), ls_tool()]
