"""Whether a bash line deletes or moves files, read by :mod:`.shell` (the same reader the
rules use, so ``sudo rm``, ``sh -c 'mv a b'`` and ``find . -delete`` are seen through): what a
service that must keep files where they are (a ``self`` hand-off) refuses softly."""

from __future__ import annotations

from collections.abc import Iterator

from .invocations import Invocation, ShellLine, Word

__all__ = ["REMOVING_PROGRAMS", "removes_or_moves"]

#: programs that delete or move what they are given
REMOVING_PROGRAMS = frozenset({"rm", "rmdir", "unlink", "shred", "mv", "srm", "trash",
                               "trash-put", "gio"})
#: ``git`` subcommands that do
_GIT_REMOVING = frozenset({"rm", "mv", "clean"})


def removes_or_moves(command: str) -> str | None:
    """The first command of ``command`` that deletes or moves files (``rm -rf build``), or
    why what the line runs cannot be seen (then it may); None when it does neither."""
    from .shell import parse_line

    line = parse_line(command)
    for reason in line.unknowns():
        return f"what it runs cannot be told ({reason})"
    for words in _commands(line):
        if _removes(words):
            return " ".join(w or "?" for w in words)
    return None


def _commands(line: ShellLine) -> Iterator[tuple[Word, ...]]:
    for code in line.quoted_code:
        yield from _commands(code)
    for inv in line.invocations:
        yield from _views(inv)


def _views(inv: Invocation) -> Iterator[tuple[Word, ...]]:
    yield from inv.views
    for inner in (inv.script, *inv.extras):
        if inner is not None:
            yield from _commands(inner)


def _removes(words: tuple[Word, ...]) -> bool:
    if not words or words[0] is None:
        return False
    from .wrappers import program_name

    name = program_name(words[0])
    args = [w for w in words[1:] if w is not None]
    if name in REMOVING_PROGRAMS:
        return name != "gio" or (bool(args) and args[0] in ("remove", "trash", "move"))
    if name == "git":
        return _git_subcommand(args) in _GIT_REMOVING
    if name == "find":
        return "-delete" in args
    return name == "rsync" and "--remove-source-files" in args


def _git_subcommand(args: list[str]) -> str | None:
    """The subcommand after git's own options (``-C DIR`` and ``-c NAME=VALUE`` take one)."""
    rest = iter(args)
    for arg in rest:
        if arg in ("-C", "-c", "--git-dir", "--work-tree", "--namespace"):
            next(rest, None)
        elif not arg.startswith("-"):
            return arg
    return None
