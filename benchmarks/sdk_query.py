"""The SDK layer's cost: the same long session through ``query()`` and through the kernel's
session API (``create_session().run()``), in one process.

A session of N turns (default 1,000): turns 1..N-1 each call the file-reading tool on a small
file (``Read`` with ``file_path`` through the SDK, ``read`` with ``path`` through the kernel),
turn N answers with text. The model is an instant in-process ``FunctionModel`` and nothing is
persisted, so what is measured is the host's own work per turn, plus, for the SDK, the
argument adapter, event translation and message delivery. Times are the process's CPU time
(the model and the tool use no other process), so that other load on the machine does not
decide the ratio. The two sides alternate, ``--rounds`` times (default 5); medians and the
spread of the per-round ratios are reported.

Target: SDK total / kernel total <= 1.2.

    python benchmarks/sdk_query.py [--turns 1000] [--rounds 5] [--quick]
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from _measure import ainterleave, arguments, compare, emit
from _sessions import PROMPT, SDK_READ, instant_model, timed_query

RATIO_TARGET = 1.2


async def run_kernel(turns: int, root: Path) -> float:
    from zpi_host.session.assembly import create_session

    provider = instant_model(turns, {"name": "read", "arguments": {"path": "small.txt"}})
    session = await create_session(model="function:bench", provider=provider, cwd=root,
                                   persist=False)
    started = time.process_time()
    result = await session.run(PROMPT)
    total = time.process_time() - started
    await session.dispose()
    assert result.num_turns == turns and not result.is_error, result
    return total


async def run_sdk(turns: int, root: Path) -> float:
    from zpi_host.sdk import AgentOptions

    options = AgentOptions(model="function:bench", provider=instant_model(turns, SDK_READ),
                           cwd=root, persist_session=False)
    return (await timed_query(options, turns))[0]


async def main(turns: int, rounds: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "small.txt").write_text("".join(f"line {i}\n" for i in range(1, 21)))
        samples = await ainterleave({
            "kernel": lambda: run_kernel(turns, root),
            "sdk": lambda: run_sdk(turns, root),
        }, rounds)
    emit([compare(f"sdk_query: {turns} turns through query() vs the kernel session API",
                  samples["sdk"], samples["kernel"], unit="ms", target=RATIO_TARGET,
                  note="process CPU time; instant model, Read of a small file, no transcript "
                  "on either side")], "sdk_query")
    return 0


if __name__ == "__main__":
    args = arguments("sdk_query", __doc__, rounds=5, quick={"turns": 20, "rounds": 1},
                     options=[("--turns", {"type": int, "default": 1000})],
                     minimum={"turns": 2})
    raise SystemExit(asyncio.run(main(args.turns, args.rounds)))
