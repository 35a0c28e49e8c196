"""Parallel tool calls: 8 read-only, concurrency-safe calls in one turn against a single call.

Three kinds of tool, each in two sessions: one whose model asks for 8 calls in one turn, one
whose model asks for 1; both then answer with text. The time is ``session.run`` of the whole
two-turn session. If the loop runs the calls together, 8 take about as long as 1.

- async: 8 tools (``sleep_0`` .. ``sleep_7``) that ``await anyio.sleep(0.1)``;
- sync: 8 plain ``def`` tools that block in ``time.sleep(0.1)`` (a synchronous tool waiting
  on I/O: a database driver, a blocking HTTP client, a slow disk);
- kernel ``read``: 8 reads of 8 different 2,000-line files (the kernel tool is synchronous).

All carry metadata read_only, concurrency_safe, no side effects. The 1-call and 8-call
sessions alternate, ``--rounds`` times. Target: 8 calls / 1 call <= 1.3 for each kind.

For information, the same with tools that do nothing (``noop_0`` .. ``noop_7`` return "ok",
async and sync): the host's own cost of a call (arguments, permission check, hooks, events,
transcript records, and for a sync tool the worker-thread hop). Work done under the GIL
cannot overlap, so 8 calls of a CPU-bound tool cost at least 8 times this plus 8 times the
tool's own Python work; these rows show how far from 1.3 that puts a tool that does little.

The host's cost per extra call (target <= 0.1 ms per call, async and sync no-op tools): in
each session the model is a function that notes when it is asked, so the gap between its
first and its second request is the turn's own work (the answer streamed, the calls checked
and run, their results recorded, the next request built), without the session's assembly.
Per round, ``SESSIONS`` sessions with 8 calls and as many with 1, alternating; the cost of a
call is (median gap with 8 - median gap with 1) / 7.

    python benchmarks/parallel_tools.py [--rounds 7] [--quick]
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from _measure import Row, ainterleave, arguments, atimed, compare, emit

from zpi_host import hookimpl

TOOLS = 8
TARGET = 1.3
SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}
READ_LINES = 2000
KINDS = ("async", "sync", "read", "noop-async", "noop-sync")
CALL_COST_TARGET_MS = 0.1
SESSIONS = 15


def sleep_tools(seconds: float, sync: bool) -> list[Any]:
    """8 tools sleeping ``seconds`` (0: returning at once)."""
    from zpi_host.tools.base import Tool, ToolMetadata, ToolResult

    safe = ToolMetadata(read_only=True, concurrency_safe=True, side_effects=False)

    async def execute_async(args: Any, ctx: Any) -> ToolResult:
        if seconds:
            await anyio.sleep(seconds)
        return ToolResult.text(f"slept {seconds}s")

    def execute_sync(args: Any, ctx: Any) -> ToolResult:
        if seconds:
            time.sleep(seconds)
        return ToolResult.text(f"slept {seconds}s")

    execute = execute_sync if sync else execute_async
    return [Tool(f"sleep_{i}", f"Sleep {seconds} seconds.", SCHEMA, execute, safe)
            for i in range(TOOLS)]


class Tools:
    """A plugin registering the given tools."""

    def __init__(self, tools: list[Any]) -> None:
        self.tools = tools

    @hookimpl
    def zpi_register_tools(self) -> list[Any]:
        return self.tools


async def session_run(root: Path, calls: list[dict[str, Any]], tools: list[Any] | None) -> None:
    """One two-turn session: ``calls`` in the first turn, then text."""
    from zpi_host.contract.plugins import PluginConfig, PluginHost
    from zpi_host.providers.messages import ToolResultMessage
    from zpi_host.session.assembly import create_session
    from zpi_host.testing import ScriptedModel

    host = PluginHost(PluginConfig(autoload=False)).load()
    if tools is not None:
        host.register_plugin(Tools(tools), "bench-tools")
    model = ScriptedModel([{"tool_calls": calls}, {"text": "done"}])
    session = await create_session(model="scripted:bench", provider=model, cwd=root, host=host,
                                   persist=False,
                                   tools=[c["name"] for c in calls] if tools is None else None)
    try:
        result = await session.run("go")
    finally:
        await session.dispose()
    if result.is_error or result.result != "done":
        raise SystemExit(f"run with {len(calls)} call(s) failed: {result.stop_reason} "
                         f"{result.error}")
    results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    if len(results) != len(calls) or any(r.is_error for r in results):
        raise SystemExit(f"run with {len(calls)} call(s): unexpected tool results {results}")


async def measure(kind: str, root: Path, rounds: int, seconds: float) -> Row:
    if kind == "read":
        tools = None
        calls = [{"name": "read", "arguments": {"path": f"file_{i}.py"}} for i in range(TOOLS)]
    else:
        tools = sleep_tools(0 if kind.startswith("noop") else seconds,
                            sync=kind.endswith("sync"))
        calls = [{"name": f"sleep_{i}", "arguments": {}} for i in range(TOOLS)]
    samples = await ainterleave({
        "one": atimed(lambda: session_run(root, calls[:1], tools)),
        "eight": atimed(lambda: session_run(root, calls, tools)),
    }, rounds)
    what = {"async": f"async tools awaiting a {seconds * 1000:.0f} ms sleep",
            "sync": f"sync tools blocking {seconds * 1000:.0f} ms",
            "read": f"kernel read of {READ_LINES}-line files",
            "noop-async": "async tools doing nothing",
            "noop-sync": "sync tools doing nothing"}[kind]
    return compare(f"parallel_tools: {TOOLS} {what} vs 1", samples["eight"], samples["one"],
                   target=None if kind.startswith("noop") else TARGET,
                   note="baseline = the same session with 1 call" if kind == "async" else
                   "information: the host's cost of a call" if kind == "noop-async" else "")


async def turn_gap(root: Path, calls: list[dict[str, Any]], tools: list[Any]) -> float:
    """The gap between the model's first and second request of a two-turn session."""
    from zpi_host.contract.plugins import PluginConfig, PluginHost
    from zpi_host.session.assembly import create_session
    from zpi_host.testing import FunctionModel

    stamps: list[float] = []

    async def model(request: Any) -> Any:
        stamps.append(time.perf_counter())
        return {"tool_calls": calls} if len(stamps) == 1 else {"text": "done"}

    host = PluginHost(PluginConfig(autoload=False)).load()
    host.register_plugin(Tools(tools), "bench-tools")
    session = await create_session(model="function:bench", provider=FunctionModel(model),
                                   cwd=root, host=host, persist=False)
    try:
        result = await session.run("go")
    finally:
        await session.dispose()
    if result.is_error or result.result != "done" or len(stamps) != 2:
        raise SystemExit(f"run with {len(calls)} call(s) failed: {result.stop_reason} "
                         f"{result.error}")
    return stamps[1] - stamps[0]


