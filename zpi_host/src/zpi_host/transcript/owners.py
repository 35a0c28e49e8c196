"""The process's registry of open transcript owners: a file's real path to its
:class:`~.store.SessionManager` (weakly), the file lock a new owner takes, and the handles a
finaliser gives back when a manager is dropped without ``close()``. Owners are typed loosely:
:mod:`.store`, which defines them, is above this module."""

from __future__ import annotations

import os
import threading
import weakref
from pathlib import Path
from typing import Any

from .errors import TranscriptLockedError
from .lock import FileLock

__all__ = ["OwnerHandles", "acquire", "open_owner", "register_owner"]

# The registry maps a file's real path to its owner (weakly): a second owner in this process is
# refused with a clear message before flock is even tried, and the session helpers find the
# owner to append through (or to refuse, while it runs).

_owners: dict[str, weakref.ref[Any]] = {}
# Re-entrant: a manager dropped without close() is released by a finaliser, which the garbage
# collector may run in this thread while the lock is held (a plain Lock would deadlock).
_owners_lock = threading.RLock()


def _key(path: Path) -> str:
    return os.path.realpath(path)


def open_owner(path: Path | str) -> Any:
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


def register_owner(handles: OwnerHandles, owner: Any) -> None:
    with _owners_lock:
        _owners[handles.key] = weakref.ref(owner)
