"""Opening a path that was already judged, without following any symlink on the way.

The permission check resolves a path once (symlinks, ``..``) and judges where it is. A tool
that later opened the *name* would follow whatever symlink sits there by then, so a swap
between the check and the use could make it read or write another file. Instead, the file
tools open the *resolved* path one component at a time, each with ``O_NOFOLLOW`` relative to
the descriptor of its parent (``openat``): a resolved path has no symlinks, so meeting one
means the path changed during the call, and that is refused with :class:`PathChangedError`.
Special files are refused before they are opened, and opened with ``O_NONBLOCK``, so a FIFO
never blocks.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

from ..errors import ZpiError

DIR_FLAGS: Final = (os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
                    | getattr(os, "O_CLOEXEC", 0))
FILE_FLAGS: Final = (getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_CHANGED: Final = frozenset({errno.ELOOP, errno.EINVAL, errno.EMLINK})
RESOLVE_TRIES: Final = 5


class UnusablePathError(ZpiError):
    """A path the file tools cannot use as it is (the message says why and what to do)."""


class BadPathError(UnusablePathError):
    """Text that cannot be a file name on this system (a NUL byte, a lone surrogate)."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{str(path)!r} cannot be a file name: {problem}; give a valid path")


class PathChangedError(UnusablePathError):
    """A path changed while a tool used it: a symlink appeared where the checked path had
    none, or a link was swapped while it was being resolved."""

    def __init__(self, path: Path | str, detail: str) -> None:
        super().__init__(f"{path} changed during the call ({detail}); nothing was read or "
                         "written through it; check what is changing it and try again")
        self.path = Path(path)


def resolve(path: Path | str) -> Path:
    """``os.path.realpath`` of an absolute path, retried when a link changes while it is being
    resolved (``readlink`` then fails with EINVAL); :class:`PathChangedError` if it keeps
    changing, :class:`BadPathError` for text that cannot be a file name."""
    error: OSError | None = None
    for _ in range(RESOLVE_TRIES):
        try:
            return Path(os.path.realpath(path))
        except OSError as exc:
            error = exc
        except ValueError as exc:  # embedded NUL; UnicodeEncodeError for a lone surrogate
            raise BadPathError(path, str(exc)) from None
    raise PathChangedError(path, f"resolving it failed {RESOLVE_TRIES} times, last with "
                                 f"{type(error).__name__}: {error}")


def kind_of(mode: int) -> str:
    """What a file type is called in messages."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


def _changed(path: Path, exc: OSError) -> PathChangedError:
    return PathChangedError(path, "a symlink appeared on it")


def open_directory(path: Path) -> int:
    """A descriptor of the directory at the resolved absolute ``path``, opened one component
    at a time without following symlinks. FileNotFoundError and NotADirectoryError are
    raised as they are; a symlink on the way raises :class:`PathChangedError`."""
    fd, missing = walk_existing(path)
    if missing:
        os.close(fd)
        raise FileNotFoundError(errno.ENOENT, "no such directory", str(path))
    return fd


def walk_existing(path: Path) -> tuple[int, list[str]]:
    """The descriptor of the deepest existing directory on the resolved absolute ``path``,
    and the names below it that do not exist yet (to be created with ``mkdir(dir_fd=)``)."""
    if not path.is_absolute():
        raise ValueError(f"{path} is not absolute")
    fd = os.open(path.anchor, DIR_FLAGS)
    parts = list(path.parts[1:])
    try:
        while parts:
            try:
                child = os.open(parts[0], DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                break
            except OSError as exc:
                if exc.errno == errno.ENOTDIR:  # Linux says so for a symlink, too
                    entry = lstat_at(fd, parts[0])
                    if entry is not None and stat.S_ISLNK(entry.st_mode):
                        raise _changed(path, exc) from exc
                    where = Path(path.anchor, *path.parts[1:len(path.parts) - len(parts) + 1])
                    raise NotADirectoryError(errno.ENOTDIR, "is a file, not a directory",
                                             str(where)) from exc
                if exc.errno in _CHANGED:
                    raise _changed(path, exc) from exc
                raise
            os.close(fd)
            fd = child
            parts.pop(0)
    except BaseException:
        os.close(fd)
        raise
    return fd, parts


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """The entry ``name`` in the directory, not following a symlink; None when absent."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def open_regular_at(dir_fd: int, name: str, path: Path, flags: int = os.O_RDONLY
                    ) -> tuple[int, os.stat_result]:
    """Open the regular file ``name`` of a directory without following a symlink and without
    blocking; returns the descriptor and its ``fstat``. A symlink raises
    :class:`PathChangedError`; anything but a regular file raises :class:`SpecialFileError`
    before it is opened (and again if it became one in between)."""
    before = lstat_at(dir_fd, name)
    if before is None:
        raise FileNotFoundError(errno.ENOENT, "no such file", str(path))
    if stat.S_ISLNK(before.st_mode):
        raise PathChangedError(path, "it is a symlink now, and was resolved before")
    if not stat.S_ISREG(before.st_mode):
        raise SpecialFileError(path, before.st_mode)
    try:
        fd = os.open(name, flags | FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in _CHANGED:
            raise _changed(path, exc) from exc
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise SpecialFileError(path, st.st_mode)
    return fd, st


def open_regular(path: Path, flags: int = os.O_RDONLY) -> tuple[int, os.stat_result]:
    """:func:`open_regular_at` for a resolved absolute path."""
    dir_fd = open_directory(path.parent)
    try:
        return open_regular_at(dir_fd, path.name, path, flags)
    finally:
        os.close(dir_fd)


def same_directory(dir_fd: int, path: Path) -> bool:
    """Whether ``path`` (resolved, walked without following symlinks) is still the directory
    held open as ``dir_fd`` (it was not moved or replaced). Raises OSError if it is gone."""
    fd = open_directory(path)
    try:
        a, b = os.fstat(fd), os.fstat(dir_fd)
    finally:
        os.close(fd)
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


class SpecialFileError(ZpiError):
    """A FIFO, socket, device or directory where a regular file was expected; refused without
    opening it (a FIFO would block, a device could have side effects)."""

    def __init__(self, path: Path, mode: int) -> None:
        self.path, self.mode = Path(path), mode
        self.kind = kind_of(mode)
        super().__init__(f"{path} is {self.kind}, not a regular file; file tools only read and "
                         "write regular files")
