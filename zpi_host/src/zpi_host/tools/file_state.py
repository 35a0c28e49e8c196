"""What the session has read: the guard that stops write and edit from clobbering a file the
model has not seen, or one that changed on disk since it was read.

One :class:`FileReadState` is shared by the read, write and edit tools of a session. Paths are
keyed by their real absolute path, so a file read through a symlink or a relative path is the
same file when written through another spelling.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .base import ToolFailure

if TYPE_CHECKING:
    from ..fs.files import FileFingerprint


class FileStateError(ToolFailure):
    """A write or edit refused because of what the session has (not) read."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message, {"path": str(path)})
        self.path = path


class FileNotReadError(FileStateError):
    """The file exists but was never read in this session."""


class FileChangedError(FileStateError):
    """The file changed (or vanished) on disk since the session read it."""


def _key(path: Path | str) -> Path:
    """The real absolute path (the tools pass paths already resolved, which stay as they are;
    one that keeps changing while resolved is keyed as written)."""
    from ..fs.nofollow import UnusablePathError, resolve

    absolute = Path(os.path.abspath(path))
    try:
        return resolve(absolute)
    except UnusablePathError:
        return absolute


class FileReadState:
    """Fingerprints of the files read in one session, by real absolute path. Safe to use from
    parallel read calls (one lock around the map; fingerprints are immutable)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reads: dict[Path, FileFingerprint] = {}

    def record(self, path: Path | str, fingerprint: FileFingerprint) -> None:
        """Remember that ``path`` was read (or written) and looked like ``fingerprint``."""
        with self._lock:
            self._reads[_key(path)] = fingerprint

    def get(self, path: Path | str) -> FileFingerprint | None:
        with self._lock:
            return self._reads.get(_key(path))

    def forget(self, path: Path | str) -> None:
        with self._lock:
            self._reads.pop(_key(path), None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._reads)

    def check_fresh(
        self, path: Path | str, current: FileFingerprint | None = None
    ) -> FileFingerprint:
        """Raise unless ``path`` was read in this session and is unchanged since; returns the
        recorded fingerprint. ``current`` is the on-disk fingerprint if the caller already has
        it (saves a second read and keeps the check consistent with the bytes it holds)."""
        recorded = self.get(path)
        if recorded is None:
            raise FileNotReadError(
                f"file {path} has not been read in this session; read it first", Path(path)
            )
        if current is None:
            try:
                from ..fs.files import FileFingerprint

                current = FileFingerprint.of(path)
            except FileNotFoundError:
                raise FileChangedError(
                    f"file {path} was deleted since it was read; check what happened, or "
                    "write it anew", Path(path),
                ) from None
        if not recorded.same_content(current):
            raise FileChangedError(
                f"file {path} changed on disk since it was read "
                f"({recorded.describe_change(current)}); read it again", Path(path),
            )
        return recorded
