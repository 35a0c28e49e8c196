"""The process groups this host started and has not stopped yet (bash commands).

A tool stops its own group when it ends or is cancelled (TERM, then KILL after a grace
period). The registry exists for the one case where there is no time for that: a forced exit
(a second Ctrl-C) kills every group still listed before the process goes, and every group a
child of the host leads (one started a moment ago may not be listed yet).
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
    """SIGKILL every tracked group now, and every group a child of this process leads (a
    command started a moment ago, before its tool could track it). Safe to call from a
    signal handler or another thread: no locks, errors ignored."""
    for pgid in {*_live, *_groups_of_children()}:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)


def _groups_of_children() -> set[int]:
    """The process groups led by this process's children (each started in its own session),
    never this process's own group. Linux (``/proc/self/task/*/children``); elsewhere none."""
    leaders: set[int] = set()
    try:
        own = os.getpgid(0)
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return leaders
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children", "rb") as listing:
                children = [int(pid) for pid in listing.read().split()]
        except (OSError, ValueError):
            continue
        for pid in children:
            with contextlib.suppress(OSError):
                if os.getpgid(pid) == pid != own:
                    leaders.add(pid)
    return leaders


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
