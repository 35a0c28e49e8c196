"""Parallel tool calls: 8 read-only, concurrency-safe calls in one turn vs a single call.

Each of 8 tools (``sleep_0`` .. ``sleep_7``, metadata read_only, concurrency_safe, no side
effects) awaits ``anyio.sleep(0.2)``. One session's model asks for all 8 in one turn, another
session's model asks for one; both then answer with text. If the loop runs the calls
together, the 8-call run takes about as long as the 1-call run. Each is repeated and the
medians are compared. Target: ratio <= 1.3.

    python benchmarks/parallel_tools.py [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from zpi_host import hookimpl
from zpi_host.assembly import create_session
from zpi_host.messages import ToolResultMessage
from zpi_host.plugins import PluginConfig, PluginHost
from zpi_host.testing import ScriptedModel
from zpi_host.tools.base import Tool, ToolMetadata, ToolResult

TOOLS = 8
SLEEP = 0.2
TARGET = 1.3
SAFE = ToolMetadata(read_only=True, concurrency_safe=True, side_effects=False)
SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}


def sleep_tool(index: int) -> Tool:
    async def execute(args: Any, ctx: Any) -> ToolResult:
        await anyio.sleep(SLEEP)
        return ToolResult.text(f"slept {SLEEP}s")

    return Tool(f"sleep_{index}", f"Sleep {SLEEP} seconds.", SCHEMA, execute, SAFE)


class SleepTools:
    @hookimpl
    def zpi_register_tools(self) -> list[Tool]:
        return [sleep_tool(i) for i in range(TOOLS)]


async def timed_run(root: Path, calls: int) -> float:
    model = ScriptedModel([
        {"tool_calls": [{"name": f"sleep_{i}", "arguments": {}} for i in range(calls)]},
        {"text": "done"},
    ])
    host = PluginHost(PluginConfig(autoload=False)).load()
    host.register_plugin(SleepTools(), "bench-sleep-tools")
    session = await create_session(model="scripted:bench", provider=model, cwd=root, host=host)
    started = time.perf_counter()
    result = await session.run("sleep")
    elapsed = time.perf_counter() - started
    await session.dispose()
    if result.is_error or result.result != "done":
        raise SystemExit(f"run with {calls} call(s) failed: {result.stop_reason} {result.error}")
    results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    if len(results) != calls or any(r.is_error for r in results):
        raise SystemExit(f"run with {calls} call(s): unexpected tool results {results}")
    return elapsed


async def amain(runs: int) -> int:
    with tempfile.TemporaryDirectory(prefix="zpi-bench-") as tmp:
        root = Path(tmp).resolve()
        await timed_run(root, 1)  # warm imports
        single, parallel = [], []
        for _ in range(runs):
            single.append(await timed_run(root, 1))
            parallel.append(await timed_run(root, TOOLS))
    one, many = statistics.median(single), statistics.median(parallel)
    ratio = many / one
    print(f"runs each: {runs}; each call sleeps {SLEEP * 1000:.0f} ms")
    print(f"1 call in one turn, median:        {one * 1000:8.1f} ms")
    print(f"{TOOLS} calls in one turn, median:       {many * 1000:8.1f} ms "
          f"(sequential would be {TOOLS * SLEEP * 1000:.0f} ms)")
    print(f"ratio: {ratio:.3f}x (target <= {TARGET}) -> {'met' if ratio <= TARGET else 'NOT met'}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    return asyncio.run(amain(max(1, parser.parse_args().runs)))


if __name__ == "__main__":
    raise SystemExit(main())
