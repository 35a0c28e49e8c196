"""One writer per session file: ``<file>.lock`` held with ``flock(LOCK_EX | LOCK_NB)``.

The kernel releases the lock when its holder dies, however it dies, so a crashed process never
leaves a session locked; the pid written inside is only for the error message. The lock file is
removed on release while still locked, so a process that opened the old file re-checks that
the path still names the file it locked, and tries again if not.

The registry of the owners open in this process is :mod:`.store`'s, beside the
:class:`~.store.SessionManager` it holds; this module is below it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from .errors import TranscriptLockedError

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
