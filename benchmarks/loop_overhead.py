"""Per-turn loop overhead: a long session of ``read`` calls with an instant model.

A session of N turns (default 1,000): turns 1..N-1 each call ``read`` on a small file, turn N
answers with text. The model is instant and nothing is persisted, so what is measured is the
host's own per-turn work. zpi runs with its in-process ``FunctionModel`` and the real kernel
``read`` tool; pydantic-ai runs the same script with its ``FunctionModel`` and an equivalent
``read`` tool (same file, numbered lines), in the same process. Each model call is
timestamped; a turn's time is the gap between consecutive model calls. pydantic-ai's
turn time grows with the history, so its 1,000-turn session takes about a minute.

Targets: zpi total / pydantic-ai total <= 0.1, and zpi's mean turn time over the last 100
turns / the first 100 turns <= 2.0 (the per-turn cost must not grow with the history).

    python benchmarks/loop_overhead.py [--turns 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RATIO_TARGET = 0.1
GROWTH_TARGET = 2.0
FILE_LINES = 20


def write_small_file(root: Path) -> Path:
    path = root / "small.txt"
    path.write_text("".join(f"line {i} of a small file\n" for i in range(1, FILE_LINES + 1)),
                    encoding="utf-8")
    return path


class Figures:
    """Timestamps of the model calls of one run, and what they say."""

    def __init__(self, name: str, stamps: Sequence[float], total: float) -> None:
        self.name, self.total = name, total
        self.turns = [b - a for a, b in itertools.pairwise(stamps)]

    def mean(self, first: int = 1, last: int | None = None) -> float:
        """Mean turn time of turns ``first``..``last`` (1-based, inclusive)."""
        chosen = self.turns[first - 1:last]
        return statistics.fmean(chosen) if chosen else float("nan")

    def window(self, size: int = 100) -> tuple[float, float, int]:
        size = min(size, max(1, len(self.turns) // 2))
        return self.mean(1, size), self.mean(len(self.turns) - size + 1), size


# ---------------------------------------------------------------------------------------- zpi


async def run_zpi(turns: int, root: Path) -> Figures:
    from zpi_host.assembly import create_session
    from zpi_host.plugins import PluginConfig, PluginHost
    from zpi_host.testing import FunctionModel

    stamps: list[float] = []
    read_call = {"tool_calls": [{"name": "read", "arguments": {"path": "small.txt"}}]}

    def model(request: Any) -> Any:
        stamps.append(time.perf_counter())
        return read_call if len(stamps) < turns else {"text": "done"}

    provider = FunctionModel(model)
    host = PluginHost(PluginConfig(autoload=False)).load()
    session = await create_session(model="function:bench", provider=provider, cwd=root,
                                   host=host, tools=["read"])
    started = time.perf_counter()
    result = await session.run("read small.txt again and again")
    total = time.perf_counter() - started
    stamps.append(time.perf_counter())
    await session.dispose()
    if result.is_error or result.num_turns != turns:
        raise SystemExit(f"zpi run failed: {result.stop_reason} {result.error} "
                         f"after {result.num_turns} turns")
    bad = [m for m in session.messages if getattr(m, "is_error", False)]
    if bad:
        raise SystemExit(f"zpi read failed: {bad[0]}")
    return Figures("zpi", stamps, total)


# ---------------------------------------------------------------------------------- pydantic-ai


def pydantic_ai_available() -> str | None:
    """None when pydantic-ai can be imported, else why not."""
    try:
        import pydantic_ai  # noqa: F401
        from pydantic_ai.models.function import FunctionModel  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return None


async def run_pydantic_ai(turns: int, root: Path) -> Figures:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    stamps: list[float] = []

    def read(path: str) -> str:
        """Read a file from the workspace as numbered lines."""
        target = Path(path)
        target = target if target.is_absolute() else root / target
        lines = target.read_text(encoding="utf-8").splitlines()
        width = max(6, len(str(len(lines))))
        return "\n".join(f"{n:>{width}}\t{line}" for n, line in enumerate(lines, 1))

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        stamps.append(time.perf_counter())
        if len(stamps) < turns:
            return ModelResponse(parts=[ToolCallPart("read", {"path": "small.txt"},
                                                     tool_call_id=f"c{len(stamps)}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model), tools=[read])
    started = time.perf_counter()
    result = await agent.run("read small.txt again and again",
                             usage_limits=UsageLimits(request_limit=None))
    total = time.perf_counter() - started
    stamps.append(time.perf_counter())
    if result.output != "done" or len(stamps) != turns + 1:
        raise SystemExit(f"pydantic-ai run failed: {result.output!r}, {len(stamps) - 1} calls")
    return Figures("pydantic-ai", stamps, total)


# ---------------------------------------------------------------------------------------- main


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def report(fig: Figures) -> tuple[float, float]:
    early, late, size = fig.window()
    n = len(fig.turns)
    print(f"{fig.name}:")
    print(f"  total:                      {fig.total * 1000:10.1f} ms")
    print(f"  mean per turn:              {fig.mean() * 1e6:10.1f} µs")
    print(f"  mean turns 1-{size}:          {early * 1e6:10.1f} µs")
    print(f"  mean turns {n - size + 1}-{n}:       {late * 1e6:10.1f} µs")
    return early, late


async def amain(turns: int) -> int:
    with tempfile.TemporaryDirectory(prefix="zpi-bench-") as tmp:
        root = Path(tmp).resolve()
        write_small_file(root)
        missing = pydantic_ai_available()
        pyd: Figures | None = None
        if missing is None:
            await run_pydantic_ai(min(turns, 20), root)  # warm imports and caches
        await run_zpi(min(turns, 20), root)
        zpi = await run_zpi(turns, root)
        if missing is None:
            pyd = await run_pydantic_ai(turns, root)
    print(f"turns per session: {turns} (each a read of a {FILE_LINES}-line file; "
          "instant model, no persistence)")
    early, late = report(zpi)
    if pyd is not None:
        report(pyd)
    else:
        print(f"pydantic-ai: not importable ({missing}); install pydantic-ai-slim to compare")
    if pyd is not None:
        ratio = zpi.total / pyd.total
        print(f"zpi total / pydantic-ai total: {ratio:.3f} (target <= {RATIO_TARGET}) -> "
              f"{verdict(ratio <= RATIO_TARGET)}")
        print(f"  (for information, turns 1-{pyd.window()[2]} only: "
              f"{early / pyd.window()[0]:.3f}; pydantic-ai late / early: "
              f"{pyd.window()[1] / pyd.window()[0]:.2f})")
    growth = late / early
    print(f"zpi late / early turn time:    {growth:.2f} (target <= {GROWTH_TARGET}) -> "
          f"{verdict(growth <= GROWTH_TARGET)}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=1000)
    turns = parser.parse_args().turns
    if turns < 2:
        parser.error("--turns must be at least 2")
    return asyncio.run(amain(turns))


if __name__ == "__main__":
    raise SystemExit(main())
