"""The SDK layer's cost: the same long session through ``query()`` and through the kernel's
session API (``create_session().run()``), in one process.

A session of N turns (default 1,000): turns 1..N-1 each call the file-reading tool on a small
file (``Read`` with ``file_path`` through the SDK, ``read`` with ``path`` through the kernel),
turn N answers with text. The model is an instant in-process ``FunctionModel`` and nothing is
persisted, so what is measured is the host's own work per turn, plus, for the SDK, the
argument adapter, event translation and message delivery. Times are the process's CPU time
(the model and the tool use no other process), so that other load on the machine does not
decide the ratio. Each side runs ``--repeat`` times (default 3) alternately; the best run of
each is compared.

Target: SDK total / kernel total <= 1.2.

    python benchmarks/sdk_query.py [--turns 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

RATIO_TARGET = 1.2


def instant_model(turns: int, call: dict[str, Any]) -> Any:
    from zpi_host.testing import FunctionModel

    count = [0]

    def model(request: Any) -> Any:
        count[0] += 1
        return {"tool_calls": [call]} if count[0] < turns else {"text": "done"}

    return FunctionModel(model)


async def run_kernel(turns: int, root: Path) -> float:
    from zpi_host.assembly import create_session

    provider = instant_model(turns, {"name": "read", "arguments": {"path": "small.txt"}})
    session = await create_session(model="function:bench", provider=provider, cwd=root,
                                   persist=False)
    started = time.process_time()
    result = await session.run("read small.txt again and again")
    total = time.process_time() - started
    await session.dispose()
    assert result.num_turns == turns and not result.is_error, result
    return total


async def run_sdk(turns: int, root: Path) -> float:
    from zpi_host.sdk import AgentOptions, ResultMessage, query

    provider = instant_model(turns, {"name": "Read", "arguments": {"file_path": "small.txt"}})
    options = AgentOptions(model="function:bench", provider=provider, cwd=root,
                           persist_session=False)
    started = time.process_time()
    last = None
    async for message in query("read small.txt again and again", options):
        last = message
    total = time.process_time() - started
    assert isinstance(last, ResultMessage) and last.num_turns == turns, last
    assert not last.is_error, last
    return total


async def main(turns: int, repeat: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "small.txt").write_text("".join(f"line {i}\n" for i in range(1, 21)))
        kernel, sdk = [], []
        for _ in range(repeat):
            kernel.append(await run_kernel(turns, root))
            sdk.append(await run_sdk(turns, root))
    ratio = min(sdk) / min(kernel)
    print(f"{turns} turns, best of {repeat} (CPU time): kernel {min(kernel):.3f} s "
          f"({1000 * min(kernel) / turns:.3f} ms/turn), query() {min(sdk):.3f} s "
          f"({1000 * min(sdk) / turns:.3f} ms/turn)")
    print(f"ratio query()/kernel = {ratio:.3f} (target <= {RATIO_TARGET})")
    return 0 if ratio <= RATIO_TARGET else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.turns, args.repeat)))
