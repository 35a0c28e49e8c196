"""Transcript load: resuming a 100,000-record session against a bare ``json.loads`` of its lines.

A session of N records (default 100,000) is written through ``SessionManager`` with a
realistic mix: a user prompt every few turns, assistant messages with thinking (signed), text
and one or two tool calls, a ``tool_use`` journal record and a ``tool_result`` per call whose
output is 0.3-6 KB of numbered source lines or command output, and now and then a context
message. No compaction, so the whole history is rebuilt: the worst case.

Resuming = ``SessionManager.open`` (read, parse, validate the whole chain, recover the tool
journal) + ``messages()`` (the context) + the state accessors. The baseline, in the same run,
reads the same file and calls ``json.loads`` on every line, nothing else. Both are timed
best-of-R, interleaved. Target: resume / bare parse <= 2.5. The reader pauses the
cyclic garbage collector while it builds records; the ratio against a bare parse with the
collector paused too is printed for information.

Also timed (for information): appending 10,000 records with the default fsync policy
("turn": a flushed write per record, fsync once per turn of three records, as the session
does), and listing the session (``list_sessions``).

    python benchmarks/transcript_load.py [--records 100000] [--appends 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

RATIO_TARGET = 2.5
WORDS = ["def", "return", "import", "class", "self", "value", "result", "path", "file", "line",
         "error", "None", "True", "False", "for", "in", "if", "else", "while", "try", "except",
         "with", "as", "yield", "async", "await", "lambda"]


class Writer:
    """Makes the turns of a realistic session: lists of ("message" | "tool_use", payload)."""

    def __init__(self, seed: int = 7) -> None:
        self.rnd = random.Random(seed)
        self.call = 0
        self.turn = 0

    def words(self, n: int) -> str:
        return " ".join(self.rnd.choices(WORDS, k=n))

    def output(self) -> str:
        lines = self.rnd.randint(5, 100)
        if self.rnd.random() < 0.6:  # a read: numbered source lines
            return "\n".join(f"{i:>6}\t    {self.words(self.rnd.randint(2, 10))}"
                             for i in range(1, lines + 1))
        return "\n".join(self.words(self.rnd.randint(3, 12)) for _ in range(lines))

    def turns(self, count: int) -> list[list[tuple[str, Any]]]:
        """Turns holding at least ``count`` records in all."""
        from zpi_host.messages import (
            AssistantMessage,
            ContextMessage,
            TextContent,
            ThinkingContent,
            ToolCallContent,
            ToolResultMessage,
            Usage,
            UserMessage,
        )

        turns: list[list[tuple[str, Any]]] = []
        total = 0
        while total < count:
            self.turn += 1
            ops: list[tuple[str, Any]] = []
            if self.turn % 8 == 1:
                ops.append(("message", UserMessage.text(self.words(self.rnd.randint(10, 80)))))
            if self.turn % 25 == 0:
                ops.append(("message", ContextMessage(self.words(30), "memory")))
            calls = []
            for _ in range(1 if self.rnd.random() < 0.8 else 2):
                self.call += 1
                calls.append(ToolCallContent(
                    f"toolu_{self.call:08d}", self.rnd.choice(("read", "bash", "edit")),
                    {"path": f"src/pkg/mod_{self.call % 97}.py", "offset": self.call % 50,
                     "limit": 200}))
            ops.append(("message", AssistantMessage(
                (ThinkingContent(self.words(40), "sig" + "x" * 120),
                 TextContent(self.words(self.rnd.randint(5, 40))), *calls),
                "tool_use", Usage(12000 + self.turn, 300, 11000, 500), "anthropic", "claude-x")))
            ops += [("tool_use", call) for call in calls]
            ops += [("message", ToolResultMessage(
                call.id, call.name, (TextContent(self.output()),), False,
                {"duration_ms": round(self.rnd.random() * 50, 3)})) for call in calls]
            turns.append(ops)
            total += len(ops)
        return turns


def play(manager: Any, turns: list[list[tuple[str, Any]]], sync: bool = True) -> None:
    """Append the turns as the session does: one record per step, ``sync()`` per turn."""
    for ops in turns:
        for kind, item in ops:
            if kind == "message":
                manager.append_message(item)
            else:
                manager.append_tool_use(item.id, item.name, item.arguments)
        if sync:
            manager.sync()


def best(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def bare(path: Path) -> int:
    return len([json.loads(line) for line in path.read_bytes().split(b"\n") if line])


def bare_gc_paused(path: Path) -> int:
    gc.disable()
    try:
        return bare(path)
    finally:
        gc.enable()


def resume(path: Path) -> int:
    from zpi_host.transcript import SessionManager

    with SessionManager.open(path) as manager:
        messages = manager.messages()
        manager.last_model(), manager.last_reasoning_level(), manager.latest_snapshot()
        return len(messages)


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--appends", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from zpi_host.transcript import SessionManager, list_sessions

    with tempfile.TemporaryDirectory(prefix="zpi-bench-") as tmp:
        agent, cwd = Path(tmp) / "agent", Path(tmp) / "project"
        started = time.perf_counter()
        with SessionManager.create(cwd, agent_dir=agent) as manager:
            play(manager, Writer().turns(args.records - 1), sync=False)  # setup: no fsync
            path = manager.path
            records = len(manager.records)
        assert path is not None
        written = time.perf_counter() - started
        size = path.stat().st_size
        bare(path), resume(path)  # warm the page cache and imports
        bare_times, paused_times, resume_times = [], [], []
        for _ in range(args.repeat):  # interleaved, so drift hits all alike
            bare_times.append(best(lambda: bare(path), 1))
            paused_times.append(best(lambda: bare_gc_paused(path), 1))
            resume_times.append(best(lambda: resume(path), 1))
        t_bare, t_paused, t_resume = min(bare_times), min(paused_times), min(resume_times)
        t_list = best(lambda: list_sessions(cwd, agent_dir=agent), args.repeat)

        turns = Writer(seed=11).turns(args.appends)
        with SessionManager.create(cwd, agent_dir=agent) as target:
            started = time.perf_counter()
            play(target, turns)
            t_append = time.perf_counter() - started
            appended = len(target.records) - 1

    print(f"session: {records} records, {size / 1e6:.1f} MB (written in {written:.1f} s)")
    print(f"bare json.loads of every line: {t_bare * 1000:10.1f} ms")
    print(f"resume (open + validate + context): {t_resume * 1000:5.1f} ms")
    ratio = t_resume / t_bare
    print(f"resume / bare parse: {ratio:.2f} (target <= {RATIO_TARGET}) -> "
          f"{verdict(ratio <= RATIO_TARGET)}")
    print(f"  (for information: the bare parse with the garbage collector paused, as the reader "
          f"does, takes {t_paused * 1000:.1f} ms; resume / that: {t_resume / t_paused:.2f})")
    print(f"list_sessions (one {records}-record session): {t_list * 1000:.1f} ms")
    print(f"append {appended} records, fsync per turn: {t_append:.2f} s = "
          f"{appended / t_append:,.0f} records/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
