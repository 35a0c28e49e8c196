"""A long session in bounded memory: 1,000 turns whose tool results are 4 KB each.

Turns 1..N-1 each call the kernel ``read`` on a file of its own (about 4 KB once numbered:
no two results are the same, so nothing can be answered from an earlier one); turn N answers
with text. No compaction (but in the compacting sessions below): the whole history stays in
the session, which is the worst case.
The session writes its transcript into a temporary agent dir, as a user's run does.

Measured, ``--rounds`` sessions in this process (``create_session`` with a function model
that answers from the same script the ``scripted`` provider reads, and samples the process
at each model request):

- memory per turn after turn 100: the growth of the process's resident set from the request
  of turn 100 to that of turn N, over the turns between (target <= 0.05 MiB). The history
  itself holds each result once (4 KB = 0.004 MiB a turn); the rest is what the host keeps
  per request.
- per-turn time, turns N-99..N against turns 1..100 (target <= 1.2), by the wall clock and
  by this process's CPU time (steadier on a loaded machine).
- the same two rows with the real HTTP providers (OpenAI and Anthropic wire formats, over
  loopback to a server in another process, ``_loopback.py``), every turn a ``read`` of the
  same 4 KB file: each request carries the whole history, so a request's body grows to a
  few MB by turn 1,000 (``--no-providers`` skips them);
- P6 as the issue states it, compaction on at the catalog's context window: the same
  provider sessions with a catalog model's entry (``COMPACTED``: gpt-4o's 128,000 tokens,
  claude-sonnet-4-5's 200,000) and the loopback server reporting each request's input as a
  quarter of its body's bytes, so the session compacts whenever the history nears the
  window (the server answers the summary request with a summary; ``--no-compaction`` skips
  these; each session in a process of its own, as a user's run is): per-turn time (wall
  and CPU), turns N-99..N against 1..100 (<= 1.2), and the resident set's peak between one
  compaction and the next, the last cycle's against the first full one's (flat: <= 1.05;
  the transcript store lets the compacted records go, and reads them back from the file
  when asked);
- for information, the Python heap's growth per turn (``tracemalloc``, a session of its own,
  which tracing slows), and the whole process: ``zpi-host run --model scripted:FILE`` of the
  same script, its peak RSS (``ru_maxrss``) against the script's tool results' size.

(A run too short to cross the catalog's window three times, ``--quick``, compacts at a
window of :data:`SHORT_WINDOW` tokens instead.)

    python benchmarks/long_session.py [--turns 1000] [--rounds 3] [--quick] [--no-providers]
                                      [--no-compaction]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import _install
from _loopback import MARKER, TOKENS, LoopbackServer, realistic
from _measure import MeasuredProcess, Row, arguments, compare, emit

GROWTH_TARGET_MIB = 0.05
TIME_TARGET = 1.2
WINDOW = 100
RESULT_BYTES = 4096
USAGE = {"input_tokens": 1200, "output_tokens": 20}
#: the catalog models whose context window the compacting sessions use, per format
COMPACTED = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5"}
FLAT_TARGET = 1.05
#: about the tokens a turn adds to the history (its 4 KB result, the call, the framing)
TURN_TOKENS = 1100
#: the window of a run too short to cross the catalog's several times (``--quick``)
SHORT_WINDOW = 40_000
SUMMARY = "Summary: the user asked to read big.txt again and again; it was read each time."
MIB = 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm", encoding="ascii") as stream:
        return int(stream.read().split()[1]) * PAGE


def write_files(root: Path, turns: int) -> list[dict[str, Any]]:
    """A file of about 4 KB (numbered) per turn, and the script that reads them in turn."""
    script: list[dict[str, Any]] = []
    for turn in range(1, turns):
        lines, size = [], 0
        while size < RESULT_BYTES - 200:
            line = f"turn {turn} line {len(lines) + 1}: value = compute(path, {size})\n"
            lines.append(line)
            size += len(line) + 8  # the tool's line number and tab
        (root / f"f{turn}.txt").write_text("".join(lines), encoding="utf-8")
        script.append({"tool_calls": [{"name": "read", "arguments": {"path": f"f{turn}.txt"}}],
                       "usage": USAGE})
    script.append({"text": "done", "usage": USAGE})
    return script


class Sampled:
    """What one session gives: per-request stamps, RSS and (when traced) heap."""

    def __init__(self) -> None:
        self.stamps: list[float] = []
        self.cpu: list[float] = []  # this process's CPU time (time.process_time)
        self.rss: list[int] = []
        self.heap: list[int] = []
        self.compactions: list[int] = []  # the turn (index into stamps) each one came before

    def stamp(self) -> None:
        self.stamps.append(time.perf_counter())
        self.cpu.append(time.process_time())


async def run_session(script: list[dict[str, Any]], root: Path, agent: Path,
                      trace: bool) -> Sampled:
    from zpi_host.contract.plugins import PluginConfig, PluginHost
    from zpi_host.session.assembly import create_session
    from zpi_host.testing import FunctionModel

    sampled = Sampled()

    async def model(request: Any) -> Any:
        sampled.stamp()
        sampled.rss.append(rss())
        if trace:
            sampled.heap.append(tracemalloc.get_traced_memory()[0])
        return script[len(sampled.stamps) - 1]

    host = PluginHost(PluginConfig(autoload=False)).load()
    session = await create_session(model="function:bench", provider=FunctionModel(model),
                                   cwd=root, agent_dir=agent, host=host, tools=["read"])
    result = await session.run("read each file in turn")
    sampled.stamp()
    await session.dispose()
    if result.is_error or result.num_turns != len(script):
        raise SystemExit(f"session failed: {result.stop_reason} {result.error} after "
                         f"{result.num_turns} turns")
    return sampled


class Sampling:
    """A real provider, with the time and RSS of each ``stream`` call recorded."""

    def __init__(self, provider: Any, sampled: Sampled) -> None:
        self._provider, self.sampled = provider, sampled

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)

    async def stream(self, request: Any) -> Any:
        from zpi_host.agent.compaction import SUMMARY_SYSTEM_PROMPT

        if request.system_prompt == SUMMARY_SYSTEM_PROMPT:  # part of the turn that follows
            self.sampled.compactions.append(len(self.sampled.stamps))
        else:
            self.sampled.stamp()
            self.sampled.rss.append(rss())
        async for event in self._provider.stream(request):
            yield event

    async def aclose(self) -> None:
        await self._provider.aclose()


def load_streams(server: LoopbackServer, path: str) -> None:
    """Per format: a turn that reads ``path`` and a last turn that answers (``FMT-call``,
    ``FMT-done``), and for the compacting sessions the same with the input counted from the
    request, plus the summary a compaction asks for (``FMT-counted-call``, ...)."""
    from zpi_host.providers.script import ScriptedTurn
    from zpi_host.testing.model_server import sse_frames

    counted = {**USAGE, "input_tokens": TOKENS}
    for fmt in ("openai", "anthropic"):
        prefix = "call_" if fmt == "openai" else "toolu_"
        read = {"text": "Reading it again.", "tool_calls": [
            {"name": "read", "id": prefix + MARKER.decode(), "arguments": {"path": path}}]}
        turns = {"call": {**read, "usage": USAGE}, "done": {"text": "done", "usage": USAGE},
                 "counted-call": {**read, "usage": counted},
                 "counted-done": {"text": "done", "usage": counted},
                 "counted-summary": {"text": SUMMARY, "usage": counted}}
        for name, turn in turns.items():
            frames = sse_frames(fmt, ScriptedTurn.parse(turn, "bench"), model="bench")
            server.load(f"{fmt}-{name}", realistic(fmt, frames))


async def provider_session(fmt: str, server: LoopbackServer, turns: int, root: Path,
                           agent: Path, compacted: str | None = None) -> Sampled:
    """A session of ``turns`` with the ``fmt`` provider at the loopback server; with
    ``compacted`` (a catalog model), that model's entry and so its context window, the
    server counting each request's input and answering summary requests."""
    import attrs

    from zpi_host.agent.compaction import SUMMARY_SYSTEM_PROMPT
    from zpi_host.contract.plugins import PluginConfig, PluginHost
    from zpi_host.providers.catalog import ModelEntry, resolve_model
    from zpi_host.session.assembly import create_session

    if compacted is None:
        entry = ModelEntry(name=f"{fmt}:bench", provider=fmt, model="bench",
                           base_url=server.base_url, api_key="bench-key")
    else:
        entry = attrs.evolve(resolve_model(f"{fmt}:{compacted}", {}),
                             base_url=server.base_url, api_key="bench-key")
        assert entry.context_window, f"the catalog gives {compacted} no context window"
        if turns * TURN_TOKENS < 3 * entry.context_window:  # too short to compact often
            entry = attrs.evolve(entry, context_window=SHORT_WINDOW)
    if fmt == "openai":
        from zpi_host.providers.openai import OpenAIProvider as Provider
    else:
        from zpi_host.providers.anthropic import AnthropicProvider as Provider  # type: ignore[assignment]
    sampled = Sampled()
    provider = Sampling(Provider(entry, {}), sampled)
    streams = f"{fmt}-counted-" if compacted else f"{fmt}-"
    server.queue((streams + "call", turns - 1), (streams + "done", 1))
    server.route(*([(SUMMARY_SYSTEM_PROMPT[:60], f"{fmt}-counted-summary")] if compacted
                   else []))
    host = PluginHost(PluginConfig(autoload=False)).load()
    session = await create_session(model=entry.name, provider=provider, cwd=root,
                                   agent_dir=agent, host=host, tools=["read"])
    try:
        result = await session.run("read big.txt again and again")
        sampled.stamp()
    finally:
        await session.dispose()
    if result.is_error or result.num_turns != turns:
        raise SystemExit(f"{fmt} run failed: {result.stop_reason} {result.error} after "
                         f"{result.num_turns} turns")
    if compacted and not sampled.compactions and turns * TURN_TOKENS > SHORT_WINDOW:
        raise SystemExit(f"{fmt} at {compacted}'s window: the session never compacted")
    return sampled


