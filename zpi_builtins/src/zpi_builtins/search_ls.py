"""The ``ls`` tool of ``builtins:search`` (Claude Code's ``LS``): a folder's tree.

Its parameters are Claude's: ``path`` (the folder) and ``ignore`` (globs of names or paths
left out, with everything below them). What it lists is decided as for ``glob`` and ``grep``
(:mod:`.search_files`: ``.gitignore`` and the other ignore files, hidden names left out as
Claude Code's LS leaves them, symlinks listed but never followed), depth first in name order,
as Claude Code draws it: ``- /abs/folder/`` and each entry indented below its folder. At most
:data:`MAX_ENTRIES` entries are shown; a longer tree says so and how to narrow it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from zpi_host.support.attrs_methods import FrozenFieldsEq
from zpi_host.tools import ToolArgumentError, ToolContext, ToolResult

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["LsArgs", "execute_ls", "prepare_ls"]

NAME = "ls"
#: entries shown at most (Claude Code's LS stops at the same number)
MAX_ENTRIES = 1000

@attrs.frozen(repr=False, eq=False, slots=False)
class LsArgs(FrozenFieldsEq):
    path: str
    ignore: tuple[str, ...] = ()


def prepare_ls(arguments: Mapping[str, Any]) -> LsArgs:
    """The arguments once the schema check (``search.LS_PARAMETERS``, in the tool's
    ``prepare``) passed: the path not empty, each ``ignore`` glob readable."""
    from .search_files import GlobError, compile_glob

    path = arguments["path"]
    if not path.strip():
        raise ToolArgumentError(NAME, "path", "must not be empty")
    ignore = tuple(arguments.get("ignore") or ())
    for i, pattern in enumerate(ignore):
        try:
            compile_glob(pattern.rstrip("/"))
        except GlobError as exc:
            raise ToolArgumentError(NAME, f"ignore[{i}]", str(exc)) from None
    return LsArgs(path, ignore)


def format_tree(root: Path, entries: list[tuple[str, bool]]) -> str:
    """Claude Code's drawing: the folder, then each entry two spaces deeper than its folder."""
    lines = [f"- {str(root).rstrip('/')}/"]
    for rel, is_dir in entries:
        depth = rel.count("/")
        name = rel.rsplit("/", 1)[-1]
        lines.append("  " * (depth + 1) + f"- {name}{'/' if is_dir else ''}")
    return "\n".join(lines)


def execute_ls(args: LsArgs, ctx: ToolContext) -> ToolResult:
    import stat

    from zpi_host.fs import nofollow
    from zpi_host.tools import ToolFailure

    from .search_files import FileFilter, walk_tree

    try:
        root = ctx.target(args.path).real
        mode = root.stat().st_mode
    except nofollow.UnusablePathError as exc:
        raise ToolFailure(str(exc), {"path": args.path}) from None
    except OSError:
        raise ToolFailure(f"{args.path} does not exist; give a folder inside the workspace",
                          {"path": args.path}) from None
    if not stat.S_ISDIR(mode):
        raise ToolFailure(f"{args.path} is not a folder; ls lists folders (read a file with "
                          "read)", {"path": args.path})
    problems: list[str] = []
    skip = FileFilter.of(args.ignore) if args.ignore else None
    entries: list[tuple[str, bool]] = []
    more = False
    for entry in walk_tree(root, problems=problems, skip=skip):
        if len(entries) == MAX_ENTRIES:
            more = True
            break
        entries.append(entry)
    text = format_tree(root, entries)
    if more:
        text = (f"There are more than {MAX_ENTRIES} files and folders here; the first "
                f"{MAX_ENTRIES} are shown. List a subfolder, or use glob or grep, to see "
                "the rest.\n\n" + text)
    text += "".join(f"\n\n[ignore file not used: {p}]" for p in problems)
    details = {"path": os.fspath(root), "entries": len(entries), "cut": more}
    if problems:
        details["ignore_file_problems"] = problems
    return ToolResult.text(text, details=details)
