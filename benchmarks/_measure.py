"""Shared measuring for the benchmarks: interleaved rounds, medians and spread, and the table.

Every benchmark compares zpi with a baseline measured in the same run. The two (or more)
sides run in alternating order round after round (A B, B A, A B, ...), so drift in the
machine's load hits both alike. A row reports the median of each side, the ratio of the
medians, and as the spread the lowest and highest ratio of the single rounds (each round's
zpi sample against the baseline sample taken next to it).

Each benchmark prints its rows as a small table and, for ``run_all.py``, one machine-readable
line per row: ``BENCH-ROW {json}``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

ROW_PREFIX = "BENCH-ROW "
#: a benchmark that cannot run here prints this, the reason, and exits 0 without rows
SKIP_PREFIX = "BENCH-SKIP "


def interleave(sides: Mapping[str, Callable[[], float]], rounds: int,
               warmup: int = 1) -> dict[str, list[float]]:
    """Call each side once per round, in alternating order; each call returns its sample
    (seconds, or any figure). ``warmup`` rounds run first and are not kept."""
    samples: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for index in range(warmup + rounds):
        order = names if index % 2 == 0 else names[::-1]
        for name in order:
            value = sides[name]()
            if index >= warmup:
                samples[name].append(value)
    return samples


async def ainterleave(sides: Mapping[str, Callable[[], Awaitable[float]]], rounds: int,
                      warmup: int = 1) -> dict[str, list[float]]:
    """:func:`interleave` for async sides (all in the same event loop)."""
    samples: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for index in range(warmup + rounds):
        order = names if index % 2 == 0 else names[::-1]
        for name in order:
            value = await sides[name]()
            if index >= warmup:
                samples[name].append(value)
    return samples


#: the launcher :class:`MeasuredProcess` runs: it forks, the child execs the command, and it
#: writes the child's pid, then its peak RSS (KiB), exit code, wall time and CPU time (user +
#: system, of the command and the children it waited for) to the fd it is given
_LAUNCHER = """
import os, sys, time
report = int(sys.argv[1])
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.close(report)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as exc:
        os.write(2, f"cannot run {sys.argv[2]}: {exc}\\n".encode())
        os._exit(127)
