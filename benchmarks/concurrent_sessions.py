"""Many sessions in one process on one event loop, against a model that answers each request
after 200 ms, as a real model would.

1. N sessions (default 100) of T turns (default 20) at once against one session alone:
   total wall clock, target <= 1.3x. Each turn is one model request answered after the
   delay; the sessions persist to their JSONL files (the default) or, as a fleet worker
   would, to native storage on SQLite (``--storage sqlite``). Peak RSS per session is printed
   (the process's peak over the run, divided by N), and the RSS an idle session holds: the
   process's resident memory after the N conversations (the sessions kept, idle) minus before
   they were made, over N (target <= 2 MiB; Linux ``/proc/self/statm``). Sessions are created
   before the clock starts: the figures are the conversations, not assembly.
2. The host's overhead per turn (wall per turn minus the model's 200 ms) at growing N (1, 10,
   50, 100, 200, 400 unless ``--sweep`` says otherwise): the most sessions one process holds
   before a turn's overhead passes 10% of the 200 ms is printed.

The model is an in-process async function (``FunctionModel`` sleeping the delay), so what is
measured is the host's loop, transcript and storage, not an HTTP client.

    python benchmarks/concurrent_sessions.py [--sessions 100] [--turns 20]
        [--storage jsonl|sqlite] [--sweep 1,10,100] [--rounds 3] [--quick]
"""

from __future__ import annotations

import asyncio
import gc
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from _measure import Row, arguments, compare, emit

DELAY = 0.2
TARGET = 1.3
IDLE_RSS_TARGET_MIB = 2.0
#: the host's CPU seconds per turn of each many() call, in order (all threads of the process:
#: unlike the wall clock, hardly moved by other work on the machine)
cpu_per_turn: list[float] = []


async def make_session(root: Path, store: Any) -> Any:
    from zpi_host import create_session
    from zpi_host.testing import FunctionModel

    async def answer(request: Any) -> str:
        await asyncio.sleep(DELAY)
        return f"answer {len(request.messages)}"

    storage = {"storage": {"transcript": store, "current_state": None}} if store else {}
    return await create_session(model="fn:bench", provider=FunctionModel(answer), cwd=root,
                                settings={}, agent_dir=root / "agent", **storage)


async def converse(session: Any, turns: int) -> None:
    for n in range(turns):
        result = await session.run(f"turn {n}")
        assert result.result == f"answer {2 * n + 1}", result.result


def resident_mib() -> float | None:
    """The process's resident memory now, MiB (None where ``/proc`` is missing)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


async def many(root: Path, sessions: int, turns: int, storage: str,
               idle_rss: list[float] | None = None) -> float:
    """Seconds for ``sessions`` conversations of ``turns`` turns at once (the sessions are
    created before the clock starts and disposed after it stops); the process's CPU seconds
    per turn over the same span go to ``cpu_per_turn``, and with ``idle_rss`` the resident MiB
    each session holds once its conversation is over (before it is disposed) to that list."""
    gc.collect()
    before = resident_mib()
    store = None
    if storage == "sqlite":
        from zpi_host.stores import SQLiteTranscriptStore

        store = SQLiteTranscriptStore(Path(tempfile.mkdtemp(dir=root)) / "s.db")
    made = [await make_session(root, store) for _ in range(sessions)]
    try:
        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(converse(s, turns) for s in made))
        cpu_per_turn.append((time.process_time() - cpu) / (sessions * turns))
        wall = time.perf_counter() - started
        gc.collect()
        after = resident_mib()
        if idle_rss is not None and before is not None and after is not None:
            idle_rss.append((after - before) / sessions)
        return wall
    finally:
        for session in made:
            await session.dispose()
        if store is not None:
            store.close()


async def main(sessions: int, turns: int, storage: str, rounds: int, sweep: list[int]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        await many(root, 1, 1, storage)  # warm up: imports, the catalog
        alone, crowd, crowd_cpu, idle_rss = [], [], [], []
        for index in range(rounds):
            order = [1, sessions] if index % 2 == 0 else [sessions, 1]
            for n in order:
                (alone if n == 1 else crowd).append(await many(
                    root, n, turns, storage, idle_rss if n != 1 else None))
                if n != 1:
                    crowd_cpu.append(cpu_per_turn[-1])
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        crowd_cpu.sort()
        print(f"host CPU per turn with {sessions} sessions: median "
              f"{crowd_cpu[len(crowd_cpu) // 2] * 1000:.2f} ms (rounds "
              f"{crowd_cpu[0] * 1000:.2f}-{crowd_cpu[-1] * 1000:.2f} ms): {sessions} sessions "
              f"need {sessions * crowd_cpu[len(crowd_cpu) // 2] * 1000:.0f} ms of one core per "
              f"{DELAY * 1000:.0f} ms round")
        rows = [compare(f"concurrent_sessions: {sessions} x {turns}-turn sessions at once vs "
                        f"one ({storage})", crowd, alone, unit="s", scale=1.0, target=TARGET,
                        note=f"model answers after {DELAY * 1000:.0f} ms; one event loop")]
        if idle_rss:
            # the largest round: later rounds reuse memory the earlier ones freed
            worst, target = max(idle_rss), IDLE_RSS_TARGET_MIB
            rows.append(Row(f"concurrent_sessions: RSS per idle session after {turns} turns "
                            f"({sessions} sessions, {storage})", worst, target, "MiB",
                            worst / target, "<=", 1.0, min(idle_rss) / target, worst / target,
                            len(idle_rss),
                            "zpi = MiB per session, the largest round (RSS after the "
                            "conversations minus before the sessions were made, over N; later "
                            "rounds reuse freed memory), baseline = the target"))
        print(f"peak RSS {peak_kb / 1024:.0f} MiB for {sessions} sessions: "
              f"{peak_kb / sessions:.0f} KiB per session")
        held = None
        print(f"\nhost overhead per turn ({storage}), model delay {DELAY * 1000:.0f} ms:")
        for n in sweep:
            wall = await many(root, n, turns, storage)
            overhead = wall / turns - DELAY
            print(f"  {n:5d} sessions: {overhead * 1000:8.1f} ms per turn "
                  f"(host CPU {cpu_per_turn[-1] * 1000:.2f} ms per session-turn)")
            if overhead <= DELAY / 10:
                held = n
        print(f"most sessions with a turn's overhead within 10% of {DELAY * 1000:.0f} ms: "
              f"{held if held is not None else 'none of ' + str(sweep)} (of those tried)")
    emit(rows, "concurrent_sessions")
    return 0


if __name__ == "__main__":
    args = arguments("concurrent_sessions", __doc__, rounds=3,
                     quick={"sessions": 5, "turns": 2, "rounds": 1, "sweep": "1,5"},
                     options=[("--sessions", {"type": int, "default": 100}),
                              ("--turns", {"type": int, "default": 20}),
                              ("--storage", {"choices": ["jsonl", "sqlite"],
                                             "default": "jsonl"}),
                              ("--sweep", {"default": "1,10,50,100,200,400"})],
                     minimum={"sessions": 2, "turns": 1})
    sweep = [int(n) for n in str(args.sweep).split(",")]
    raise SystemExit(asyncio.run(main(args.sessions, args.turns, args.storage, args.rounds,
                                      sweep)))
