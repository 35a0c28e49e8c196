"""Run every benchmark, one after another, and print ONE table of all their rows at the end.

Each benchmark is its own process (``python benchmarks/X.py``), so none inherits another's
imports, caches or garbage; its own output is shown as it runs. The rows are collected from
the ``BENCH-ROW`` lines they print. ``tox -e bench`` runs this.

    python benchmarks/run_all.py [--quick] [NAME ...]

Exits 1 when a benchmark fails (a wrong result, a crash) or prints no row without saying why
it skipped (``BENCH-SKIP``: a peer benchmark when its peer cannot be fetched); a missed
target is reported in the table, not an exit status.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from _measure import SKIP_PREFIX, Row, format_table, machine, parse_rows

HERE = Path(__file__).resolve().parent
BENCHMARKS = ("cold_start", "loop_overhead", "provider_turns", "parallel_tools", "bash_output",
              "sse_parse", "transcript_load", "hook_dispatch", "sdk_query", "session_store",
              "builtins_overhead", "peer_claude_code", "peer_pi", "grep_tree", "prompt_caching",
              "mcp_servers", "native_storage", "concurrent_sessions", "long_session")


def run(name: str, quick: bool) -> tuple[list[Row], str | None, str | None]:
    """(rows, problem, skip reason) of one benchmark run; its output goes to ours as it
    comes. A benchmark that cannot run here (a ``BENCH-SKIP`` line) has no rows."""
    command = [sys.executable, str(HERE / f"{name}.py"), *(["--quick"] if quick else [])]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=HERE.parent)
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        sys.stdout.write(line)
        sys.stdout.flush()
    code = process.wait()
    rows = parse_rows("".join(lines))
    skipped = next((line[len(SKIP_PREFIX):].strip() for line in lines
                    if line.startswith(SKIP_PREFIX)), None)
    if code != 0:
        return rows, f"{name} exited with status {code}", skipped
    if not rows and skipped is None:
        return rows, f"{name} printed no row", None
    return rows, None, skipped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="each benchmark's quick mode")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"only these ({', '.join(BENCHMARKS)})")
    args = parser.parse_args()
    unknown = sorted(set(args.names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; "
                     f"known: {', '.join(BENCHMARKS)}")
    names = args.names or list(BENCHMARKS)
    before = machine()
    started = time.perf_counter()
    rows: list[Row] = []
    problems: list[str] = []
    skips: list[str] = []
    for name in names:
        got, problem, skipped = run(name, args.quick)
        rows += got
        if problem:
            problems.append(problem)
        if skipped:
            skips.append(skipped)
    print()
    print("=" * 100)
    print(format_table(rows, "all benchmarks" + (" (QUICK: figures are not meaningful)"
                                                  if args.quick else "")))
    print(f"machine at the start: {before}")
    print(f"machine at the end:   {machine()}")
    met = sum(r.met is True for r in rows)
    missed = [r.measure for r in rows if r.met is False]
    print(f"{len(rows)} rows in {time.perf_counter() - started:.0f} s: {met} targets met, "
          f"{len(missed)} missed")
    for skipped in skips:
        print(f"SKIPPED: {skipped}")
    for problem in problems:
        print(f"FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