async def call_cost(kind: str, root: Path, rounds: int) -> Row:
    """The host's cost per extra no-op call, ms (a row against the target)."""
    import statistics

    tools = sleep_tools(0, sync=kind == "sync")
    calls = [{"name": f"sleep_{i}", "arguments": {}} for i in range(TOOLS)]
    await turn_gap(root, calls, tools)  # warm up
    costs: list[float] = []
    for _ in range(rounds):
        gaps: dict[int, list[float]] = {1: [], TOOLS: []}
        for _ in range(SESSIONS):
            for n in (1, TOOLS):
                gaps[n].append(await turn_gap(root, calls[:n], tools))
        costs.append((statistics.median(gaps[TOOLS]) - statistics.median(gaps[1]))
                     / (TOOLS - 1) * 1000)
    median = statistics.median(costs)
    target = CALL_COST_TARGET_MS
    return Row(f"parallel_tools: host cost per extra {kind} no-op call (8 vs 1 in a turn)",
               median, target, "ms", median / target, "<=", 1.0, min(costs) / target,
               max(costs) / target, rounds,
               "zpi = ms per call, baseline = the target (0.1 ms); each round the medians of "
               f"{SESSIONS} turns with 8 calls and {SESSIONS} with 1" if kind == "async"
               else "")


async def amain(rounds: int, seconds: float) -> int:
    with tempfile.TemporaryDirectory(prefix="zpi-bench-") as tmp:
        root = Path(tmp).resolve()
        for i in range(TOOLS):
            (root / f"file_{i}.py").write_text("".join(
                f"    value_{n} = compute(value_{n - 1}, {i})  # line {n}\n"
                for n in range(READ_LINES)), encoding="utf-8")
        rows = [await measure(kind, root, rounds, seconds) for kind in KINDS]
        rows += [await call_cost(kind, root, rounds) for kind in ("async", "sync")]
    emit(rows, "parallel_tools")
    return 0


def main() -> int:
    args = arguments("parallel_tools", __doc__, rounds=7, quick={"rounds": 1, "sleep": 0.01},
                     options=[("--sleep", {"type": float, "default": 0.1,
                                           "help": "seconds each sleep tool waits"})])
    return asyncio.run(amain(max(1, args.rounds), args.sleep))


if __name__ == "__main__":
    raise SystemExit(main())