os.write(report, f"{pid}\\n".encode())
_, status, usage = os.wait4(pid, 0)
elapsed = time.perf_counter() - started
code = os.waitstatus_to_exitcode(status)
cpu = usage.ru_utime + usage.ru_stime
os.write(report, f"{usage.ru_maxrss} {code} {elapsed!r} {cpu!r}\\n".encode())
sys.exit(code if code >= 0 else 128 - code)
"""


@dataclass
class Finished:
    """What :meth:`MeasuredProcess.wait` found: exit code, peak RSS (bytes), wall and CPU
    time (seconds; CPU time is what a loaded machine disturbs least)."""

    returncode: int
    peak_rss: int
    seconds: float
    cpu_seconds: float


class MeasuredProcess:
    """A command whose own peak RSS and wall time are measured, through a small launcher.

    ``os.wait4`` on a child of this (large) benchmark process reports the benchmark's peak, not
    the child's: subprocess starts children with vfork, and Linux carries the high-water mark
    of the address space a process had before ``exec`` into its ``ru_maxrss``. The launcher is
    a fresh ``python -I -S`` of a few MiB that forks the command itself, so the command's
    figure starts from the launcher's few MiB. ``popen`` is passed to :class:`subprocess.Popen`
    (cwd, env, stdin, stdout, stderr); the command inherits them through the launcher.
    """

    def __init__(self, command: Sequence[str], **popen: Any) -> None:
        read, write = os.pipe()
        try:
            self.launcher = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(write), *command],
                pass_fds=(write,), **popen)
        finally:
            os.close(write)
        self._report = os.fdopen(read, encoding="ascii")
        first = self._report.readline()
        self.pid = int(first) if first.strip() else None

    def kill(self) -> None:
        """Kill the command (the launcher then reports it as killed)."""
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def wait(self) -> Finished:
        line = self._report.readline().split()
        self._report.close()
        launcher_code = self.launcher.wait()
        if len(line) != 4:
            raise RuntimeError(f"the measuring launcher failed (exit {launcher_code})")
        peak_kib, code, seconds, cpu = line
        return Finished(int(code), int(peak_kib) * 1024, float(seconds), float(cpu))


def timed(fn: Callable[[], Any]) -> Callable[[], float]:
    """A side that returns the seconds ``fn()`` took."""
    def run() -> float:
        started = time.perf_counter()
        fn()
        return time.perf_counter() - started
    return run


def atimed(fn: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[float]]:
    """A side that returns the seconds ``await fn()`` took."""
    async def run() -> float:
        started = time.perf_counter()
        await fn()
        return time.perf_counter() - started
    return run


@dataclass(frozen=True)
class Row:
    """One line of the table: zpi against its baseline."""

    measure: str
    zpi: float            # median, in ``unit``
    baseline: float       # median, in ``unit``
    unit: str
    ratio: float          # zpi median / baseline median
    op: str               # "<=" or ">=" (the ratio against the target); "" = no target
    target: float | None
    low: float            # lowest single-round ratio
    high: float           # highest single-round ratio
    rounds: int
    note: str = ""

    @property
    def met(self) -> bool | None:
        if self.target is None or not self.op:
            return None
        return self.ratio <= self.target if self.op == "<=" else self.ratio >= self.target

    def verdict(self) -> str:
        return {None: "info", True: "met", False: "MISSED"}[self.met]

    def target_text(self) -> str:
        return f"{self.op} {self.target:g}" if self.target is not None and self.op else "-"


def compare(measure: str, zpi: Sequence[float], baseline: Sequence[float], *, unit: str = "ms",
            scale: float = 1000.0, op: str = "<=", target: float | None = None,
            note: str = "") -> Row:
    """A row from paired samples (same length, taken round by round). ``scale`` turns the
    samples into ``unit`` (seconds -> ms by default)."""
    if not zpi or len(zpi) != len(baseline):
        raise ValueError(f"{measure}: need paired samples, got {len(zpi)} and {len(baseline)}")
    per_round = [z / b for z, b in zip(zpi, baseline, strict=True)]
    z_med, b_med = statistics.median(zpi), statistics.median(baseline)
    return Row(measure, z_med * scale, b_med * scale, unit, z_med / b_med, op, target,
               min(per_round), max(per_round), len(zpi), note)


def emit(rows: Iterable[Row], title: str = "") -> list[Row]:
    """Print ``rows`` as a table and as machine-readable lines; returns them."""
    rows = list(rows)
    print()
    print(format_table(rows, title))
    for row in rows:
        print(ROW_PREFIX + json.dumps(asdict(row)), flush=True)
    return rows


def parse_rows(text: str) -> list[Row]:
    """The rows printed by :func:`emit` in ``text``."""
    return [Row(**json.loads(line[len(ROW_PREFIX):])) for line in text.splitlines()
            if line.startswith(ROW_PREFIX)]


def _num(value: float) -> str:
    if value != value:  # nan
        return "n/a"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def format_table(rows: Sequence[Row], title: str = "") -> str:
    header = ("measure", "zpi", "baseline", "ratio", "target", "verdict", "spread (rounds)")
    lines = [(r.measure, f"{_num(r.zpi)} {r.unit}", f"{_num(r.baseline)} {r.unit}",
              f"{r.ratio:.2f}x", r.target_text(), r.verdict(),
              f"{r.low:.2f}-{r.high:.2f}x ({r.rounds})") for r in rows]
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h)
              for i, h in enumerate(header)]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True)))

    out = [title] if title else []
    out += [fmt(header), fmt(["-" * w for w in widths]), *(fmt(line) for line in lines)]
    notes = [f"  {r.measure}: {r.note}" for r in rows if r.note]
    if notes:
        out += ["notes:", *notes]
    return "\n".join(out)


def machine() -> str:
    """One line about where the figures were taken (they mean little without it)."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
            f"{os.cpu_count()} CPUs, load average {load}")


def begin(name: str, quick: bool) -> None:
    """Print what runs where, and point ``ZPI_AGENT_DIR`` at a fresh temporary directory
    (removed at exit): no benchmark reads or writes the user's ``~/.zpi``."""
    agent = tempfile.mkdtemp(prefix="zpi-bench-agent-")
    atexit.register(shutil.rmtree, agent, ignore_errors=True)
    os.environ["ZPI_AGENT_DIR"] = agent
    print(f"== {name}{' (quick: figures are not meaningful)' if quick else ''}; {machine()}",
          flush=True)


#: an option of a benchmark: (flag, argparse keywords)
Option = tuple[str, dict[str, Any]]


def arguments(name: str, doc: str | None, *, rounds: int, quick: Mapping[str, Any],
              options: Sequence[Option] = (),
              minimum: Mapping[str, float] | None = None) -> argparse.Namespace:
    """The command line every benchmark shares: its own ``options``, ``--rounds`` and
    ``--quick`` (a small run that only checks: the values in ``quick`` replace the parsed ones).
    ``minimum`` bounds values (``{"turns": 2}``; rounds are at least 1). Then :func:`begin`."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag, keywords in options:
        parser.add_argument(flag, **keywords)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--quick", action="store_true", help="a small run that only checks")
    args = parser.parse_args()
    if args.quick:
        for key, value in quick.items():
            setattr(args, key, value)
    for key, least in {"rounds": 1, **(minimum or {})}.items():
        if getattr(args, key) < least:
            parser.error(f"--{key.replace('_', '-')} must be at least {least}")
    begin(name, args.quick)
    return args
