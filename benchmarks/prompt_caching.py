"""Prompt caching: the share of a long session's input tokens that Anthropic would read from
its prompt cache, given the ``cache_control`` breakpoints this host places.

A 50-turn session (default) through the real Anthropic provider against the loopback model
server (``zpi_host.testing.model_server``, which records every request body): five user
prompts of ten model turns each; every turn but the last of a prompt calls a tool with
realistic output: ``read`` of one of this repository's own source files (copied into a
temporary project), or ``bash`` running ``grep -n`` over one. Each round chooses other files
(seeded), so rounds differ in their tool output.

The recorded bodies are then replayed through a model of Anthropic's caching rules:

- the prompt is the sequence of blocks tools -> system -> messages' content blocks; a cache
  entry is the exact prefix up to a block that carried a breakpoint;
- a request reads the longest cached prefix ending at one of its breakpoints or up to 20
  blocks before one (the API's lookback), written by an earlier request less than 5 minutes
  before (each read refreshes the entry);
- it writes an entry at each of its breakpoints past that point whose prefix is at least
  1,024 tokens (the minimum cacheable length of Sonnet and Opus models);
- tokens are estimated as the block's JSON bytes / 4, rounded up;
- time is simulated, not measured: a model turn (answer and tool) takes 20 s, the user
  takes 60 s between prompts.

The row: cache-read input tokens / all input tokens (cache reads + writes + uncached), the
median over ``--rounds`` rounds, with the lowest and highest round. Target: >= 0.85. The run
fails (exit 1) if a request carries more than four breakpoints or the session does not run
its turns.

    python benchmarks/prompt_caching.py [--turns 50] [--rounds 5] [--quick]
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

from _measure import Row, arguments, emit

TARGET = 0.85
TURNS_PER_PROMPT = 10
MIN_CACHEABLE_TOKENS = 1024
TTL_SECONDS = 300.0
LOOKBACK_BLOCKS = 20
TURN_SECONDS = 20.0
PROMPT_GAP_SECONDS = 60.0
MAX_BREAKPOINTS = 4
SOURCES = Path(__file__).resolve().parents[1] / "zpi_host" / "src" / "zpi_host"


def tokens(block: Any) -> int:
    """The documented estimate: JSON bytes / 4, rounded up."""
    return -(-len(json.dumps(block, separators=(",", ":")).encode()) // 4)


def blocks_of(body: dict[str, Any]) -> list[tuple[dict[str, Any], bool]]:
    """The prompt in cache order, each block with whether it carries a breakpoint (the
    breakpoint itself is not part of the cached text)."""
    out: list[tuple[dict[str, Any], bool]] = []
    system = body.get("system") or []
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    raw = [*body.get("tools", []), *system]
    for message in body["messages"]:
        raw += [{**block, "role": message["role"]} for block in message["content"]]
    for block in raw:
        plain = {k: v for k, v in block.items() if k != "cache_control"}
        out.append((plain, "cache_control" in block))
    return out


class CacheModel:
    """Anthropic's prompt cache as the module docstring describes it, for one session."""

    def __init__(self) -> None:
        self.entries: dict[str, float] = {}  # prefix digest -> time it expires

    def request(self, body: dict[str, Any], now: float) -> tuple[int, int, int]:
        """(read, written, uncached) input tokens of one request at time ``now``."""
        blocks = blocks_of(body)
        marks = [i for i, (_, marked) in enumerate(blocks) if marked]
        if len(marks) > MAX_BREAKPOINTS:
            raise SystemExit(f"a request carries {len(marks)} cache breakpoints; the API "
                             f"allows {MAX_BREAKPOINTS}")
        digests, cumulative = [], []
        digest, total = hashlib.sha256(), 0
        for block, _ in blocks:
            digest.update(json.dumps(block, sort_keys=True).encode())
            digests.append(digest.copy().hexdigest())
            total += tokens(block)
            cumulative.append(total)
        read_end = -1
        for mark in marks:
            for i in range(mark, max(-1, mark - LOOKBACK_BLOCKS - 1), -1):
                if self.entries.get(digests[i], -1.0) > now:
                    read_end = max(read_end, i)
                    break
        if read_end >= 0:
            self.entries[digests[read_end]] = now + TTL_SECONDS
        read = cumulative[read_end] if read_end >= 0 else 0
        write_end = read_end
        for mark in marks:
            if mark > read_end and cumulative[mark] >= MIN_CACHEABLE_TOKENS:
                self.entries[digests[mark]] = now + TTL_SECONDS
                write_end = max(write_end, mark)
        written = cumulative[write_end] - read if write_end > read_end else 0
        return read, written, total - read - written


