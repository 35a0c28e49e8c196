"""SIGINT and SIGTERM during ``zpi-host run``.

The first signal aborts the run cleanly: the run's cancel scope is cancelled, bash process
groups get TERM then KILL, calls in flight are recorded as interrupted, the session ends and the
transcript is closed; the command then exits 130 (SIGINT) or 143 (SIGTERM). A second signal
exits at once (same code): every tracked process group gets SIGKILL, and the transcript, whose
records are each one complete write, stays readable; the next resume closes the calls it left
open. Never a traceback.

Two paths see each signal. The plain ``signal.signal`` handler (not an event-loop one) runs in
the main thread between bytecodes; CPython calls it only when the main thread runs Python code.
A signal that lands after the main thread's last check and before it enters a blocking system
call (the read of a FIFO nobody writes, a lock, a socket) is recorded by the C-level handler,
but its Python handler waits until that call returns: possibly never. So a watcher thread also
reads the signal wakeup fd, which the C-level handler writes at delivery, whatever the main
thread is doing: the first signal is acknowledged and acted on, and the second exits, even
when the main thread never runs again. Each path counts the signals it saw; a signal both see
counts once, since each acts on its own count.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from ..support.process_groups import kill_all

HANDLED = (signal.SIGINT, signal.SIGTERM)


def exit_code(signum: int) -> int:
    """The shell's convention: 128 + the signal's number (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + signum


def force_exit(signum: int) -> None:
    """Kill every process group the host started and leave now, without cleanup (from any
    thread: nothing here imports or takes a lock the main thread may hold)."""
    kill_all()
    name = signal.Signals(signum).name
    os.write(2, f"zpi-host: {name} again: exiting now; tool processes were killed, the "
                "session can be resumed\n".encode())
    os._exit(exit_code(signum))


class RunSignals:
    """Catches SIGINT and SIGTERM while active (a context manager, entered inside the event
    loop, in the main thread). ``on_first`` says what the first signal does now; it runs in
    the event loop."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._action: Callable[[], None] | None = None
        self._loop: Any = None
        self._previous: dict[int, Any] = {}
        self._first_claimed = threading.Lock()  # a one-shot flag both paths can test
        self._handled = 0  # signals the Python handler saw
        self._woken = 0  # signals the watcher saw
        self._wakeup: int | None = None  # the write end given to signal.set_wakeup_fd
        self._previous_wakeup = -1
        self._watcher: threading.Thread | None = None

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
        self._watch()
        for signum in HANDLED:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()
        self._unwatch()

    def _watch(self) -> None:
        """Start the watcher thread on a fresh wakeup fd (the previous one, e.g. asyncio's
        while a prompt handles SIGWINCH, still gets the other signals)."""
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        try:
            self._previous_wakeup = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        except ValueError:  # not the main thread: only the Python handler works
            os.close(read_end)
            os.close(write_end)
            return
        self._wakeup = write_end
        self._watcher = threading.Thread(target=self._read_wakeups, args=(read_end,),
                                         name="zpi-signals", daemon=True)
        self._watcher.start()

    def _unwatch(self) -> None:
        if self._wakeup is None or self._watcher is None:
            return
        current = signal.set_wakeup_fd(self._previous_wakeup)
        if current != self._wakeup:  # replaced meanwhile (asyncio's add_signal_handler)
            signal.set_wakeup_fd(current)
        os.close(self._wakeup)  # the watcher reads the end of the file and ends
        self._watcher.join(timeout=5)
        self._wakeup = self._watcher = None

    def _read_wakeups(self, read_end: int) -> None:
        ours = {int(s) for s in HANDLED}
        try:
            while chunk := os.read(read_end, 64):
                for signum in chunk:
                    if signum in ours:
                        self._woken += 1
                        self._signalled(signum, self._woken)
                    elif self._previous_wakeup >= 0:
                        with contextlib.suppress(OSError):
                            os.write(self._previous_wakeup, bytes((signum,)))
        except OSError:
            pass
        finally:
            os.close(read_end)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self._handled += 1
        self._signalled(signum, self._handled)

    def _signalled(self, signum: int, count: int) -> None:
        """The ``count``-th signal one path saw: the second exits; the first is acted on once,
        by whichever path sees it first."""
        if count > 1:
            force_exit(signum)
        if not self._first_claimed.acquire(blocking=False):
            return  # the other path has it (never wait here: this may be a signal handler)
        self.received = signum
        # said here, not in the loop: a host stuck in a blocking call still tells the user
        # (os.write: no buffered stream is re-entered from the handler)
        name = signal.Signals(signum).name
        with contextlib.suppress(OSError):  # on a terminal, over the spinner: cleared first
            clear = "\r\x1b[K" if os.isatty(2) else ""
            os.write(2, f"{clear}zpi-host: {name}: stopping the run (again to exit at once)\n"
                     .encode())
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing left to stop
            self._loop.call_soon_threadsafe(self._first)

    def _first(self) -> None:
        if self._action is not None:
            self._action()
