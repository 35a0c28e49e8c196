"""Temporary files of atomic writes: named so their owner is known, and swept once the owner
is gone.

:mod:`zpi_host.fs.files` writes each new content to ``.<name>.zpi-<pid>-<hex>.tmp`` beside its
target. A host killed mid-commit can leave one; the next commit into that directory and
resuming the session (``session.housekeeping.sweep_touched_folders``) remove those whose
process has ended.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path
from typing import Final

from ..support.process_groups import process_alive
from . import nofollow

__all__ = ["TEMP_PATTERN", "sweep_directory", "sweep_stale_temps", "temp_name"]

#: ``.<name>.zpi-<pid>-<hex>.tmp``: the pid of the host that wrote it says whose it is.
TEMP_PATTERN: Final = re.compile(r"\..*\.zpi-(?P<pid>[0-9]+)-[0-9a-f]{8}\.tmp", re.DOTALL)
_NAME_MAX: Final = 255


def temp_name(target: str, pid: int | None = None) -> str:
    """A fresh temporary name beside ``target`` owned by this process (the target's name is
    shortened when the whole would be too long for the filesystem)."""
    tail = f".zpi-{os.getpid() if pid is None else pid}-{os.urandom(4).hex()}.tmp"
    name = target
    while name and len(os.fsencode(f".{name}{tail}")) > _NAME_MAX:
        name = name[:-1]
    return f".{name}{tail}"



def sweep_stale_temps(directory: Path | str) -> list[Path]:
    """Remove the temporary files of atomic writes left in ``directory`` by hosts that were
    killed mid-commit; returns the paths removed.

    Only names of the form ``.<name>.zpi-<pid>-<hex>.tmp`` whose process is gone are removed,
    and only regular files owned by this user; never one of a live process (this one
    included), never through a symlink (the directory is resolved once and opened without
    following any). Never raises: an unreadable or vanished directory sweeps nothing."""
    try:
        real = nofollow.resolve(Path(os.path.abspath(directory)))
        fd = nofollow.open_directory(real)
    except (OSError, nofollow.UnusablePathError):
        return []
    try:
        return sweep_directory(fd, real)
    finally:
        os.close(fd)


def sweep_directory(dir_fd: int, directory: Path) -> list[Path]:
    """Sweep the directory open as ``dir_fd`` (``directory`` names it in the result)."""
    removed: list[Path] = []
    try:
        with os.scandir(dir_fd) as entries:
            names = [e.name for e in entries if ".zpi-" in e.name]
    except OSError:
        return removed
    for name in names:
        match = TEMP_PATTERN.fullmatch(name)
        if match is None or process_alive(int(match["pid"])):
            continue
        with contextlib.suppress(OSError):
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
                os.unlink(name, dir_fd=dir_fd)
                removed.append(directory / name)
    return removed
