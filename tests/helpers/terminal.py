"""Run ``zpi-host`` on a real pseudo-terminal and read what its screen shows."""

from __future__ import annotations

import errno
import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Sequence
from pathlib import Path

#: bound on any wait, so a hang fails instead of blocking CI
WAIT = 30.0
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _take_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """A process whose stdin, stdout and stderr are one pseudo-terminal (80x24 unless told).
    ``output`` is everything it wrote, raw (escapes included)."""

    def __init__(self, argv: Sequence[str], *, cwd: Path, env: dict[str, str],
                 columns: int = 80, rows: int = 24) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        # a session of its own whose controlling terminal is this one: Ctrl-C is SIGINT
        self.process = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=slave,
                                        stdout=slave, stderr=slave, start_new_session=True,
                                        preexec_fn=_take_terminal)
        os.close(slave)
        self.raw = b""

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def read_until(self, pattern: str, timeout: float = WAIT) -> str:
        """Read until the screen text (escapes removed) matches ``pattern``."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text):
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                raise AssertionError(f"{pattern!r} never appeared; the screen:\n{self.text}")
        return self.text

    def wait_for_raw(self, marker: str, count: int, timeout: float = WAIT) -> None:
        """Read until the raw output holds ``marker`` ``count`` times (an escape sequence a
        program sends each time it is ready for input, say)."""
        deadline = time.monotonic() + timeout
        while self.output.count(marker) < count:
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                raise AssertionError(f"{marker!r} did not appear {count} times; the screen:\n"
                                     f"{self.text}")

    def finish(self, timeout: float = WAIT) -> int:
        """Read everything until the process ends; its exit code."""
        deadline = time.monotonic() + timeout
        while self._read(max(deadline - time.monotonic(), 0.01)):
            if time.monotonic() > deadline:
                break
        try:
            return self.process.wait(timeout=max(deadline - time.monotonic(), 1))
        finally:
            os.close(self.master)

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], min(timeout, 1.0))
        if not ready:
            return self.process.poll() is None
        try:
            chunk = os.read(self.master, 65536)
        except OSError as exc:  # EIO: the other side is closed
            if exc.errno == errno.EIO:
                return False
            raise
        if not chunk:
            return False
        self.raw += chunk
        return True

    @property
    def output(self) -> str:
        return self.raw.decode("utf-8", "replace")

    @property
    def text(self) -> str:
        """What was written, escapes removed, carriage returns kept."""
        return ESCAPE.sub("", self.output)

    @property
    def screen(self) -> list[str]:
        """The lines as a terminal leaves them: a carriage return starts the line over (the
        live display clears the line after each), so a status line leaves nothing behind."""
        lines: list[str] = []
        current = ""
        for token in re.split(r"(\r\n|\n|\r|\x1b\[K|\x1b\[[0-9;?]*[A-Za-z])",
                              self.output):
            if token in ("\n", "\r\n"):
                lines.append(current)
                current = ""
            elif token == "\r":  # the display always clears the line after one
                current = ""
            elif ESCAPE.fullmatch(token):
                continue
            else:
                current += token
        if current:
            lines.append(current)
        return lines
