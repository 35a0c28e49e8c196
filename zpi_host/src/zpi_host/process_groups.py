"""The process groups this host started and has not stopped yet (bash commands).

A tool stops its own group when it ends or is cancelled (TERM, then KILL after a grace
period). The registry exists for the one case where there is no time for that: a forced exit
(a second Ctrl-C) kills every group still listed before the process goes.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

_live: set[int] = set()


def track(pgid: int) -> None:
    """``pgid`` leads a group started by this process (``start_new_session``)."""
    _live.add(pgid)


def untrack(pgid: int) -> None:
    """The group was stopped and its leader reaped."""
    _live.discard(pgid)


def live() -> frozenset[int]:
    return frozenset(_live)


def kill_all() -> None:
    """SIGKILL every tracked group now. Safe to call from a signal handler: no locks, no
    allocation beyond a copy of the set, errors ignored."""
    for pgid in tuple(_live):
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)


def group_alive(pgid: int) -> bool:
    """Whether the process group still has a running (non-zombie) member.

    ``killpg(pgid, 0)`` also succeeds for zombies waiting to be reaped by init, which may take
    a while in containers, so on Linux the process table is read instead."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        return True
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            stat = (proc / entry.name / "stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def process_alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (this one counts as alive; a zombie does not:
    it was killed and only waits to be reaped)."""
    if pid == os.getpid():
        return True
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    except OverflowError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[:1]
    except OSError:
        return True
    return state not in ([b"Z"], [b"X"])