def whole_process(script_file: Path, root: Path, agent: Path) -> float:
    """Peak RSS (MiB) of ``zpi-host run`` over the script."""
    exe = str(_install.current_bin() / "zpi-host")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["ZPI_AGENT_DIR"] = str(agent)
    finished = MeasuredProcess([exe, "run", "--model", f"scripted:{script_file}",
                                "--allow", "read", "read each file in turn"],
                               cwd=root, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL).wait()
    if finished.returncode != 0:
        raise SystemExit(f"zpi-host run failed ({finished.returncode})")
    return finished.peak_rss / (1 << 20)


def growth_row(label: str, samples: list[list[int]], turns: int, target: float | None,
               note: str) -> Row:
    start = min(WINDOW, turns // 2)
    per_turn = [(s[-1] - s[start - 1]) / (len(s) - start) / MIB for s in samples]
    median = statistics.median(per_turn)
    return Row(label, median, GROWTH_TARGET_MIB, "MiB", median / GROWTH_TARGET_MIB, "<=",
               None if target is None else 1.0, min(per_turn) / GROWTH_TARGET_MIB,
               max(per_turn) / GROWTH_TARGET_MIB, len(samples), note)


def session_rows(label: str, runs: list[Sampled], turns: int) -> list[Row]:
    window = min(WINDOW, turns // 2)
    gaps = [[b - a for a, b in itertools.pairwise(r.stamps)] for r in runs]
    cpu = [[b - a for a, b in itertools.pairwise(r.cpu)] for r in runs]
    return [
        growth_row(f"long_session{label}: RSS growth per turn after turn {window}, {turns} "
                   "turns of 4 KB results", [r.rss for r in runs], turns, GROWTH_TARGET_MIB,
                   "" if label else "zpi = MiB per turn, baseline = the target (0.05 MiB); "
                   "the history's own share is about 0.004 MiB"),
        compare(f"long_session{label}: turns {turns - window + 1}-{turns} vs 1-{window}",
                [sum(g[-window:]) for g in gaps], [sum(g[:window]) for g in gaps],
                target=TIME_TARGET, note="" if label else "baseline = the same session's "
                "first turns"),
        compare(f"long_session{label}: CPU time of turns {turns - window + 1}-{turns} vs "
                f"1-{window}", [sum(g[-window:]) for g in cpu], [sum(g[:window]) for g in cpu],
                target=TIME_TARGET, note="" if label else "this process's CPU time "
                "(time.process_time; the loopback server's is its own): steadier than the "
                "wall clock on a loaded machine"),
    ]


SAMPLES = "SAMPLES "


def compacting_process(fmt: str, turns: int) -> Sampled:
    """A compacting session in a process of its own (as a user's run is: its resident set
    not shaped by the sessions before it), with its own loopback server."""
    done = subprocess.run([sys.executable, __file__, "--compacting", fmt, "--turns", str(turns)],
                          capture_output=True, text=True, check=False)
    line = next((x for x in done.stdout.splitlines() if x.startswith(SAMPLES)), None)
    if done.returncode != 0 or line is None:
        raise SystemExit(f"the compacting {fmt} session failed ({done.returncode}): "
                         f"{done.stderr[-2000:]}")
    sampled = Sampled()
    sampled.__dict__.update(json.loads(line[len(SAMPLES):]))
    return sampled


async def compacting_child(fmt: str, turns: int) -> None:
    """``--compacting FMT``: a warm-up session, then the compacting one; its samples printed
    as one line."""
    os.environ.pop("HTTP_PROXY", None)
    with tempfile.TemporaryDirectory(prefix="zpi-bench-long-") as tmp:
        root, agent = Path(tmp, "project").resolve(), Path(tmp, "agent").resolve()
        root.mkdir()
        write_files(root, 2)
        (root / "big.txt").write_text((root / "f1.txt").read_text(encoding="utf-8"),
                                      encoding="utf-8")
        with LoopbackServer() as server:
            load_streams(server, "big.txt")
            await provider_session(fmt, server, 20, root, agent)  # warm imports, connections
            sampled = await provider_session(fmt, server, turns, root, agent, COMPACTED[fmt])
    print(SAMPLES + json.dumps({"stamps": sampled.stamps, "cpu": sampled.cpu,
                                "rss": sampled.rss, "compactions": sampled.compactions}))


def cycle_peaks(sampled: Sampled) -> list[float]:
    """The resident set's peak (MiB) over the turns between one compaction and the next."""
    marks = sampled.compactions
    return [max(sampled.rss[a:b]) / MIB for a, b in itertools.pairwise(marks) if b > a]


def flat_row(label: str, runs: list[Sampled]) -> Row:
    peaks = [cycle_peaks(r) for r in runs]
    ratios = [p[-1] / p[0] for p in peaks if len(p) >= 2]
    measure = f"long_session{label}: peak RSS of the last compaction cycle vs the first"
    if not ratios:  # a short run
        nan = float("nan")
        return Row(measure, nan, nan, "MiB", nan, "<=", None, nan, nan, len(runs),
                   f"{len(runs[0].compactions)} compactions: too few cycles to compare")
    first = [p[0] for p in peaks if len(p) >= 2]
    last = [p[-1] for p in peaks if len(p) >= 2]
    shown = ", ".join(f"{v:.1f}" for v in peaks[0])
    return Row(measure, statistics.median(last), statistics.median(first), "MiB",
               statistics.median(ratios), "<=", FLAT_TARGET, min(ratios), max(ratios),
               len(ratios), f"{len(runs[0].compactions)} compactions; peaks per cycle (MiB), "
               f"first round: {shown}")


async def amain(turns: int, rounds: int, providers: bool, compaction: bool) -> int:
    with tempfile.TemporaryDirectory(prefix="zpi-bench-long-") as tmp:
        root, agent = Path(tmp, "project").resolve(), Path(tmp, "agent").resolve()
        root.mkdir()
        script = write_files(root, turns)
        script_file = Path(tmp, "script.jsonl")
        script_file.write_text("".join(json.dumps(t) + "\n" for t in script), encoding="utf-8")
        await run_session(script[:20] + script[-1:], root, agent, trace=False)  # warm up
        runs = [await run_session(script, root, agent, trace=False) for _ in range(rounds)]
        tracemalloc.start()
        traced = await run_session(script, root, agent, trace=True)
        tracemalloc.stop()
        peaks = [whole_process(script_file, root, agent) for _ in range(rounds)]
        provided: dict[str, list[Sampled]] = {"openai": [], "anthropic": []}
        compacted: dict[str, list[Sampled]] = {"openai": [], "anthropic": []}
        if providers:
            os.environ.pop("HTTP_PROXY", None)
            (root / "big.txt").write_text((root / "f1.txt").read_text(encoding="utf-8"),
                                          encoding="utf-8")
            with LoopbackServer() as server:
                load_streams(server, "big.txt")
                for fmt in provided:  # warm imports and connections
                    await provider_session(fmt, server, 20, root, agent)
                for _ in range(rounds):
                    for fmt, sessions in provided.items():
                        sessions.append(await provider_session(fmt, server, turns, root,
                                                               agent))
                        if compaction:
                            compacted[fmt].append(compacting_process(fmt, turns))
    window = min(WINDOW, turns // 2)
    rows = [
        *session_rows("", runs, turns),
        *(row for fmt, sessions in provided.items() if sessions
          for row in session_rows(f" {fmt}", sessions, turns)),
        *(row for fmt, sessions in compacted.items() if sessions
          for row in [*session_rows(f" {fmt} compacting at {COMPACTED[fmt]}'s window",
                                    sessions, turns),
                      flat_row(f" {fmt} compacting at {COMPACTED[fmt]}'s window", sessions)]),
        growth_row(f"long_session: Python heap growth per turn after turn {window} "
                   "(tracemalloc)", [traced.heap], turns, None, ""),
        Row(f"long_session: `zpi-host run` peak RSS, {turns} turns (MiB)",
            statistics.median(peaks), turns * RESULT_BYTES / MIB, "MiB",
            statistics.median(peaks) / (turns * RESULT_BYTES / MIB), "", None,
            min(peaks) / (turns * RESULT_BYTES / MIB), max(peaks) / (turns * RESULT_BYTES / MIB),
            len(peaks), "baseline = the size of the tool results (MiB)"),
    ]
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}"
          " MiB")
    emit(rows, "long_session")
    return 0


def main() -> int:
    args = arguments("long_session", __doc__, rounds=3, quick={"turns": 30, "rounds": 1},
                     options=[("--turns", {"type": int, "default": 1000}),
                              ("--no-providers", {"action": "store_true",
                                                  "help": "skip the HTTP providers' sessions"}),
                              ("--no-compaction", {"action": "store_true",
                                                   "help": "skip the providers' sessions "
                                                           "that compact"}),
                              ("--compacting", {"choices": sorted(COMPACTED),
                                                "help": argparse.SUPPRESS})],
                     minimum={"turns": 10})
    if args.compacting:  # a child of compacting_process
        asyncio.run(compacting_child(args.compacting, args.turns))
        return 0
    return asyncio.run(amain(args.turns, args.rounds, not args.no_providers,
                             not args.no_compaction))


if __name__ == "__main__":
    raise SystemExit(main())
