"""Transcript load: resuming a 100,000-record session, against ``json.loads`` of its lines.

A session of N records (default 100,000) is written through ``SessionManager`` with a
realistic mix: a user prompt every few turns, assistant messages with thinking (signed), text
and one or two tool calls, a ``tool_use`` journal record and a ``tool_result`` per call whose
output is 0.3-6 KB of numbered source lines or command output, and now and then a context
message. No compaction, so the whole history is rebuilt: the worst case.

Two shapes (``--shape``, default both): ``zpi``, the mix above; ``claude``, records shaped
like a Claude Code session's: many small records (an assistant message holding one tool
call, a ``tool_use`` journal record and a plugin's progress record per call, short results
of edits and globs), thinking of 60-250 words with a long signature, and now and then a
long command output (200-600 lines); about 1.3 KB a record on average, as a Claude Code
session of 100,000 records and 134 MB.

Measured, each against its baseline, alternating ``--rounds`` times:

1. What users run, as whole processes: ``zpi-host run --resume ID --model scripted:FILE
   "one more thing"`` (start, resume, one scripted turn answering text, append that turn,
   exit) against a process that reads the same file and calls ``json.loads`` on each line
   as text (``for line in open(path, encoding="utf-8")``) with the garbage collector in its
   default state. The turn the run appends is cut off again after each run (the file is
   truncated back to its size), so every run resumes the same N records. Target <= 1.5;
   and the run's peak RSS (``ru_maxrss``) against the file's size (target <= 2).
2. The public API in this process: ``create_session(resume=ID, ...)`` with a scripted model,
   ``session.run`` of the same one-turn follow-up, ``dispose``; against ``json.loads`` of
   each line as text in this process, default GC. For information.

Also timed (for information): appending 10,000 records with the default fsync policy
("turn": a flushed write per record, fsync once per turn of three records, as the session
does).

    python benchmarks/transcript_load.py [--records 100000] [--rounds 5] [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _measure import (
    MeasuredProcess,
    Row,
    ainterleave,
    arguments,
    atimed,
    compare,
    emit,
    interleave,
    timed,
)

RATIO_TARGET = 1.5
RSS_TARGET = 2.0
FOLLOW_UP = "one more thing"
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
        from zpi_host.providers.messages import (
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


class ClaudeShapedWriter(Writer):
    """Turns shaped like a Claude Code session's: many small records, long thinking with
    long signatures, mostly short tool results and now and then a long output."""

    def lines(self, count: int, numbered: bool) -> str:
        return "\n".join((f"{i:>6}\t" if numbered else "") + self.words(self.rnd.randint(3, 12))
                         for i in range(1, count + 1))

    def output(self) -> str:
        roll = self.rnd.random()
        if roll < 0.65:  # an edit, a write, a glob, a short command
            return self.rnd.choice(("The file has been updated.", "ok", self.words(12),
                                    "\n".join(f"src/pkg/mod_{i}.py" for i in range(8))))
        if roll < 0.95:  # a read
            return self.lines(self.rnd.randint(20, 100), numbered=True)
        return self.lines(self.rnd.randint(200, 600), numbered=False)  # a long command output

    def turns(self, count: int) -> list[list[tuple[str, Any]]]:
        from zpi_host.providers.messages import (
            AssistantMessage,
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
            if self.turn % 6 == 1:
                ops.append(("message", UserMessage.text(self.words(self.rnd.randint(10, 120)))))
            calls = []
            for _ in range(1 if self.rnd.random() < 0.75 else self.rnd.randint(2, 3)):
                self.call += 1
                calls.append(ToolCallContent(
                    f"toolu_{self.call:08d}",
                    self.rnd.choice(("Read", "Bash", "Edit", "Glob", "Grep")),
                    {"file_path": f"src/pkg/mod_{self.call % 97}.py"}))
            content: list[Any] = []
            if self.rnd.random() < 0.5:
                content.append(ThinkingContent(self.words(self.rnd.randint(60, 250)),
                                               "Eu" + "x" * self.rnd.randint(300, 900)))
            if self.rnd.random() < 0.4:
                content.append(TextContent(self.words(self.rnd.randint(3, 30))))
            ops.append(("message", AssistantMessage(
                (*content, *calls), "tool_use", Usage(30000 + self.turn, 200, 29000, 400),
                "anthropic", "claude-x")))
            for call in calls:
                ops.append(("tool_use", call))
                ops.append(("custom", {"hook": "PreToolUse", "tool_use_id": call.id}))
            ops += [("message", ToolResultMessage(
                call.id, call.name, (TextContent(self.output()),), False,
                {"duration_ms": round(self.rnd.random() * 50, 3)})) for call in calls]
            turns.append(ops)
            total += len(ops)
        return turns


WRITERS = {"zpi": Writer, "claude": ClaudeShapedWriter}


def play(manager: Any, turns: list[list[tuple[str, Any]]], sync: bool = True) -> None:
    """Append the turns as the session does: one record per step, ``sync()`` per turn."""
    for ops in turns:
        for kind, item in ops:
            if kind == "message":
                manager.append_message(item)
            elif kind == "custom":
                manager.append_custom("bench.progress", item)
            else:
                manager.append_tool_use(item.id, item.name, item.arguments)
        if sync:
            manager.sync()



BASELINE_SOURCE = """
import json, sys
with open(sys.argv[1], encoding="utf-8") as lines:
    records = [json.loads(line) for line in lines if line.strip()]
