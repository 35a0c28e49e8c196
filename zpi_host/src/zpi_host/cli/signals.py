"""SIGINT and SIGTERM during ``zpi-host run``.

The first signal aborts the run cleanly: the run's cancel scope is cancelled, bash process
groups get TERM then KILL, calls in flight are recorded as interrupted, the session ends and the
transcript is closed; the command then exits 130 (SIGINT) or 143 (SIGTERM). A second signal
exits at once (same code): every tracked process group gets SIGKILL, and the transcript, whose
records are each one complete write, stays readable; the next resume closes the calls it left
open. Never a traceback.

The handler is a plain ``signal.signal`` handler, not an event-loop one, so a second Ctrl-C
works even when the loop is stuck in a blocking call.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

HANDLED = (signal.SIGINT, signal.SIGTERM)


def exit_code(signum: int) -> int:
    """The shell's convention: 128 + the signal's number (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + signum


def force_exit(signum: int) -> None:
    """Kill every process group the host started and leave now, without cleanup."""
    from ..process_groups import kill_all

    kill_all()
    name = signal.Signals(signum).name
    os.write(2, f"zpi-host: {name} again: exiting now; tool processes were killed, the "
                "session can be resumed\n".encode())
    os._exit(exit_code(signum))


class RunSignals:
    """Catches SIGINT and SIGTERM while active (a context manager, entered inside the event
    loop). ``on_first`` says what the first signal does now; it runs in the event loop."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._action: Callable[[], None] | None = None
        self._loop: Any = None
        self._previous: dict[int, Any] = {}

    def on_first(self, action: Callable[[], None] | None) -> None:
        """What the first signal does from now on (None: only remember it)."""
        self._action = action

    @property
    def code(self) -> int | None:
        """The exit code a received signal asks for, or None."""
        return None if self.received is None else exit_code(self.received)

    def __enter__(self) -> RunSignals:
        import asyncio

        self._loop = asyncio.get_running_loop()
        for signum in HANDLED:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None:
            force_exit(signum)
        self.received = signum
        # said here, not in the loop: a host stuck in a blocking call still tells the user
        # (os.write: no buffered stream is re-entered from the handler)
        name = signal.Signals(signum).name
        with contextlib.suppress(OSError):
            os.write(2, f"zpi-host: {name}: stopping the run (again to exit at once)\n"
                     .encode())
        self._loop.call_soon_threadsafe(self._first)

    def _first(self) -> None:
        if self._action is not None:
            self._action()
