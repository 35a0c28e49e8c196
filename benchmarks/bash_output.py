"""Benchmark: the bash tool on a command printing 500 MB.

Checks the two promises of bounded capture: the host's memory does not grow with the output
(target: peak RSS growth <= 64 MiB) and the spill file holds every byte. Prints the figures
and, as the baseline ratio, the tool's wall time against the same command run with its output
sent to /dev/null in this process.

Run: ``python benchmarks/bash_output.py``. Exits 0 when the output was captured correctly
(the memory target is reported, not enforced); 1 if the tool failed or the spill file is
incomplete.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio

from zpi_host.tools.base import ToolContext, ToolResult, ToolUpdate
from zpi_host.tools.bash import prepare_bash_args, run_bash

TOTAL_BYTES = 500_000_000
LINE = "a" * 99  # 100 bytes with the newline
COMMAND = f"yes {LINE} | head -c {TOTAL_BYTES}"
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


async def run_tool(spill_dir: Path) -> tuple[ToolResult, int, float]:
    updates: list[ToolUpdate] = []
    ctx = ToolContext(cwd=spill_dir, call_id="bench", spill_dir=spill_dir,
                      on_update=updates.append)
    args = prepare_bash_args({"command": COMMAND, "timeout": 600})
    started = time.perf_counter()
    result = await run_bash(args, ctx)
    return result, len(updates), time.perf_counter() - started


def baseline_seconds() -> float:
    started = time.perf_counter()
    subprocess.run(["/bin/bash", "-c", COMMAND], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main() -> int:
    base = baseline_seconds()
    with tempfile.TemporaryDirectory(prefix="zpi-bench-") as tmp:
        spill_dir = Path(tmp)
        # warm up anyio and the event loop so their one-off allocations are not counted
        anyio.run(lambda: anyio.sleep(0))
        rss_before = _status_kib("VmRSS") or 0
        maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with RssSampler() as sampler:
            result, n_updates, seconds = anyio.run(run_tool, spill_dir)
        maxrss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        details = dict(result.details or {})
        path = details.get("full_output_path")
        spill_size = Path(path).stat().st_size if path else 0

    growth_mib = (sampler.peak_kib - rss_before) / 1024
    print(f"command:              {COMMAND[:40]}... ({TOTAL_BYTES:,} bytes)")
    print(f"tool result:          error={result.is_error} exit_code={details.get('exit_code')}")
    print(f"bytes captured:       {details.get('total_bytes'):,}")
    print(f"spill file size:      {spill_size:,} (every byte: {spill_size == TOTAL_BYTES})")
    print(f"result text size:     {len(result.text_content.encode()):,} bytes")
    print(f"progress updates:     {n_updates}")
    print(f"RSS before:           {rss_before / 1024:.1f} MiB")
    print(f"peak RSS (sampled):   {sampler.peak_kib / 1024:.1f} MiB")
    print(f"peak RSS growth:      {growth_mib:.1f} MiB (target <= {TARGET_MIB} MiB: "
          f"{'met' if growth_mib <= TARGET_MIB else 'NOT met'})")
    print(f"ru_maxrss growth:     {(maxrss_after - maxrss_before) / 1024:.1f} MiB")
    print(f"tool wall time:       {seconds:.2f} s ({TOTAL_BYTES / MIB / seconds:.0f} MiB/s)")
    print(f"baseline (>/dev/null): {base:.2f} s")
    print(f"ratio tool/baseline:  {seconds / base:.2f}x")
    ok = (not result.is_error and details.get("total_bytes") == TOTAL_BYTES
          and spill_size == TOTAL_BYTES)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