print(len(records))
"""


def zpi_host_exe() -> str:
    return shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))


def read_lines(path: Path) -> int:
    """The in-process baseline: every line as text through ``json.loads``, default GC."""
    with path.open(encoding="utf-8") as lines:
        return len([json.loads(line) for line in lines if line.strip()])


class Resumes:
    """Runs the resume of one session file again and again, cutting off what a run appends."""

    def __init__(self, path: Path, session_id: str, agent: Path, cwd: Path, script: Path):
        self.path, self.session_id, self.agent, self.cwd = path, session_id, agent, cwd
        self.script = script
        self.size = path.stat().st_size
        self.peaks: list[int] = []  # peak RSS of each whole-process run, bytes
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.env["ZPI_AGENT_DIR"] = str(agent)

    def restore(self) -> None:
        os.truncate(self.path, self.size)

    def process(self) -> None:
        command = [zpi_host_exe(), "run", "--resume", self.session_id, "--model",
                   f"scripted:{self.script}", "--cwd", str(self.cwd), "--output-format",
                   "json", FOLLOW_UP]
        with tempfile.TemporaryFile("w+", encoding="utf-8") as out, \
                tempfile.TemporaryFile("w+", encoding="utf-8") as err:
            finished = MeasuredProcess(command, env=self.env, stdout=out, stderr=err).wait()
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
        code = finished.returncode
        self.peaks.append(finished.peak_rss)
        self.restore()
        if code != 0 or '"is_error": false' not in stdout:
            raise SystemExit(f"zpi-host run --resume failed ({code}): "
                             f"{stdout[-500:]} {stderr[-2000:]}")

    def baseline_process(self) -> None:
        subprocess.run([sys.executable, "-c", BASELINE_SOURCE, str(self.path)], env=self.env,
                       check=True, stdout=subprocess.DEVNULL)

    async def api(self) -> None:
        from zpi_host.session.assembly import create_session
        from zpi_host.testing import ScriptedModel

        session = await create_session(resume=self.session_id, agent_dir=self.agent,
                                       provider=ScriptedModel(["ok"]), model="scripted:bench",
                                       cwd=self.cwd)
        try:
            result = await session.run(FOLLOW_UP)
        finally:
            await session.dispose()
        self.restore()
        if result.is_error:
            raise SystemExit(f"resume through the API failed: {result.error}")

    async def baseline_api(self) -> None:
        read_lines(self.path)


def resume_rows(shape: str, records_wanted: int, rounds: int, tmp: Path) -> list[Row]:
    """The session of ``shape`` written, then resumed ``rounds`` times each way."""
    from zpi_host.transcript import SessionManager

    agent, cwd = tmp / f"agent-{shape}", tmp / f"project-{shape}"
    cwd.mkdir()
    script = tmp / "follow-up.jsonl"
    script.write_text(json.dumps({"text": "ok"}) + "\n", encoding="utf-8")
    started = time.perf_counter()
    with SessionManager.create(cwd, agent_dir=agent) as manager:
        play(manager, WRITERS[shape]().turns(records_wanted - 1), sync=False)  # no fsync
        path, session_id = manager.path, manager.session_id
        records = len(manager.records)
    assert path is not None
    written = time.perf_counter() - started
    size = path.stat().st_size
    print(f"{shape} session: {records} records, {size / 1e6:.1f} MB, "
          f"{size / records / 1024:.2f} KB a record (written in {written:.1f} s)")
    resumes = Resumes(path, session_id, agent, cwd, script)
    whole = interleave({"zpi": timed(resumes.process),
                        "baseline": timed(resumes.baseline_process)}, rounds)
    peaks = resumes.peaks[-rounds:]
    api = asyncio.run(ainterleave({"zpi": atimed(resumes.api),
                                   "baseline": atimed(resumes.baseline_api)}, rounds))
    if path.stat().st_size != size:
        raise SystemExit("the session file changed size: the benchmark is broken")
    label = "" if shape == "zpi" else " shaped like Claude Code's"
    return [
        compare(f"transcript_load: run --resume, {records} records{label}, whole process",
                whole["zpi"], whole["baseline"], target=RATIO_TARGET,
                note="baseline = python reading the lines, json.loads each, default GC"
                if shape == "zpi" else ""),
        compare(f"transcript_load: run --resume{label}, peak RSS vs the file's size",
                peaks, [size] * len(peaks), unit="MB", scale=1e-6, target=RSS_TARGET,
                note="baseline = the session file's size" if shape == "zpi" else ""),
        compare(f"transcript_load: create_session(resume) + 1 turn, {records} records{label}",
                api["zpi"], api["baseline"], op="",
                note="in-process; baseline = json.loads of each line, default GC"
                if shape == "zpi" else ""),
    ]


def main() -> int:
    args = arguments("transcript_load", __doc__, rounds=5,
                     quick={"records": 300, "appends": 30, "rounds": 1},
                     options=[("--records", {"type": int, "default": 100_000}),
                              ("--appends", {"type": int, "default": 10_000}),
                              ("--shape", {"choices": ("zpi", "claude", "both"),
                                           "default": "both"})])
    from zpi_host.transcript import SessionManager

    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="zpi-bench-") as tmp:
        for shape in ("zpi", "claude") if args.shape == "both" else (args.shape,):
            rows += resume_rows(shape, args.records, args.rounds, Path(tmp))
        turns = Writer(seed=11).turns(args.appends)
        cwd = Path(tmp, "project-zpi" if args.shape != "claude" else "project-claude")
        with SessionManager.create(cwd, agent_dir=Path(tmp, "agent-append")) as target:
            started = time.perf_counter()
            play(target, turns)
            t_append = time.perf_counter() - started
            appended = len(target.records) - 1
    print(f"for information: append {appended} records, fsync per turn: {t_append:.2f} s = "
          f"{appended / t_append:,.0f} records/s")
    emit(rows, "transcript_load")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
