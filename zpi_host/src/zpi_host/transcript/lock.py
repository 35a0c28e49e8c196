"""One writer per session file: ``<file>.lock`` held with ``flock(LOCK_EX | LOCK_NB)``, and
a registry of the owners open in this process.

The kernel releases the lock when its holder dies, however it dies, so a crashed process never
leaves a session locked; the pid written inside is only for the error message. The lock file is
removed on release while still locked, so a process that opened the old file re-checks that
the path still names the file it locked, and tries again if not.

The registry maps a file's real path to its owner (weakly): a second owner in this process is
refused with a clear message before flock is even tried, and the session helpers find the
owner to append through (or to refuse, while it runs).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import TranscriptLockedError

if TYPE_CHECKING:
    from .store import SessionManager

LOCK_SUFFIX = ".lock"


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + LOCK_SUFFIX)


class FileLock:
    """The held lock of one session file; :meth:`release` (idempotent) gives it up."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, session_file: Path) -> FileLock:
        """Lock ``session_file`` or raise :class:`TranscriptLockedError` naming the holder."""
        path = lock_path(session_file)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _read_pid(fd)
                os.close(fd)
                raise TranscriptLockedError(session_file, pid,
                                            same_process=pid == os.getpid()) from None
            except BaseException:
                os.close(fd)
                raise
            try:
                current = os.stat(path)
            except FileNotFoundError:
                current = None
            if current is None or current.st_ino != os.fstat(fd).st_ino:
                os.close(fd)  # released and removed meanwhile: lock the new file
                continue
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            return cls(path, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------- owners

_owners: dict[str, weakref.ref[SessionManager]] = {}
# Re-entrant: a manager dropped without close() is released by a finaliser, which the garbage
# collector may run in this thread while the lock is held (a plain Lock would deadlock).
_owners_lock = threading.RLock()


def _key(path: Path) -> str:
    return os.path.realpath(path)


def open_owner(path: Path | str) -> SessionManager | None:
    """The SessionManager of ``path`` open for writing in this process, if any."""
    with _owners_lock:
        ref = _owners.get(_key(Path(path)))
    owner = ref() if ref is not None else None
    return owner if owner is not None and not owner.closed else None


def acquire(path: Path) -> FileLock:
    """Lock ``path`` for a new owner: refused if an owner in this process (or another) has it."""
    if open_owner(path) is not None:
        raise TranscriptLockedError(path, os.getpid(), same_process=True)
    return FileLock.acquire(path)


class OwnerHandles:
    """What an open owner must give back (its file descriptor and lock): kept apart from the
    manager, so a finaliser can release them when a manager is dropped without ``close()``."""

    __slots__ = ("fd", "key", "lock")

    def __init__(self, fd: int, lock: FileLock, path: Path) -> None:
        self.fd: int | None = fd
        self.lock = lock
        self.key = _key(path)

    def release(self) -> None:
        fd, self.fd = self.fd, None
        with _owners_lock:
            ref = _owners.get(self.key)
            owner = ref() if ref is not None else None
            if ref is not None and (owner is None or owner.closed):
                del _owners[self.key]
        try:
            if fd is not None:
                os.close(fd)
        finally:
            self.lock.release()


def register_owner(handles: OwnerHandles, owner: SessionManager) -> None:
    with _owners_lock:
        _owners[handles.key] = weakref.ref(owner)
