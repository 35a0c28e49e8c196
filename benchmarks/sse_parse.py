"""SSE parse throughput of the HTTP providers against bare httpx line iteration.

For each wire format (OpenAI chat, Anthropic messages) a long recorded answer is built (about
``--size-mb`` MB): many short text deltas (6 characters, about a token each) and tool calls
whose arguments arrive in pieces, with the fields the real services send
(``_loopback.realistic``: OpenAI's per-event ``obfuscation`` string, ``service_tier`` and
``"usage": null``; Anthropic's usage details). A loopback server in ANOTHER process
(``_loopback.py``) sends the same bytes to both readers, one SSE event per network write:

- baseline: ``async for line in response.aiter_lines()`` over an ``httpx.AsyncClient``
  stream, doing nothing with the lines (the floor of any httpx-based SSE client);
- zpi: ``provider.stream(request)`` of the real provider, consumed to the end (every text and
  tool-call event; tool arguments parsed), the way the loop consumes it.

The two alternate, ``--rounds`` times. Figures are MB/s of wall time; the ratio is zpi /
baseline. Target: >= 0.5 for each format. Because the server writes event by event, the
baseline may wait for the server; the MB per CPU second of this process (the server's work
excluded) is printed too, for information.

    python benchmarks/sse_parse.py [--size-mb 20] [--rounds 5] [--quick]
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any

from _loopback import LoopbackServer, realistic
from _measure import ainterleave, arguments, compare, emit

TARGET = 0.5
WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while",
         '"quoted"', "words,", "numbers", "42", "and", "unicode", "é", "ü", "→", "漢字",
         "line\nbreaks", "appear", "in", "a", "streamed", "answer", "about", "code")


def build_stream(fmt: str, size_mb: float) -> tuple[bytes, int, int]:
    """(event-stream bytes, characters of text, tool calls) of one long answer."""
    from zpi_host.providers.script import ScriptedTurn
    from zpi_host.testing.model_server import sse_frames

    rng = random.Random(7)

    def unit(n: int) -> tuple[str, dict[str, Any]]:
        text = " ".join(rng.choice(WORDS) for _ in range(3000))
        content = " ".join(rng.choice(WORDS) for _ in range(60))
        return text, {"name": "write", "id": f"call_{n}",
                      "arguments": {"path": f"src/module_{n}.py", "content": content}}

    def stream(units: int) -> tuple[bytes, int]:
        parts = [unit(n) for n in range(units)]
        text = "".join(t for t, _ in parts)
        turn = ScriptedTurn.parse({"text": text, "tool_calls": [c for _, c in parts]}, "bench")
        return realistic(fmt, sse_frames(fmt, turn, model="bench", piece_chars=6)), len(text)

    probe, _ = stream(1)
    units = max(1, round(size_mb * 1_000_000 / len(probe)))
    rng.seed(7)
    data, chars = stream(units)
    return data, chars, units


async def bare_lines(url: str) -> int:
    import httpx

    lines = 0
    async with httpx.AsyncClient(timeout=120) as client, \
            client.stream("POST", url, content=b"{}") as response:
        async for _line in response.aiter_lines():
            lines += 1
    return lines


def make_provider(fmt: str, base_url: str) -> Any:
    from zpi_host.providers.catalog import ModelEntry

    entry = ModelEntry(name="bench", provider=fmt, model="bench", base_url=base_url,
                       api_key="bench-key")
    if fmt == "openai":
        from zpi_host.providers.openai import OpenAIProvider

        return OpenAIProvider(entry, {})
    from zpi_host.providers.anthropic import AnthropicProvider

    return AnthropicProvider(entry, {})


async def provider_events(fmt: str, base_url: str) -> tuple[int, int, int]:
    from zpi_host.providers.base import ModelRequest, TextDelta, ToolCallEnd
    from zpi_host.providers.messages import UserMessage

    provider = make_provider(fmt, base_url)
    request = ModelRequest("bench", "", [UserMessage.text("go")])
    events = chars = calls = 0
    try:
        async for event in provider.stream(request):
            events += 1
            if type(event) is TextDelta:
                chars += len(event.text)
            elif type(event) is ToolCallEnd:
                calls += 1
    finally:
        await provider.aclose()
    return events, chars, calls


async def measure(server: LoopbackServer, fmt: str, size_mb: float, rounds: int) -> Any:
    data, text_chars, tool_calls = build_stream(fmt, size_mb)
    mb = len(data) / 1_000_000
    server.load(fmt, data)
    url = server.base_url + ("/chat/completions" if fmt == "openai" else "/messages")
    seen: list[int] = []

    cpu: dict[str, list[float]] = {"bare": [], "zpi": []}

    async def bare() -> float:
        server.queue((fmt, 1))
        started, cpu_started = time.perf_counter(), time.process_time()
        await bare_lines(url)
        cpu["bare"].append(mb / (time.process_time() - cpu_started))
        return mb / (time.perf_counter() - started)

    async def zpi() -> float:
        server.queue((fmt, 1))
        started, cpu_started = time.perf_counter(), time.process_time()
        events, chars, calls = await provider_events(fmt, server.base_url)
        elapsed = time.perf_counter() - started
        cpu["zpi"].append(mb / (time.process_time() - cpu_started))
        if chars != text_chars or calls != tool_calls:
            raise SystemExit(f"{fmt}: decoded {chars} characters and {calls} tool calls, "
                             f"expected {text_chars} and {tool_calls}")
        seen.append(events)
        return mb / elapsed

    samples = await ainterleave({"bare": bare, "zpi": zpi}, rounds)
    sse_events = data.count(b"\n\n")
    print(f"{fmt}: {mb:.1f} MB, {sse_events} SSE events (one write each) -> "
          f"{seen[-1]} provider stream events; {text_chars} text characters, "
          f"{tool_calls} tool calls")
    name = f"sse_parse {fmt} ({mb:.3g} MB, realistic fields)"
    return [compare(name, samples["zpi"], samples["bare"], unit="MB/s", scale=1, op=">=",
                    target=TARGET),
            compare(f"{name}, per client CPU second", cpu["zpi"][1:], cpu["bare"][1:],
                    unit="MB/s", scale=1, op="",
                    note="MB per CPU second of the reading process (server excluded)"
                    if fmt == "openai" else "")]


async def amain(size_mb: float, rounds: int) -> int:
    os.environ.pop("HTTP_PROXY", None)
    with LoopbackServer() as server:
        rows = [row for fmt in ("openai", "anthropic")
                for row in await measure(server, fmt, size_mb, rounds)]
    emit(rows, "sse_parse")
    return 0


def main() -> int:
    args = arguments("sse_parse", __doc__, rounds=5, quick={"size_mb": 0.5, "rounds": 1},
                     options=[("--size-mb", {"type": float, "default": 20.0})],
                     minimum={"size_mb": 0.01})
    return asyncio.run(amain(args.size_mb, args.rounds))


if __name__ == "__main__":
    raise SystemExit(main())
