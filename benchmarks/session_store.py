"""The cost of mirroring a session to a session store, and the stores' append throughput.

1. A session of N turns (default 1,000) through ``query()``, persisted to its JSONL file, with
   and without ``session_store=SQLiteSessionStore(...)`` (batched flushing). Turns 1..N-1 each
   call ``Read`` on a small file, turn N answers with text; the model is an instant in-process
   ``FunctionModel``. Times are the process's CPU time (the SQLite writes run in a worker
   thread of the same process, so they are counted), so other load on the machine does not
   decide the ratio. Target: mirrored / not mirrored <= 1.3.
2. Append throughput (records per second, wall clock) of the SQLite store and, when a
   PostgreSQL server can be started (tests/helpers/postgres_server.py), of the PostgreSQL
   store: batches of 100 records of ~300 bytes each to one session.

    python benchmarks/session_store.py [--turns 1000] [--rounds 5] [--quick]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _measure import ainterleave, arguments, compare, emit
from _sessions import SDK_READ, instant_model, timed_query

RATIO_TARGET = 1.3
ROOT = Path(__file__).resolve().parents[1]


async def run_session(turns: int, root: Path, store: Any) -> float:
    from zpi_host.sdk import AgentOptions

    agent = Path(tempfile.mkdtemp(dir=root))
    options = AgentOptions(model="function:bench", provider=instant_model(turns, SDK_READ),
                           cwd=root, agent_dir=agent, session_store=store)
    total, last = await timed_query(options, turns)
    if store is not None:  # every local record reached the store
        key = {"project_key": options.store_project_key(), "session_id": last.session_id}
        local = next(agent.rglob(f"{last.session_id}.jsonl")).read_text().count("\n")
        loaded = await store.load(key)
        assert loaded is not None and len(loaded) == local, (len(loaded or []), local)
    return total


async def throughput(store: Any, batches: int) -> float:
    """Records per second appended to one session, 100 per call."""
    key = {"project_key": "bench", "session_id": "throughput"}
    pad = "x" * 250
    started = time.perf_counter()
    for b in range(batches):
        await store.append(key, [{"type": "user", "uuid": f"{b}-{i}", "pad": pad}
                                 for i in range(100)])
    elapsed = time.perf_counter() - started
    loaded = await store.load(key)
    assert loaded is not None and len(loaded) == batches * 100
    return batches * 100 / elapsed


async def main(turns: int, rounds: int, batches: int) -> int:
    from zpi_host.sdk import SQLiteSessionStore

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "small.txt").write_text("".join(f"line {i}\n" for i in range(1, 21)))
        counter = [0]

        async def mirrored() -> float:
            counter[0] += 1
            store = SQLiteSessionStore(root / f"store{counter[0]}.sqlite")
            try:
                return await run_session(turns, root, store)
            finally:
                store.close()

        samples = await ainterleave({
            "plain": lambda: run_session(turns, root, None),
            "mirrored": mirrored,
        }, rounds)
        rows.append(compare(f"session_store: {turns} turns mirrored to SQLite vs not mirrored",
                            samples["mirrored"], samples["plain"], unit="ms",
                            target=RATIO_TARGET, note="process CPU time; both persist the "
                            "JSONL; batched flushing"))
        sqlite = SQLiteSessionStore(root / "throughput.sqlite")
        try:
            sqlite_rate = await throughput(sqlite, batches)
        finally:
            sqlite.close()
        postgres_rate, why = await postgres_throughput(batches)
    print(f"\nappend throughput, {batches} x 100 records of ~300 bytes to one session:")
    print(f"  SQLite     {sqlite_rate:12,.0f} records/s")
    if postgres_rate is not None:
        print(f"  PostgreSQL {postgres_rate:12,.0f} records/s")
    else:
        print(f"  PostgreSQL (not measured: {why})")
    emit(rows, "session_store")
    return 0


async def postgres_throughput(batches: int) -> tuple[float | None, str]:
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from helpers.postgres_server import postgres_server

        from zpi_host.stores.postgres_store import PostgresSessionStore

        with postgres_server() as dsn:
            store = PostgresSessionStore(dsn)
            try:
                return await throughput(store, batches), ""
            finally:
                await store.close()
    except (RuntimeError, ImportError) as exc:
        return None, str(exc)


if __name__ == "__main__":
    args = arguments("session_store", __doc__, rounds=5,
                     quick={"turns": 20, "rounds": 1, "batches": 3},
                     options=[("--turns", {"type": int, "default": 1000}),
                              ("--batches", {"type": int, "default": 100})],
                     minimum={"turns": 2, "batches": 1})
    raise SystemExit(asyncio.run(main(args.turns, args.rounds, args.batches)))
