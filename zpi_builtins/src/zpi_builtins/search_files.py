"""Which files a search looks at, decided exactly as ripgrep decides them, so that the glob
and grep tools give the same answer with or without ``rg``.

The rules (ripgrep's defaults, run with ``--no-require-git --no-ignore-global
--no-ignore-exclude``): ``.gitignore``, ``.ignore`` and ``.rgignore`` files in the searched
folder, below it and above it apply; within a kind the deepest file with a matching pattern
decides; ``.rgignore`` beats ``.ignore`` beats ``.gitignore``; ``.gitignore`` files above the
first folder holding ``.git`` do not count. Names starting with a dot (``.git`` among them) are
skipped, unless the filter keeps hidden names (glob's, as Claude Code's Glob does: ``.env``,
``.claude/...``), which still leaves out version-control folders (:data:`VCS_FOLDERS`) and
what the ignore files ignore. Symlinks are never followed (neither to files nor to folders),
so a walk cannot leave the folder it was given. Only regular files are yielded. Include globs
(grep's ``glob``) override every other rule for what they match, as ``rg --glob`` does; a
type (grep's ``type``) narrows what is left.

Gitignore patterns are matched with ``pathspec`` (``GitIgnoreSpec``), a well-kept library
that follows git's documented rules (negation, anchoring, directory-only patterns, ``**``),
rather than a home-made copy of them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path

import attrs

from zpi_host.support.attrs_methods import FrozenFieldsEq

from .search_types import FILE_TYPES

__all__ = ["FILE_TYPES", "IGNORE_FILES", "VCS_FOLDERS", "FileFilter", "GlobArgs", "GlobError",
           "compile_glob", "ignore_file_problems", "walk_files", "walk_tree"]

#: ignore files, strongest first (ripgrep's order)
IGNORE_FILES = (".rgignore", ".ignore", ".gitignore")
#: folders a walk that keeps hidden names still never enters (Claude Code's list)
VCS_FOLDERS = frozenset({".git", ".svn", ".hg", ".bzr", ".jj", ".sl"})


@attrs.frozen(repr=False, eq=False, slots=False)
class GlobArgs(FrozenFieldsEq):
    """Validated ``glob`` arguments (search.prepare_glob)."""

    pattern: str
    path: str | None


class GlobError(ValueError):
    """A glob pattern that cannot be read (an unclosed ``[`` or ``{``)."""


def _translate(pattern: str) -> str:
    """A glob as a regular expression over ``/``-separated paths: ``**`` spans folders
    (``**/`` also none), ``*`` and ``?`` stay within one name, ``[...]`` and ``{a,b}``."""
    out: list[str] = []
    i, n, depth = 0, len(pattern), 0
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                at_start = i == 0 or pattern[i - 1] == "/"
                i += 2
                if at_start and i < n and pattern[i] == "/":
                    out.append("(?:.*/)?")
                    i += 1
                elif at_start and i == n:
                    out.append(".*")
                else:
                    out.append("[^/]*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1:i + 2] in ("!", "^") else i + 1)
            if end < 0:
                raise GlobError(f"unclosed '[' in {pattern!r}")
            body = pattern[i + 1:end]
            if body[:1] in ("!", "^"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        raise GlobError(f"unclosed '{{' in {pattern!r}")
    return "".join(out)


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """A glob matched against a whole ``/``-separated relative path."""
    return re.compile(_translate(pattern.lstrip("/")) + r"\Z", re.DOTALL)


@attrs.frozen(repr=False, eq=False, slots=False)
class PathGlob(FrozenFieldsEq):
    """An include glob as ``rg --glob`` reads it: without a slash (other than a trailing one)
    it matches a name at any depth, with one it matches the path from the searched folder; a
    trailing slash matches folders only."""

    pattern: str
    regex: re.Pattern[str]
    by_name: bool
    folders_only: bool

    @classmethod
    def of(cls, pattern: str) -> PathGlob:
        bare = pattern.rstrip("/")
        by_name = "/" not in bare
        return cls(pattern, compile_glob(bare), by_name, bare != pattern)

    def matches(self, rel: str, name: str, is_dir: bool) -> bool:
        if self.folders_only and not is_dir:
            return False
        return self.regex.match(name if self.by_name else rel) is not None


@attrs.frozen(repr=False, eq=False, slots=False)
class FileFilter(FrozenFieldsEq):
    """What a walk keeps beside the ignore rules: include globs, basename globs of a type,
    and whether names starting with a dot are kept (``hidden``, ``rg --hidden``)."""

    globs: tuple[PathGlob, ...] = ()
    type_globs: tuple[re.Pattern[str], ...] = ()
    hidden: bool = False

    @classmethod
    def of(cls, globs: Sequence[str] = (), file_type: str | None = None,
           hidden: bool = False) -> FileFilter:
        kinds = FILE_TYPES[file_type] if file_type else ()
        return cls(tuple(PathGlob.of(g) for g in globs), tuple(map(compile_glob, kinds)),
                   hidden)

    def glob_match(self, rel: str, name: str, is_dir: bool = False) -> bool:
        return any(g.matches(rel, name, is_dir) for g in self.globs)


@attrs.frozen(repr=False, eq=False, slots=False)
class _IgnoreFile(FrozenFieldsEq):
    """The patterns of one ignore file and the folder (``/``-terminated) they are relative to."""

    base: str
    spec: object  # pathspec.GitIgnoreSpec (imported lazily)

    def decide(self, path: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included by a ``!`` pattern, None: no pattern matches."""
        rel = path[len(self.base):] + ("/" if is_dir else "")
        result: bool | None = self.spec.check_file(rel).include  # type: ignore[attr-defined]
        return result


def _load(folder: str, problems: list[str]) -> dict[str, _IgnoreFile]:
    """The ignore files in ``folder`` (absolute, ``/``-terminated), by name. Each is a file
    the repository ships (:func:`zpi_host.fs.shipped.read_shipped`): one that is not a regular
    file of at most 1 MiB inside ``folder`` (``.gitignore -> /dev/zero``, a FIFO) is left
    out and its problem added to ``problems``."""
    import pathspec

    from zpi_host.fs.shipped import CONFIG_LIMIT, ShippedFileError, read_shipped

    found: dict[str, _IgnoreFile] = {}
    for name in IGNORE_FILES:
        if not os.path.lexists(folder + name):  # most folders have none: one cheap look
            continue
        try:
            data = read_shipped(folder + name, limit=CONFIG_LIMIT, root=folder,
                                what="ignore file")
        except ShippedFileError as exc:
            problems.append(f"{exc}; the search went on without it")
            continue
        except OSError:
            continue
        text = data.decode("utf-8", errors="replace")
        found[name] = _IgnoreFile(folder, pathspec.GitIgnoreSpec.from_lines(text.splitlines()))
    return found


@attrs.frozen(repr=False, eq=False, slots=False)
class _Level(FrozenFieldsEq):
    """The ignore files of one folder of the walk (or above it) and whether it holds ``.git``."""

    files: dict[str, _IgnoreFile]
    has_git: bool


def _level(folder: str, problems: list[str]) -> _Level:
    return _Level(_load(folder, problems), os.path.lexists(folder + ".git"))


def _ignored(levels: Sequence[_Level], path: str, is_dir: bool) -> bool | None:
    """Whether the ignore files of ``levels`` (outermost first) ignore ``path`` (True),
    re-include it with a ``!`` pattern (False) or say nothing (None)."""
    for name in IGNORE_FILES:
        for level in reversed(levels):
            rule = level.files.get(name)
            if rule is not None:
                decided = rule.decide(path, is_dir)
                if decided is not None:
                    return decided
            if name == ".gitignore" and level.has_git:
                break  # a repository's .gitignore rules stop at its root
    return None


def _parents(root: str, problems: list[str]) -> list[_Level]:
    """The ignore levels of the folders above ``root`` (outermost first)."""
    levels = []
    parts = Path(root).parents
    for folder in reversed(parts):
        text = str(folder)
        levels.append(_level(text if text.endswith("/") else text + "/", problems))
    return levels


def walk_files(root: Path, file_filter: FileFilter = FileFilter(),
               problems: list[str] | None = None) -> Iterator[tuple[str, Path]]:
    """Every regular file under the folder ``root`` (a real path) that the rules keep, as
    (path relative to ``root`` with ``/``, absolute path), in no particular order. Folders
    that cannot be listed are skipped; ignore files refused are added to ``problems``, once
    each."""
    problems = [] if problems is None else problems
    for top, folder, levels, entries in _folders(root, file_filter, problems):
        for entry in entries:
            path = folder + entry.name
            rel = path[len(top):]
            try:
                regular = entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if regular and _keep_file(levels, path, rel, entry.name, file_filter):
                yield rel, Path(path)


def walk_tree(root: Path, file_filter: FileFilter = FileFilter(),
              problems: list[str] | None = None, skip: FileFilter | None = None,
              ) -> Iterator[tuple[str, bool]]:
    """The folders and files under the folder ``root`` (a real path) that the rules keep,
    depth first in name order, as (path relative to ``root`` with ``/``, is a folder): what
    ``ls`` shows. A symlink is listed as a file and never followed; ``skip``: globs of
    names or paths left out with everything below them (``ls``'s ``ignore``)."""
    problems = [] if problems is None else problems
    top = str(root).rstrip("/") + "/"

    def walk(folder: str, levels: list[_Level]) -> Iterator[tuple[str, bool]]:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            path = folder + entry.name
            rel = path[len(top):]
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if skip is not None and skip.glob_match(rel, entry.name, is_dir):
                continue
            if is_dir:
                if _keep_folder(levels, path, rel, entry.name, file_filter):
                    yield rel, True
                    yield from walk(path + "/", [*levels, _level(path + "/", problems)])
            elif _keep_file(levels, path, rel, entry.name, file_filter):
                yield rel, False

    yield from walk(top, [*_parents(top.rstrip("/") or "/", problems), _level(top, problems)])


def ignore_file_problems(root: Path, file_filter: FileFilter = FileFilter()) -> list[str]:
    """The ignore files a search of the folder ``root`` would read that are refused
    (``.gitignore -> /dev/zero``, a FIFO ``.ignore``, one over 1 MiB). ripgrep opens ignore
    files itself, following links and blocking on a FIFO, so grep checks them here first and
    searches in Python when any is refused. Walks the folders the search would enter only."""
    problems: list[str] = []
    for _ in _folders(root, file_filter, problems):
        pass
    return problems


def _folders(root: Path, file_filter: FileFilter, problems: list[str]
             ) -> Iterator[tuple[str, str, list[_Level], list[os.DirEntry[str]]]]:
    """Each folder the rules let a search enter, from ``root`` down: (the top with ``/``, the
    folder with ``/``, the ignore levels that apply in it, its entries that are not folders).
    Symlinks are not followed; a folder that cannot be listed is skipped."""
    top = str(root).rstrip("/") + "/"
    stack: list[tuple[str, list[_Level]]] = [(top, [*_parents(top.rstrip("/") or "/", problems),
                                                    _level(top, problems)])]
    while stack:
        folder, levels = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        others = []
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if not is_dir:
                others.append(entry)
                continue
            path = folder + entry.name
            if _keep_folder(levels, path, path[len(top):], entry.name, file_filter):
                stack.append((path + "/", [*levels, _level(path + "/", problems)]))
        yield top, folder, levels, others


def _keep_folder(levels: Sequence[_Level], path: str, rel: str, name: str,
                 file_filter: FileFilter) -> bool:
    """ripgrep's order for a folder: a matching include glob keeps it; then the ignore
    files; a hidden folder is skipped unless a ``!`` pattern named it or hidden names are
    kept (a version-control folder never is, then)."""
    if file_filter.hidden and name in VCS_FOLDERS:
        return False
    if file_filter.globs and file_filter.glob_match(rel, name, True):
        return True
    decided = _ignored(levels, path, True)
    if decided is not None:
        return not decided
    return file_filter.hidden or not name.startswith(".")


def _keep_file(levels: Sequence[_Level], path: str, rel: str, name: str,
               file_filter: FileFilter) -> bool:
    """ripgrep's order for a file: include globs decide alone when given; then the ignore
    files, then the type; a hidden file is skipped unless one of those named it."""
    if file_filter.globs:
        return file_filter.glob_match(rel, name)
    decided = _ignored(levels, path, False)
    if decided:
        return False
    named = decided is False
    if file_filter.type_globs:
        if not any(t.match(name) for t in file_filter.type_globs):
            return False
        named = True
    return named or file_filter.hidden or not name.startswith(".")
