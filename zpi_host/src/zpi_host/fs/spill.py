"""The spill folder: where a session keeps tool output that did not fit the model's context.

Each session gets a private folder of its own under the agent dir, ``<agent dir>/spill/<session
id>/`` (an in-memory session: ``<session id>.pid<pid>``), so the automatic read rule that lets
the model read its spill files covers that folder only. A fixed folder in a world-writable
place would let another user plant a symlink there and turn that rule into read-anywhere.

The folder is made on first use, mode 0700, and is only ever entered through file
descriptors opened with ``O_NOFOLLOW``: the spill root must be owned by this user and not
writable by others (or be a sticky folder such as ``/tmp``, where others cannot move what is
ours), the session folder owned by this user and private (no group or other bits). Anything
else is refused with :class:`SpillFolderError` and the output is then not saved (the tool
result says why). Files are created with ``O_EXCL | O_NOFOLLOW``, mode 0600.

Clean-up (``session.housekeeping.prune_spill``, run when a session is assembled): the folder
of a saved session goes when the session is deleted (``delete_session``) or when nothing was
spilled into it for ``SPILL_KEEP_DAYS``; the folder of an in-memory session goes at
``dispose()``, or, after a crash, once its process is gone; a folder whose session no longer
exists goes too.
Stdlib only: cheap to import.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from ..errors import ZpiError

__all__ = ["SPILL_FOLDER_NAME", "SPILL_KEEP_DAYS", "SpillFolderError", "copy_spill_files",
           "create_spill_file", "open_spill_file", "open_spill_root", "remove_spill_entry",
           "remove_spill_folder", "spill_folder", "spill_root"]

#: Days a saved session's spill folder is kept after the last output was spilled into it.
SPILL_KEEP_DAYS = 7
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
SPILL_FOLDER_NAME = re.compile(rf"(?P<id>{_UUID})(?:\.pid(?P<pid>[0-9]+))?")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class SpillFolderError(ZpiError):
    """The spill folder is not safe to write to (a symlink, another owner, open to others)."""


def spill_root(agent_dir: Path) -> Path:
    return Path(agent_dir) / "spill"


def spill_folder(agent_dir: Path, session_id: str, *, in_memory: bool = False) -> Path:
    """The private spill folder of one session (not created here: on first use)."""
    name = f"{session_id}.pid{os.getpid()}" if in_memory else session_id
    return spill_root(agent_dir) / name


def _check(fd: int, path: Path, *, private: bool) -> None:
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode):
        raise SpillFolderError(f"spill folder {path} is not a folder")
    if not private and info.st_mode & stat.S_ISVTX and info.st_uid in (0, os.geteuid()):
        return  # a sticky folder such as /tmp: others cannot move or replace what is ours
    if info.st_uid != os.geteuid():
        raise SpillFolderError(f"spill folder {path} belongs to user {info.st_uid}, not to you "
                               f"({os.geteuid()}); remove it, the host makes a new one")
    mask = 0o077 if private else 0o022
    if info.st_mode & mask:
        what = "readable or writable by other users" if private else "writable by other users"
        raise SpillFolderError(f"spill folder {path} is {what} (mode "
                               f"{stat.S_IMODE(info.st_mode):o}); run chmod 700 on it or "
                               "remove it")


def _open_dir(name: str | Path, path: Path, *, parent_fd: int | None, private: bool,
              create: bool) -> int:
    """Open (and make, 0700) one folder without following a symlink, then check it."""
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=parent_fd)
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if os.path.islink(path):
            raise SpillFolderError(f"spill folder {path} is a symlink; the host never writes "
                                   "through one: remove it") from None
        raise SpillFolderError(f"cannot open spill folder {path}: {exc.strerror or exc}"
                               ) from None
    try:
        _check(fd, path, private=private)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_spill_folder(folder: Path) -> int:
    """A file descriptor of ``folder`` (made if missing), checked as the module doc says."""
    folder = Path(folder)
    parent = folder.parent
    with contextlib.suppress(OSError):
        parent.parent.mkdir(parents=True, exist_ok=True)
    root_fd = _open_dir(str(parent), parent, parent_fd=None, private=False, create=True)
    try:
        return _open_dir(folder.name, folder, parent_fd=root_fd, private=True, create=True)
    finally:
        os.close(root_fd)


def create_spill_file(folder: Path, prefix: str, *, name: str | None = None
                      ) -> tuple[Path, IO[bytes]]:
    """A new file ``<prefix>-<random>.log`` in the private ``folder``, open for writing;
    ``name``: that exact name instead (FileExistsError when it is taken)."""
    fd = open_spill_folder(folder)
    try:
        for _ in range(100):
            chosen = name if name is not None else f"{prefix}-{os.urandom(6).hex()}.log"
            try:
                file_fd = os.open(chosen, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                                  | os.O_CLOEXEC, 0o600, dir_fd=fd)
            except FileExistsError:
                if name is not None:
                    raise
                continue
            return folder / chosen, os.fdopen(file_fd, "wb")
        raise SpillFolderError(f"could not find a free file name in {folder}")
    finally:
        os.close(fd)


def open_spill_file(folder: Path, name: str) -> tuple[int, os.stat_result]:
    """A read descriptor of the file ``name`` of the private ``folder`` and its ``fstat``:
    no symlink followed, never blocking, regular files only (``fs.nofollow``'s rule:
    PathChangedError for a symlink, SpecialFileError for a FIFO or other special file;
    FileNotFoundError when it is absent). A name with a path separator is refused."""
    from .nofollow import UnusablePathError, open_regular_at

    path = Path(folder) / name
    if not name or "/" in name or name in (".", ".."):
        raise UnusablePathError(f"{name!r} is not a file name of the spill folder {folder}")
    fd = open_spill_folder(folder)
    try:
        return open_regular_at(fd, name, path)
    finally:
        os.close(fd)


def copy_spill_files(source: Path, target: Path, names: Iterable[str]) -> set[str]:
    """Copy the regular files ``names`` of the spill folder ``source`` into ``target`` (made
    and checked as for writing); a fork keeps the full output its history points at. Returns
    the names copied: a file that is gone, or not a regular file, is skipped."""
    root_fd = open_spill_root(source.parent)
    if root_fd is None:
        return set()
    try:
        src_fd = _open_dir(source.name, source, parent_fd=root_fd, private=True, create=False)
    except SpillFolderError:
        return set()
    finally:
        os.close(root_fd)
    copied: set[str] = set()
    dst_fd: int | None = None
    try:
        for name in names:
            try:
                in_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                                dir_fd=src_fd)
            except OSError:
                continue
            with os.fdopen(in_fd, "rb") as src:
                if not stat.S_ISREG(os.fstat(in_fd).st_mode):
                    continue
                if dst_fd is None:
                    dst_fd = open_spill_folder(target)
                out_fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                                 | os.O_CLOEXEC, 0o600, dir_fd=dst_fd)
                with os.fdopen(out_fd, "wb") as out:
                    shutil.copyfileobj(src, out)
            copied.add(name)
    finally:
        os.close(src_fd)
        if dst_fd is not None:
            os.close(dst_fd)
    return copied


def open_spill_root(root: Path) -> int | None:
    """The spill root, checked as for writing; None when it is missing or not safe (then
    nothing is removed through it)."""
    try:
        return _open_dir(str(root), root, parent_fd=None, private=False, create=False)
    except SpillFolderError:
        return None


def remove_spill_entry(name: str, root_fd: int) -> None:
    """Remove entry ``name`` of the spill root: a folder with its files (fd-based, does not
    follow symlinks), anything else is unlinked."""
    try:
        info = os.stat(name, dir_fd=root_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=root_fd, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=root_fd)


def remove_spill_folder(folder: Path) -> None:
    """Remove a spill folder and its files; never through a symlinked or foreign spill root
    (a symlink in the folder's place is only unlinked)."""
    folder = Path(folder)
    root_fd = open_spill_root(folder.parent)
    if root_fd is None:
        return
    try:
        remove_spill_entry(folder.name, root_fd)
    finally:
        os.close(root_fd)
