"""The process groups this host started and has not stopped yet (bash commands).

A tool stops its own group when it ends or is cancelled (TERM, then KILL after a grace
period). The registry exists for the one case where there is no time for that: a forced exit
(a second Ctrl-C) kills every group still listed before the process goes.
"""

from __future__ import annotations

import contextlib
import os
import signal

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
