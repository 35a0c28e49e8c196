"""Where file tools touch the disk, and whether that is inside the session's workspace.

A tool does not declare its paths on :class:`~zpi_host.tools.Tool`; it is named in
``PATH_ARGUMENTS`` (tool name -> the arguments holding paths) by whoever registers it. Paths are
judged after resolving ``~``, ``..`` and symlinks, also for files that do not exist yet: the
existing part of the path is resolved and the rest appended, so a new file under a symlinked
directory counts where the link points.

One permission check resolves each path once (:func:`judging`) and hands the result, a
:class:`JudgedPath`, to the tool, which opens exactly that path without following symlinks
(:mod:`zpi_host.fs.nofollow`): a symlink swapped in between cannot redirect it. A regular file
with more than one hard link inside the workspace may be read (its other names give nothing
``bash cat`` does not), but changing it counts as outside: its other names may be anywhere,
and a write would part them from this one (docs/permissions.md, "Hard links").
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any

import attrs

from ..fs import nofollow
from ..support.attrs_methods import FrozenFieldsEq
from .errors import PermissionConfigError

#: File tools: tool name -> the argument names holding a path (a string, or a list of strings).
#: Add your tool here (``PATH_ARGUMENTS["grep"] = ("path",)``) when it reads or writes files,
#: so that workspace checks and path rules (``grep(src/**)``) apply to it.
PATH_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "read": ("path",),
    "write": ("path",),
    "edit": ("path",),
}

#: Tools that read files: the host lets them read what it hands the model (spilled tool output,
#: loaded skills). Add a tool that stands in for ``read`` (the SDK's ``Read``).
READ_TOOLS: set[str] = {"read"}

_GLOB_CHARS = re.compile(r"[*?]")


def paths_of(tool_name: str, arguments: Mapping[str, Any]) -> list[str]:
    """The paths a call of ``tool_name`` touches, as the model wrote them (unresolved)."""
    names = PATH_ARGUMENTS.get(tool_name, ())
    if not names or not isinstance(arguments, Mapping):
        return []
    out: list[str] = []
    for name in names:
        value = arguments.get(name)
        values = value if isinstance(value, list | tuple) else [value]
        out.extend(v for v in values if isinstance(v, str) and v)
    return out


def absolute(path: str | os.PathLike[str], cwd: Path) -> Path:
    """``~`` expanded, relative to ``cwd``, ``.`` and ``..`` removed; symlinks untouched."""
    p = Path(os.path.expanduser(os.fspath(path)))
    return Path(os.path.normpath(p if p.is_absolute() else cwd / p))


#: The resolutions of the permission check in progress: (path as written, cwd) -> real path.
_PINNED: ContextVar[dict[tuple[str, Path], Path] | None] = ContextVar("zpi_pinned_paths",
                                                                      default=None)


def resolve(path: str | os.PathLike[str], cwd: Path) -> Path:
    """Where ``path`` really is: symlinks of the existing part resolved (also when the final
    part does not exist yet), ``..`` applied after each link, as the kernel would. Within
    :func:`judging`, the path's first resolution is reused, so rules and the workspace check
    judge the same place. Raises :class:`~zpi_host.fs.nofollow.PathChangedError` when the path
    keeps changing while it is resolved."""
    key = (os.fspath(path), cwd)
    pinned = _PINNED.get()
    if pinned is not None and key in pinned:
        return pinned[key]
    p = Path(os.path.expanduser(key[0]))
    real = nofollow.resolve(p if p.is_absolute() else cwd / p)
    if pinned is not None:
        pinned[key] = real
    return real


@contextlib.contextmanager
def judging() -> Iterator[None]:
    """Within this block every path is resolved once: later resolutions of the same path give
    the first answer, whatever the disk says by then (one permission check)."""
    token = _PINNED.set({})
    try:
        yield
    finally:
        _PINNED.reset(token)


def resolve_parent(path: str | os.PathLike[str], cwd: Path) -> Path:
    """The path of the entry itself: its directory resolved, its last part kept (a symlink
    named by a deny rule is caught even though it points elsewhere)."""
    p = absolute(path, cwd)
    return nofollow.resolve(p.parent) / p.name if p.name else p


def _path(value: str | os.PathLike[str]) -> Path:
    return Path(os.path.expanduser(os.fspath(value))).absolute()


def _paths(values: Iterable[str | os.PathLike[str]]) -> tuple[Path, ...]:
    return tuple(Path(os.path.expanduser(os.fspath(v))) for v in values)


@attrs.frozen(repr=False, eq=False, slots=False)
class WorkspaceRoots(FrozenFieldsEq):
    """The directories a session may touch without asking: the cwd plus extra roots
    (``--add-dir``, setting ``permissions.additional_directories``)."""

    cwd: Path = attrs.field(converter=_path)
    extra: tuple[Path, ...] = attrs.field(default=(), converter=_paths)
    roots: tuple[Path, ...] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        resolved: list[Path] = []
        for root in (self.cwd, *self.extra):
            real = resolve(root, self.cwd)
            if real not in resolved:
                resolved.append(real)
        object.__setattr__(self, "roots", tuple(resolved))

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """``path`` (absolute, or relative to the cwd) with ``~``, ``..`` and symlinks
        resolved."""
        return resolve(path, self.cwd)

    def root_of(self, path: str | os.PathLike[str]) -> Path | None:
        """The workspace root holding ``path`` after resolution, or None."""
        return self.root_holding(self.resolve(path))

    def root_holding(self, real: Path) -> Path | None:
        """The workspace root holding the already resolved ``real``, or None."""
        return next((r for r in self.roots if real == r or real.is_relative_to(r)), None)

    def judge(self, raw: str) -> JudgedPath:
        """Where ``raw`` is, which root holds it, and how many hard links the file there has.
        Raises :class:`~zpi_host.fs.nofollow.UnusablePathError` (the path keeps changing, or
        cannot be a file name)."""
        real = self.resolve(raw)
        return JudgedPath(raw, real, self.root_holding(real), hard_links(real))

    def contains(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` is inside a root once ``..`` and symlinks are resolved."""
        return self.root_of(path) is not None

    def describe(self) -> str:
        return ", ".join(str(r) for r in self.roots)