def make_project(root: Path, rng: random.Random) -> list[str]:
    """Copies of this repository's source files (realistic tool output); their names."""
    sources = sorted(p for p in SOURCES.rglob("*.py") if 2_000 < p.stat().st_size < 20_000)
    names = []
    for path in rng.sample(sources, min(30, len(sources))):
        name = "_".join(path.relative_to(SOURCES).parts)
        (root / name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
        names.append(name)
    return names


def script(names: list[str], turns: int, rng: random.Random) -> list[dict[str, Any]]:
    """The model's turns: tool calls, and a short answer closing each prompt."""
    out: list[dict[str, Any]] = []
    for turn in range(turns):
        if (turn + 1) % TURNS_PER_PROMPT == 0 or turn == turns - 1:
            out.append({"text": "The change is in place and the tests pass."})
            continue
        name = rng.choice(names)
        if rng.random() < 0.7:
            call = {"name": "read", "arguments": {"path": name}}
        else:
            command = f"grep -n -E 'def |class |import ' {name}"
            call = {"name": "bash", "arguments": {"command": command}}
        out.append({"text": f"Looking at {name}.", "tool_calls": [call]})
    return out


async def one_round(seed: int, turns: int) -> tuple[float, str]:
    """One session; (cache-read share, a note on writes and uncached tokens)."""
    from zpi_host.contract.plugins import PluginConfig, PluginHost
    from zpi_host.providers.anthropic import AnthropicProvider
    from zpi_host.providers.catalog import ModelEntry
    from zpi_host.session.assembly import create_session
    from zpi_host.testing.model_server import ModelServer

    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="zpi-bench-cache-") as tmp, \
            ModelServer(script([], 0, rng)) as server:
        root = Path(tmp, "project").resolve()
        root.mkdir()
        names = make_project(root, rng)
        turns_script = script(names, turns, rng)
        server.add_turns(turns_script)
        entry = ModelEntry(name="anthropic:bench", provider="anthropic", model="bench",
                           base_url=server.base_url, api_key="bench-key")
        provider = AnthropicProvider(entry, {})
        session = await create_session(model="anthropic:bench", provider=provider, cwd=root,
                                       agent_dir=Path(tmp, "agent"), persist=False,
                                       host=PluginHost(PluginConfig(autoload=False)).load(),
                                       permission_mode="bypass")
        ran = 0
        try:
            for prompt in range(-(-turns // TURNS_PER_PROMPT)):
                result = await session.run(f"task {prompt + 1}: look through the code")
                if result.is_error:
                    raise SystemExit(f"prompt {prompt + 1} failed: {result.error}")
                ran += result.num_turns
        finally:
            await session.dispose()
            await provider.aclose()
        bodies = [r.json for r in server.requests]
    if ran != turns or len(bodies) != turns:
        raise SystemExit(f"the session ran {ran} turns in {len(bodies)} requests, not {turns}")
    failed = [b for m in bodies[-1]["messages"] for b in m["content"]
              if b.get("type") == "tool_result" and b["is_error"]]
    if failed:
        raise SystemExit(f"{len(failed)} tool calls failed, e.g. {failed[0]['content']}")
    cache, now = CacheModel(), 0.0
    read = written = uncached = 0
    for n, body in enumerate(bodies):
        if n and n % TURNS_PER_PROMPT == 0:
            now += PROMPT_GAP_SECONDS
        r, w, u = cache.request(body, now)
        read, written, uncached = read + r, written + w, uncached + u
        now += TURN_SECONDS
    total = read + written + uncached
    return read / total, (f"{total:,} input tokens: {written / total:.1%} cache writes, "
                          f"{uncached / total:.1%} uncached")


async def amain(turns: int, rounds: int) -> int:
    shares, notes = [], []
    for seed in range(rounds):
        share, note = await one_round(seed, turns)
        print(f"round {seed + 1}: {share:.1%} of input tokens are cache reads ({note})",
              flush=True)
        shares.append(share)
        notes.append(note)
    median = statistics.median(shares)
    row = Row(f"prompt_caching: cache-read share of input, {turns}-turn Anthropic session",
              median * 100, 100.0, "%", median, ">=", TARGET, min(shares), max(shares),
              rounds, f"simulated cache (5 min, 1,024-token minimum, bytes/4); "
                      f"{notes[shares.index(median)] if median in shares else notes[0]}")
    emit([row], "prompt_caching")
    return 0


def main() -> int:
    args = arguments("prompt_caching", __doc__, rounds=5, quick={"turns": 10, "rounds": 1},
                     options=[("--turns", {"type": int, "default": 50})],
                     minimum={"turns": 2})
    return asyncio.run(amain(args.turns, args.rounds))


if __name__ == "__main__":
    raise SystemExit(main())
