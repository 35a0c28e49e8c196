"""Stream decoding throughput of the HTTP providers against a bare line reader.

For each wire format (OpenAI chat, Anthropic messages) about 50 MB of recorded event stream
is built: one long answer of many short text deltas (2-12 characters, like tokens) and some
tool calls whose arguments arrive in pieces. The loopback model server sends the same bytes
(raw mode) to

- the baseline: a bare ``async for line in response.aiter_lines()`` over an httpx stream,
  doing nothing with the lines;
- the provider: ``provider.stream(request)``, consumed to the end (every text, reasoning and
  tool-call event, arguments parsed), the way the loop consumes it. Deltas of one kind that
  arrive in one network read are merged into one stream event (see
  ``zpi_host/providers/fastpath.py``), so the provider yields far fewer events than there
  are SSE events; the count of each is printed.

Each is run ``--repeat`` times in the same process; the best run counts. The figure is the
provider's MB/s divided by the baseline's. Target: >= 0.5 for each format.

    python benchmarks/sse_parse.py [--size-mb 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import time
from typing import Any

RATIO_TARGET = 0.5
WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while",
         '"quoted"', "words,", "numbers", "42", "and", "unicode", "é", "ü", "→", "漢字",
         "line\nbreaks", "appear", "in", "a", "streamed", "answer", "about", "code")


def build_stream(fmt: str, size_mb: float) -> tuple[bytes, int, int]:
    """(event-stream bytes, characters of text, tool calls) for one long recorded answer, as
    the loopback model server writes it: text in 6-character deltas (about a token each),
    then tool calls whose arguments arrive in 6-character pieces."""
    from zpi_host.providers.script import ScriptedTurn
    from zpi_host.testing.model_server import sse_frames

    rng = random.Random(7)

    def unit(n: int) -> tuple[str, dict[str, Any]]:
        text = " ".join(rng.choice(WORDS) for _ in range(3000))
        content = " ".join(rng.choice(WORDS) for _ in range(60))
        return text, {"name": "write", "id": f"call_{n}",
                      "arguments": {"path": f"src/module_{n}.py", "content": content}}

    def frames(units: int) -> tuple[list[bytes], int]:
        parts = [unit(n) for n in range(units)]
        text = "".join(t for t, _ in parts)
        turn = ScriptedTurn.parse({"text": text, "tool_calls": [c for _, c in parts]}, "bench")
        return sse_frames(fmt, turn, model="bench", piece_chars=6), len(text)

    probe, _ = frames(1)
    units = max(1, round(size_mb * 1_000_000 / sum(map(len, probe))))
    rng.seed(7)
    recorded, chars = frames(units)
    return b"".join(recorded), chars, units


async def bare_lines(url: str) -> int:
    import httpx

    lines = 0
    async with httpx.AsyncClient(timeout=60) as client, \
            client.stream("POST", url, content=b"{}") as response:
        async for _line in response.aiter_lines():
            lines += 1
    return lines


async def provider_events(fmt: str, base_url: str) -> tuple[int, int, int]:
    from zpi_host.messages import UserMessage
    from zpi_host.providers.base import ModelRequest, TextDelta, ToolCallEnd
    from zpi_host.providers.catalog import ModelEntry

    entry = ModelEntry(name="bench", provider=fmt, model="bench", base_url=base_url,
                       api_key="bench-key")
    if fmt == "openai":
        from zpi_host.providers.openai import OpenAIProvider as Provider
    else:
        from zpi_host.providers.anthropic import AnthropicProvider as Provider  # type: ignore
    provider = Provider(entry, {})
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


async def measure(fmt: str, size_mb: float, repeat: int) -> float:
    from zpi_host.testing import ModelServer

    data, text_chars, tool_calls = build_stream(fmt, size_mb)
    mb = len(data) / 1_000_000
    path = "/chat/completions" if fmt == "openai" else "/messages"
    with ModelServer() as server:
        url = server.base_url + path
        best_bare = best_provider = float("inf")
        for _ in range(repeat):
            server.fail_next(raw=data)
            started = time.perf_counter()
            await bare_lines(url)
            best_bare = min(best_bare, time.perf_counter() - started)
            server.fail_next(raw=data)
            started = time.perf_counter()
            events, chars, calls = await provider_events(fmt, server.base_url)
            best_provider = min(best_provider, time.perf_counter() - started)
            if chars != text_chars or calls != tool_calls:
                raise SystemExit(f"{fmt}: decoded {chars} characters and {calls} tool calls, "
                                 f"expected {text_chars} and {tool_calls}")
    bare, prov = mb / best_bare, mb / best_provider
    ratio = prov / bare
    sse_events = data.count(b"\n\n")
    print(f"{fmt}: {mb:.1f} MB, {sse_events} SSE events -> {events} stream events "
          f"({text_chars} text characters, {tool_calls} tool calls)")
    print(f"  bare aiter_lines:   {bare:8.1f} MB/s")
    print(f"  provider stream():  {prov:8.1f} MB/s")
    print(f"  provider / bare:    {ratio:8.2f} (target >= {RATIO_TARGET}) -> "
          f"{'met' if ratio >= RATIO_TARGET else 'NOT met'}")
    return ratio


async def amain(size_mb: float, repeat: int) -> int:
    os.environ.pop("HTTP_PROXY", None)
    ratios = [await measure(fmt, size_mb, repeat) for fmt in ("openai", "anthropic")]
    return 0 if all(r >= RATIO_TARGET for r in ratios) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=50.0,
                        help="size of each recorded stream (default 50)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per reader; best counts")
    args = parser.parse_args()
    if args.size_mb <= 0 or args.repeat < 1:
        parser.error("--size-mb must be positive and --repeat at least 1")
    return asyncio.run(amain(args.size_mb, args.repeat))


if __name__ == "__main__":
    raise SystemExit(main())
