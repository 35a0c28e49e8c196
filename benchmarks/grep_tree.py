"""grep over a generated tree of 20,000 files: zpi's ``grep`` tool (builtins:search, as the
loop runs it: arguments prepared, then executed, result text built) against ``rg`` run directly
with the same search, and the tool's pure-Python engine beside them.

The tree: 200 folders of source-like text files (a few KiB each), a ``.gitignore`` leaving
out a build folder, some binary files. Three searches: content lines with numbers, the files
with matches, and per-file counts. Each round runs every side once, in alternating order;
every result is checked (the tool's entries against rg's own output, the Python engine's
text against the ripgrep engine's), so a wrong answer exits non-zero.

Target: the tool with ripgrep <= 1.5x rg run directly. The pure-Python engine is reported
for information (no target). Without ``rg`` on PATH the benchmark says so and measures
only the Python engine.

    python benchmarks/grep_tree.py [--files 20000] [--rounds 7] [--quick]
"""

from __future__ import annotations

import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _measure import arguments, compare, emit, interleave

from zpi_builtins.search import grep_tool
from zpi_host.tools import ToolContext

RATIO_TARGET = 1.5
WORDS = ("alpha", "beta", "gamma", "delta", "value", "result", "handler", "config", "request",
         "response", "error", "index", "buffer", "stream", "token", "session")
NEEDLE = "needle_fn"
SEARCHES: dict[str, dict[str, Any]] = {
    "content": {"output_mode": "content", "-n": True},
    "files_with_matches": {"output_mode": "files_with_matches"},
    "count": {"output_mode": "count"},
}
RG_FLAGS = {"content": ["-n"], "files_with_matches": ["-l"], "count": ["-c"]}


def build_tree(root: Path, files: int, seed: int = 20) -> None:
    rng = random.Random(seed)
    (root / ".git").mkdir()  # a repository: rg run directly applies .gitignore too
    (root / ".gitignore").write_text("build/\n*.tmp\n")
    folders = [root / f"pkg{i // 20}" / f"mod{i % 20}" for i in range(200)]
    for folder in folders:
        folder.mkdir(parents=True)
    (root / "build").mkdir()
    for i in range(files):
        lines = []
        for _ in range(rng.randint(20, 80)):
            words = rng.choices(WORDS, k=rng.randint(3, 9))
            if rng.random() < 0.01:
                words.insert(rng.randrange(len(words)), NEEDLE)
            lines.append("    " + " ".join(words))
        data = ("\n".join(lines) + "\n").encode()
        if i % 500 == 7:
            data = b"\0" + data
        folder = root / "build" if i % 1000 == 3 else folders[i % len(folders)]
        (folder / f"file{i}.{'tmp' if i % 997 == 5 else 'py'}").write_bytes(data)


def tool_side(root: Path, mode: str, use_ripgrep: bool) -> tuple[Callable[[], float], list]:
    """A side running the grep tool; the list receives each run's result."""
    tool = grep_tool(use_ripgrep)
    ctx = ToolContext(cwd=root)
    kept: list = []

    def run() -> float:
        started = time.perf_counter()
        result = tool.execute(tool.prepare_arguments({"pattern": NEEDLE, **SEARCHES[mode]}),
                              ctx)
        elapsed = time.perf_counter() - started
        kept[:] = [result]
        return elapsed

    return run, kept


def rg_side(rg: str, root: Path, mode: str) -> tuple[Callable[[], float], list]:
    kept: list = []

    def run() -> float:
        started = time.perf_counter()
        done = subprocess.run([rg, *RG_FLAGS[mode], NEEDLE], cwd=root, capture_output=True,
                              stdin=subprocess.DEVNULL, check=False)
        elapsed = time.perf_counter() - started
        kept[:] = [done]
        return elapsed

    return run, kept


def check(mode: str, by_tool: Any, by_rg: subprocess.CompletedProcess[bytes] | None,
          by_python: Any) -> None:
    if by_python.text_content != by_tool.text_content if by_tool is not None else False:
        raise SystemExit(f"grep_tree {mode}: the Python engine's result differs from "
                         "ripgrep's")
    if by_rg is None or by_tool is None:
        return
    expected = len(by_rg.stdout.splitlines())
    if by_tool.details["engine"] != "ripgrep" or by_tool.details["entries"] != expected:
        raise SystemExit(f"grep_tree {mode}: the tool gave {by_tool.details['entries']} "
                         f"entries, rg {expected}")


def main() -> None:
    args = arguments("grep_tree", __doc__, rounds=7, quick={"files": 500, "rounds": 1},
                     options=[("--files", {"type": int, "default": 20_000})],
                     minimum={"files": 100})
    rg = shutil.which("rg")
    rows = []
    with tempfile.TemporaryDirectory(prefix="zpi-grep-tree-") as tmp:
        root = Path(tmp)
        build_tree(root, args.files)
        for mode in SEARCHES:
            python, by_python = tool_side(root, mode, False)
            sides: dict[str, Callable[[], float]] = {"python": python}
            if rg is not None:
                zpi, by_tool = tool_side(root, mode, True)
                direct, by_rg = rg_side(rg, root, mode)
                sides.update({"zpi": zpi, "rg": direct})
            samples = interleave(sides, args.rounds)
            label = f"grep_tree {mode}, {args.files} files"
            if rg is None:
                rows.append(compare(f"{label}: Python engine (no rg on PATH)",
                                    samples["python"], samples["python"], op="",
                                    note="rg is not installed: only the Python engine ran"))
                continue
            check(mode, by_tool[0], by_rg[0], by_python[0])
            rows.append(compare(f"{label}: tool (ripgrep) vs rg", samples["zpi"],
                                samples["rg"], target=RATIO_TARGET))
            rows.append(compare(f"{label}: tool (Python) vs rg", samples["python"],
                                samples["rg"], op="", note="the engine without rg; no "
                                "target"))
    emit(rows, "grep over a generated tree")


if __name__ == "__main__":
    main()
