"""Cold start of ``zpi-host --list-plugins --json`` against the floor of any pluggy host.

Runs both commands alternately (at least 7 times each) and prints the medians and the ratio.
Target: ratio <= 2.0. The floor imports pluggy and scans the ``zpi.plugins`` entry points,
which every entry-point plugin host must do.

Both run with bytecode caching allowed (``PYTHONDONTWRITEBYTECODE`` removed from their
environment) and after a warm-up run: pip compiles an installed package's modules, and an
editable install writes them on first import, so a user's second start never compiles. With
the variable set, every run would compile zpi's modules from source while the floor's
(site-packages) are compiled already.

    python benchmarks/cold_start.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

FLOOR = [sys.executable, "-c",
         "import pluggy, importlib.metadata as m; m.entry_points(group='zpi.plugins')"]


def zpi_command() -> list[str]:
    exe = shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))
    return [exe, "--list-plugins", "--json"]


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    runs = max(7, parser.parse_args().runs)
    zpi = zpi_command()
    timed(zpi), timed(FLOOR)  # warm the file cache once for both
    zpi_times, floor_times = [], []
    for _ in range(runs):
        zpi_times.append(timed(zpi))
        floor_times.append(timed(FLOOR))
    zpi_median = statistics.median(zpi_times)
    floor_median = statistics.median(floor_times)
    ratio = zpi_median / floor_median
    print(f"runs each:                 {runs}")
    print(f"floor (pluggy + entry points) median: {floor_median * 1000:.1f} ms")
    print(f"zpi-host --list-plugins --json median: {zpi_median * 1000:.1f} ms")
    print(f"ratio: {ratio:.2f}x (target <= 2.0) -> {'met' if ratio <= 2.0 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
