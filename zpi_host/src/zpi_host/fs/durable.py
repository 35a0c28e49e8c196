"""Writing bytes out whole and making a new directory entry durable: what the file commit
engine and the transcript's appends share."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (``os.write`` may take fewer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def fsync_dir(path: Path) -> None:
    """fsync the directory ``path`` (a file just created in it survives a crash); a file
    system that cannot sync a directory is left as it is."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


__all__ = ["fsync_dir", "write_all"]