def hard_links(real: Path) -> int:
    """The link count of the regular file at the resolved ``real``, looked up without
    following symlinks; 0 when there is none (not yet created, a directory, a special file,
    or the path is changing: the tool will find out when it opens it)."""
    try:
        dir_fd = nofollow.open_directory(real.parent)
    except (OSError, nofollow.PathChangedError):
        return 0
    try:
        st = nofollow.lstat_at(dir_fd, real.name)
    except OSError:
        return 0
    finally:
        os.close(dir_fd)
    return st.st_nlink if st is not None and stat.S_ISREG(st.st_mode) else 0


@attrs.frozen(repr=False, eq=False, slots=False)
class JudgedPath(FrozenFieldsEq):
    """One path of a call as the permission check saw it. ``real``: where it resolved to (the
    file tools open exactly this, without following symlinks); ``root``: the workspace root
    holding it, None outside; ``links``: hard links of the regular file there (0: none).
    ``confined``: the call changes files and was allowed because this path is inside the
    workspace and not shared, so the tool must still find a file with a single link there
    when it opens it."""

    raw: str
    real: Path
    root: Path | None
    links: int = 0
    confined: bool = False

    @property
    def inside(self) -> bool:
        """In a workspace root (whatever its link count: see :meth:`inside_for`)."""
        return self.root is not None

    @property
    def shared(self) -> bool:
        """A regular file with other names (hard links), which may be anywhere."""
        return self.links > 1

    def inside_for(self, changes: bool) -> bool:
        """Inside for a call that reads (any file in a root) or that ``changes`` files (a file
        in a root with no other names)."""
        return self.inside and not (changes and self.shared)


def check_directories(dirs: Iterable[str | os.PathLike[str]], cwd: Path,
                      source: str) -> list[Path]:
    """Extra roots as absolute paths; each must be an existing directory."""
    out: list[Path] = []
    for index, entry in enumerate(dirs):
        if not isinstance(entry, str | os.PathLike) or not os.fspath(entry):
            raise PermissionConfigError(
                f"{source}[{index}] must be a directory path, got {entry!r}")
        path = absolute(entry, cwd)
        if not path.is_dir():
            what = "is not a directory" if path.exists() else "does not exist"
            raise PermissionConfigError(
                f"{source}[{index}]: extra workspace directory {path} {what}; create it or "
                "remove it from the list")
        out.append(path)
    return out


def path_pattern_matches(pattern: str, path: Path, cwd: Path) -> bool:
    """Whether a file-rule pattern covers the (already resolved) absolute ``path``."""
    return _path_regex(pattern, str(cwd)).fullmatch(path.as_posix()) is not None


@lru_cache(maxsize=1024)
def _path_regex(pattern: str, cwd: str) -> re.Pattern[str]:
    """Gitignore-like: ``/abs``, ``~/x`` or relative to the cwd; a pattern without ``/`` matches
    at any depth; ``*`` stays within one path segment, ``**`` crosses segments, ``?`` is one
    character; a pattern naming a directory covers everything under it. The literal leading
    directories are resolved like the paths they are compared with."""
    text = pattern.strip()
    if text.startswith("~"):
        text = os.path.expanduser(text)
    if not text.startswith("/"):
        text = text[2:] if text.startswith("./") else text
        if "/" not in text.rstrip("/"):
            text = "**/" + text
        text = cwd.rstrip("/") + "/" + text
    text = text.rstrip("/") or "/"
    parts = text.split("/")
    first_glob = next((i for i, part in enumerate(parts) if _GLOB_CHARS.search(part)), len(parts))
    static = os.path.realpath("/".join(parts[:first_glob]) or "/")
    rest = parts[first_glob:]
    body = re.escape(static.rstrip("/"))
    if rest:
        body += "/" + _glob_segments("/".join(rest))
    elif static == "/":
        body = ""
    return re.compile(body + r"(?:/.*)?", re.DOTALL)


def _glob_segments(glob: str) -> str:
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        if glob.startswith("**/", i) and (i == 0 or glob[i - 1] == "/"):
            out.append("(?:[^/]*/)*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)
