"""Per-turn loop overhead: a long session of ``read`` calls with an instant model, against
PydanticAI running the same script.

A session of N turns (default 1,000): turns 1..N-1 each call ``read`` on a 20-line file,
turn N answers with text. Both models are instant ``async`` functions that report token
usage with every response, so neither side estimates tokens from the history.

- zpi: ``create_session`` with its ``FunctionModel`` (an ``async def``) and the real kernel
  ``read`` tool (numbered lines), plugins not autoloaded, settings from a temporary agent dir.
- PydanticAI (the peer): ``Agent.run`` with its ``FunctionModel`` (an ``async def``, its
  recommended async API; no thread hops) and an ``async def read`` tool doing the same work
  (read the file, number its lines), ``UsageLimits(request_limit=None)``.

Persistence, two variants, each the same on both sides:

- none: zpi with ``persist=False`` (no transcript); PydanticAI keeps its history in memory.
- transcript: zpi writes its session file into a temporary agent dir (a JSON line per record,
  fsync once per turn: its default); PydanticAI runs through ``Agent.iter`` and appends every
  new message as a JSON line (``ModelMessagesTypeAdapter``) to a file in a temporary dir,
  fsync once per turn (after each tool call's results).

The sides alternate, ``--rounds`` times. Each model call is timestamped; a turn's time is the
gap between consecutive model calls. Rows: total time of the N-turn session, and the first
100 turns alone (targets: zpi / PydanticAI <= 0.1 for the whole session; the first 100 turns
for information), and zpi's turns N-99..N against turns 1..100 (target <= 2.0: the per-turn
cost must not grow with the history).

    python benchmarks/loop_overhead.py [--turns 1000] [--rounds 3] [--quick]
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _measure import Row, ainterleave, arguments, compare, emit

RATIO_TARGET = 0.1
GROWTH_TARGET = 2.0
FILE_LINES = 20
WINDOW = 100
USAGE = {"input_tokens": 1200, "output_tokens": 20}


def write_small_file(root: Path) -> None:
    (root / "small.txt").write_text(
        "".join(f"line {i} of a small file\n" for i in range(1, FILE_LINES + 1)),
        encoding="utf-8")


class Run:
    """What one session gives: its total time and per-turn times (gaps between model calls)."""

    def __init__(self, stamps: list[float], total: float) -> None:
        self.total = total
        self.turns = [b - a for a, b in itertools.pairwise(stamps)]

    def first(self, size: int) -> float:
        return sum(self.turns[:size])

    def late_over_early(self, size: int) -> float:
        return statistics.fmean(self.turns[-size:]) / statistics.fmean(self.turns[:size])


# ---------------------------------------------------------------------------------------- zpi


async def run_zpi(turns: int, root: Path, agent: Path, persist: bool) -> Run:
    from zpi_host.contract.plugins import PluginConfig, PluginHost
    from zpi_host.session.assembly import create_session
    from zpi_host.testing import FunctionModel

    stamps: list[float] = []
    read_call = {"tool_calls": [{"name": "read", "arguments": {"path": "small.txt"}}],
                 "usage": USAGE}
    done = {"text": "done", "usage": USAGE}

    async def model(request: Any) -> Any:
        stamps.append(time.perf_counter())
        return read_call if len(stamps) < turns else done

    host = PluginHost(PluginConfig(autoload=False)).load()
    session = await create_session(model="function:bench", provider=FunctionModel(model),
                                   cwd=root, agent_dir=agent, host=host, tools=["read"],
                                   persist=persist)
    started = time.perf_counter()
    result = await session.run("read small.txt again and again")
    stamps.append(time.perf_counter())
    total = time.perf_counter() - started
    await session.dispose()
    if result.is_error or result.num_turns != turns:
        raise SystemExit(f"zpi run failed: {result.stop_reason} {result.error} "
                         f"after {result.num_turns} turns")
    bad = [m for m in session.messages if getattr(m, "is_error", False)]
    if bad:
        raise SystemExit(f"zpi read failed: {bad[0]}")
    return Run(stamps, total)


# ---------------------------------------------------------------------------------- pydantic-ai


def pydantic_ai_missing() -> str | None:
    """None when PydanticAI can be imported, else why not."""
    try:
        from pydantic_ai.models.function import FunctionModel  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return None


async def run_pydantic_ai(turns: int, root: Path, journal: Path | None) -> Run:
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessagesTypeAdapter,
        ModelResponse,
        TextPart,
        ToolCallPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage, UsageLimits

    stamps: list[float] = []
    usage = RequestUsage(input_tokens=USAGE["input_tokens"], output_tokens=USAGE["output_tokens"])

    async def read(path: str) -> str:
        """Read a file from the workspace as numbered lines."""
        target = Path(path)
        target = target if target.is_absolute() else root / target
        lines = target.read_text(encoding="utf-8").splitlines()
        width = max(6, len(str(len(lines))))
        return "\n".join(f"{n:>{width}}\t{line}" for n, line in enumerate(lines, 1))

    async def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        stamps.append(time.perf_counter())
        if len(stamps) < turns:
            return ModelResponse(parts=[ToolCallPart("read", {"path": "small.txt"},
                                                     tool_call_id=f"c{len(stamps)}")],
                                 usage=usage)
        return ModelResponse(parts=[TextPart("done")], usage=usage)

    agent = Agent(FunctionModel(model), tools=[read])
    limits = UsageLimits(request_limit=None)
    prompt = "read small.txt again and again"
    started = time.perf_counter()
    if journal is None:
        result = await agent.run(prompt, usage_limits=limits)
        output = result.output
    else:
        with journal.open("ab") as out:
            written = 0
            async with agent.iter(prompt, usage_limits=limits) as run:
                async for node in run:
                    history = run.all_messages()
                    for message in history[written:]:
                        out.write(ModelMessagesTypeAdapter.dump_json([message])[1:-1] + b"\n")
                    written = len(history)
                    out.flush()
                    if Agent.is_call_tools_node(node):
                        os.fsync(out.fileno())
                assert run.result is not None
                output = run.result.output
            os.fsync(out.fileno())
    stamps.append(time.perf_counter())
    total = time.perf_counter() - started
    if output != "done" or len(stamps) != turns + 1:
        raise SystemExit(f"pydantic-ai run failed: {output!r}, {len(stamps) - 1} calls")
    return Run(stamps, total)


# ---------------------------------------------------------------------------------------- main


def rows_for(label: str, zpi: list[Run], peer: list[Run] | None, turns: int) -> list[Row]:
    window = min(WINDOW, max(1, turns // 2))
    rows: list[Row] = []
    if peer is not None:
        rows.append(compare(f"loop {label}: {turns}-turn session vs PydanticAI",
                            [r.total for r in zpi], [r.total for r in peer],
                            target=RATIO_TARGET))
        rows.append(compare(f"loop {label}: first {window} turns vs PydanticAI",
                            [r.first(window) for r in zpi], [r.first(window) for r in peer],
                            op="", note="PydanticAI's turns grow with the history; "
                            "this is the ratio before they do" if label == "none" else ""))
    late = [sum(r.turns[-window:]) for r in zpi]
    early = [r.first(window) for r in zpi]
    rows.append(compare(f"loop {label}: zpi turns {turns - window + 1}-{turns} vs 1-{window}",
                        late, early, target=GROWTH_TARGET,
                        note="baseline = zpi's own first turns, same session"
                        if label == "none" else ""))
    return rows


async def alternate(turns: int, rounds: int, root: Path, agent: Path, journals: Path | None,
                    with_peer: bool) -> tuple[list[Run], list[Run]]:
    """``rounds`` sessions of each side, alternating; persistence when ``journals`` is set."""
    persist = journals is not None
    results: dict[str, list[Run]] = {"zpi": [], "peer": []}
    count = [0]

    def journal() -> Path | None:
        count[0] += 1
        return journals / f"run-{count[0]}.jsonl" if journals is not None else None

    def side(name: str, fn: Callable[[], Awaitable[Run]]) -> Callable[[], Awaitable[float]]:
        async def measured() -> float:
            run = await fn()
            results[name].append(run)
            return run.total
        return measured

    await run_zpi(min(turns, 20), root, agent, persist)  # warm imports and caches
    sides = {"zpi": side("zpi", lambda: run_zpi(turns, root, agent, persist))}
    if with_peer:
        await run_pydantic_ai(min(turns, 20), root, journal())
        sides["peer"] = side("peer", lambda: run_pydantic_ai(turns, root, journal()))
    await ainterleave(sides, rounds, warmup=0)
    return results["zpi"], results["peer"]


async def amain(turns: int, rounds: int, persistence: bool) -> int:
    missing = pydantic_ai_missing()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="zpi-bench-loop-") as tmp:
        root, agent = Path(tmp, "project").resolve(), Path(tmp, "agent").resolve()
        os.environ["ZPI_AGENT_DIR"] = str(agent)  # nothing of the user's ~/.zpi is read
        root.mkdir()
        write_small_file(root)
        journals = Path(tmp, "peer-journals")
        journals.mkdir()
        for label, persist in [("none", False)] + ([("transcript", True)] if persistence
                                                   else []):
            zpi_runs, peer_runs = await alternate(turns, rounds, root, agent,
                                                  journals if persist else None,
                                                  with_peer=missing is None)
            rows += rows_for(label, zpi_runs, peer_runs if missing is None else None, turns)
    if missing is not None:
        print(f"PydanticAI is not importable ({missing}): install pydantic-ai-slim to compare")
    print(f"turns per session: {turns}, each a read of a {FILE_LINES}-line file; instant "
          "async models reporting usage; sessions alternate")
    emit(rows, "loop_overhead")
    return 0


def main() -> int:
    args = arguments("loop_overhead", __doc__, rounds=3, quick={"turns": 20, "rounds": 1},
                     options=[("--turns", {"type": int, "default": 1000}),
                              ("--no-transcript", {"action": "store_true", "help": "skip the "
                               "variant with persistence on both sides"})],
                     minimum={"turns": 2})
    return asyncio.run(amain(args.turns, args.rounds, not args.no_transcript))


if __name__ == "__main__":
    raise SystemExit(main())
