"""Per-turn flatness with the real HTTP providers: turns 901-1,000 against turns 1-100.

A session of N turns (default 1,000) through the OpenAI and the Anthropic provider, over
loopback to a server in another process (``_loopback.py``: the request body is read, not
parsed; the answer is a recorded event stream with the fields the real services send, one
event per network write). Turns 1..N-1 each stream one ``read`` call of a 20-line file (text,
tool call with its arguments in pieces, usage), turn N answers with text. The session is
persisted into a temporary agent dir (transcript, fsync per turn), as a user's run is.

Each request to the provider is timestamped; a turn's time is the gap between consecutive
requests (build the request from the history, send it, stream and parse the answer, run the
tool, persist). Every request carries the whole history, so the bytes sent grow with it: a
real service does the same. The row compares the last 100 turns with the first 100 of the
same session; ``--rounds`` sessions per provider, the providers alternating.
Target: late / early <= 1.5.

    python benchmarks/provider_turns.py [--turns 1000] [--rounds 3] [--quick]
"""

from __future__ import annotations

import asyncio
import itertools
import os
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from _loopback import MARKER, LoopbackServer, realistic
from _measure import Row, ainterleave, arguments, compare, emit

TARGET = 1.5
WINDOW = 100
FORMATS = ("openai", "anthropic")
USAGE = {"input_tokens": 1200, "output_tokens": 20, "cache_read_tokens": 0}


class Stamped:
    """The real provider, with the time of each ``stream`` call recorded."""

    def __init__(self, provider: Any) -> None:
        self._provider = provider
        self.stamps: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        self.stamps.append(time.perf_counter())
        async for event in self._provider.stream(request):
            yield event

    async def aclose(self) -> None:
        await self._provider.aclose()


def load_streams(server: LoopbackServer) -> None:
    from zpi_host.providers.script import ScriptedTurn
    from zpi_host.testing.model_server import sse_frames

    for fmt in FORMATS:
        prefix = "call_" if fmt == "openai" else "toolu_"
        call = ScriptedTurn.parse({
            "text": "Reading the file again.",
            "tool_calls": [{"name": "read", "id": prefix + MARKER.decode(),
                            "arguments": {"path": "small.txt"}}],
            "usage": USAGE}, "bench")
        done = ScriptedTurn.parse({"text": "done", "usage": USAGE}, "bench")
        server.load(f"{fmt}-call", realistic(fmt, sse_frames(fmt, call, model="bench")))
        server.load(f"{fmt}-done", realistic(fmt, sse_frames(fmt, done, model="bench")))


async def session_turns(fmt: str, server: LoopbackServer, turns: int, root: Path,
                        agent: Path) -> list[float]:
    """Per-turn times of one N-turn session through the ``fmt`` provider."""
    from zpi_host.contract.plugins import PluginConfig, PluginHost
    from zpi_host.providers.catalog import ModelEntry
    from zpi_host.session.assembly import create_session

    entry = ModelEntry(name=f"{fmt}:bench", provider=fmt, model="bench",
                       base_url=server.base_url, api_key="bench-key")
    if fmt == "openai":
        from zpi_host.providers.openai import OpenAIProvider

        provider = Stamped(OpenAIProvider(entry, {}))
    else:
        from zpi_host.providers.anthropic import AnthropicProvider

        provider = Stamped(AnthropicProvider(entry, {}))
    server.queue((f"{fmt}-call", turns - 1), (f"{fmt}-done", 1))
    host = PluginHost(PluginConfig(autoload=False)).load()
    session = await create_session(model=f"{fmt}:bench", provider=provider, cwd=root,
                                   agent_dir=agent, host=host, tools=["read"])
    try:
        result = await session.run("read small.txt again and again")
        provider.stamps.append(time.perf_counter())
    finally:
        await session.dispose()
    if result.is_error or result.num_turns != turns:
        raise SystemExit(f"{fmt} run failed: {result.stop_reason} {result.error} after "
                         f"{result.num_turns} turns")
    stamps = provider.stamps
    return [b - a for a, b in itertools.pairwise(stamps)]


async def amain(turns: int, rounds: int) -> int:
    os.environ.pop("HTTP_PROXY", None)
    window = min(WINDOW, max(1, turns // 2))
    with tempfile.TemporaryDirectory(prefix="zpi-bench-turns-") as tmp, \
            LoopbackServer() as server:
        root, agent = Path(tmp, "project").resolve(), Path(tmp, "agent").resolve()
        root.mkdir()
        (root / "small.txt").write_text("".join(f"line {i} of a small file\n"
                                                for i in range(1, 21)), encoding="utf-8")
        os.environ["ZPI_AGENT_DIR"] = str(agent)
        load_streams(server)
        per_round: dict[str, list[list[float]]] = {fmt: [] for fmt in FORMATS}

        def side(fmt: str) -> Any:
            async def run() -> float:
                times = await session_turns(fmt, server, turns, root, agent)
                per_round[fmt].append(times)
                return sum(times)
            return run

        for fmt in FORMATS:  # warm imports, connections and caches
            await session_turns(fmt, server, min(turns, 20), root, agent)
        await ainterleave({fmt: side(fmt) for fmt in FORMATS}, rounds, warmup=0)
    rows: list[Row] = []
    for fmt in FORMATS:
        late = [sum(times[-window:]) for times in per_round[fmt]]
        early = [sum(times[:window]) for times in per_round[fmt]]
        rows.append(compare(f"provider_turns {fmt}: turns {turns - window + 1}-{turns} vs "
                            f"1-{window}", late, early, target=TARGET,
                            note="loopback server in another process; zpi = the last "
                            f"{window} turns, baseline = the first {window}, same session"
                            if fmt == "openai" else ""))
    emit(rows, "provider_turns")
    return 0


def main() -> int:
    args = arguments("provider_turns", __doc__, rounds=3, quick={"turns": 20, "rounds": 1},
                     options=[("--turns", {"type": int, "default": 1000})],
                     minimum={"turns": 2})
    return asyncio.run(amain(args.turns, args.rounds))


if __name__ == "__main__":
    raise SystemExit(main())
