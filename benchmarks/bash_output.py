"""Benchmark: the bash tool on a command printing 500 MB.

Checks the two promises of bounded capture: the host's memory does not grow with the output
(target: peak RSS growth <= 64 MiB, sampled every 5 ms) and the spill file holds every byte.
The row is the tool's wall time against the same command run with its output sent to
/dev/null (``subprocess.run``), alternating, for information.

Run: ``python benchmarks/bash_output.py [--mb 500] [--rounds 3] [--quick]``. Exits 0 when the
output was captured correctly (the memory target is reported, not enforced); 1 if the tool
failed or the spill file is incomplete.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
from _measure import arguments, compare, emit, interleave

from zpi_host.tools.base import ToolContext, ToolResult, ToolUpdate
from zpi_host.tools.bash import prepare_bash_args, run_bash

TOTAL_BYTES = 500_000_000
LINE = "a" * 99  # 100 bytes with the newline
TARGET_MIB = 64
MIB = 1024 * 1024


def _status_kib(field: str) -> int | None:
    """A ``VmRSS``/``VmHWM`` figure from /proc/self/status, in KiB (None off Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


class RssSampler:
    """Samples the current RSS every few milliseconds: the high-water mark may already be
    above the baseline from earlier work, so growth is measured from live samples."""

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.peak_kib = _status_kib("VmRSS") or 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = _status_kib("VmRSS")
            if rss is not None and rss > self.peak_kib:
                self.peak_kib = rss
            self._stop.wait(self.interval)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def run_tool(spill_dir: Path, command: str) -> tuple[ToolResult, int, float]:
    updates: list[ToolUpdate] = []
    ctx = ToolContext(cwd=spill_dir, call_id="bench", spill_dir=spill_dir,
                      on_update=updates.append)
    args = prepare_bash_args({"command": command, "timeout": 600})
    started = time.perf_counter()
    result = await run_bash(args, ctx)
    return result, len(updates), time.perf_counter() - started


def main() -> int:
    args = arguments("bash_output", __doc__, rounds=3, quick={"mb": 5, "rounds": 1},
                     options=[("--mb", {"type": int, "default": TOTAL_BYTES // 1_000_000,
                                        "help": "megabytes the command prints (default 500)"})],
                     minimum={"mb": 1})
    total, rounds = args.mb * 1_000_000, args.rounds
    command = f"yes {LINE} | head -c {total}"
    anyio.run(lambda: anyio.sleep(0))  # the event loop's one-off allocations are not counted
    growth: list[float] = []
    outcome: list[tuple[ToolResult, int]] = []

    def tool() -> float:
        with tempfile.TemporaryDirectory(prefix="zpi-bench-") as tmp:
            spill_dir = Path(tmp)
            rss_before = _status_kib("VmRSS") or 0
            with RssSampler() as sampler:
                result, _updates, seconds = anyio.run(run_tool, spill_dir, command)
            growth.append((sampler.peak_kib - rss_before) / 1024)
            path = (result.details or {}).get("full_output_path")
            outcome.append((result, Path(path).stat().st_size if path else 0))
        return seconds

    def baseline() -> float:
        started = time.perf_counter()
        subprocess.run(["/bin/bash", "-c", command], stdout=subprocess.DEVNULL, check=True)
        return time.perf_counter() - started

    samples = interleave({"zpi": tool, "baseline": baseline}, rounds, warmup=0)
    for result, spill_size in outcome:
        details = dict(result.details or {})
        if result.is_error or details.get("total_bytes") != total or spill_size != total:
            print(f"the tool lost output: error={result.is_error}, captured "
                  f"{details.get('total_bytes')}, spill file {spill_size} of {total} bytes")
            return 1
    print(f"command: {command[:40]}... ({total:,} bytes); every byte in the spill file; "
          f"peak RSS growth {max(growth):.1f} MiB (target <= {TARGET_MIB} MiB: "
          f"{'met' if max(growth) <= TARGET_MIB else 'NOT met'})")
    emit([compare(f"bash_output: {total // 1_000_000} MB through the bash tool",
                  samples["zpi"], samples["baseline"], op="",
                  note=f"baseline = bash -c with output to /dev/null; peak RSS growth "
                  f"{max(growth):.1f} MiB (target <= {TARGET_MIB} MiB)")], "bash_output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
