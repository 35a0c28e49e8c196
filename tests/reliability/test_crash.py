"""The crash suite: SIGKILL real ``zpi-host run`` processes at random points of a run with many
write, edit and bash turns, then check what a crash must never cost.

After each kill:
- the transcript reads as valid and a real ``--resume`` run continues it;
- every ``tool_end`` and ``message_end`` a stream-json consumer saw (all lines written before
  the kill) is in the transcript: an acknowledged fact is never lost;
- every target file holds one complete version (never a partial write);
- the resumed run closed every call the kill cut off, and leaves none open;
- no temp file of an atomic write is left in the workspace after the resume.

Kills land after a random number of output lines plus a random delay, from one seed
(``ZPI_CRASH_SEED``, printed with the figures). ``ZPI_RELIABILITY=long`` runs many more.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.host_process import WAIT, open_calls, run, session_file, start_run
from helpers.reliability import LONG, acknowledged_missing, kill_at, scaled

TURNS = 30
FILES = 5
FILLER_LINES = 4000  # ~100 KB a file: a torn write could not pass for a complete version
KILLS = int(os.environ.get("ZPI_CRASH_KILLS", 0)) or scaled(8, 200)
SEED = int(os.environ.get("ZPI_CRASH_SEED", "11" if not LONG else str(time.time_ns() % 10**6)))
#: the CLI's default mode asks before edits and commands (and denies them with no terminal)
RUNS_EVERYTHING = ("--permission-mode", "bypassPermissions")


def content(file: int, version: int) -> str:
    """Version ``version`` of target file ``file``: a header line, then filler of the file."""
    filler = "".join(f"t{file} line {n:05d} of the crash suite's target file\n"
                     for n in range(FILLER_LINES))
    return f"t{file} version {version}\n{filler}"


def build_script(path: Path, turns: int = TURNS) -> dict[str, set[str]]:
    """Write a scripted model with ``turns`` tool turns (writes, edits, bash, and turns with
    several calls) and a final answer. Returns every complete content each file may hold."""
    rng = random.Random(turns)
    versions: dict[int, int] = {}
    valid: dict[str, set[str]] = {f"t{k}.txt": set() for k in range(FILES)}
    lines = []

    def write(k: int, v: int) -> dict[str, Any]:
        versions[k] = v
        valid[f"t{k}.txt"].add(content(k, v))
        return {"name": "write", "arguments": {"path": f"t{k}.txt", "content": content(k, v)}}

    def edit(k: int, v: int) -> dict[str, Any]:
        old, versions[k] = versions[k], v
        valid[f"t{k}.txt"].add(content(k, v))
        return {"name": "edit", "arguments": {"path": f"t{k}.txt", "edits": [
            {"old_text": f"t{k} version {old}\n", "new_text": f"t{k} version {v}\n"}]}}

    def bash(turn: int) -> dict[str, Any]:
        pause = rng.choice(("0.01", "0.05", "0.1"))
        return {"name": "bash", "arguments": {
            "command": f"sleep {pause}; cat t*.txt | wc -l; echo turn {turn}"}}

    for turn in range(1, turns + 1):
        k = rng.randrange(FILES)
        kind = "write" if k not in versions else rng.choice(("write", "edit", "bash", "many"))
        if kind == "write":
            calls = [write(k, turn)]
        elif kind == "edit":
            calls = [edit(k, turn)]
        elif kind == "bash":
            calls = [bash(turn)]
        else:  # several calls in one turn: recorded one by one, in the model's order
            other = rng.choice([j for j in versions if j != k] or [k])
            calls = [write(k, turn), edit(other, turn * 1000), bash(turn)]
        lines.append({"text": f"turn {turn}", "tool_calls": calls})
    lines.append({"text": "all turns done"})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return valid


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, set[str]]]:
    folder = tmp_path_factory.mktemp("crash-script")
    path = folder / "turns.jsonl"
    valid = build_script(path)
    follow_up = folder / "follow-up.jsonl"
    follow_up.write_text(json.dumps({"text": "resumed and done"}) + "\n", encoding="utf-8")
    return path, valid


class Figures:
    """What the kills cost, summed over the run (printed, and asserted to be zero)."""

    def __init__(self) -> None:
        self.kills = self.completed = self.acknowledged = 0
        self.lost: set[str] = set()  # "kill N: record", counted once before and after resume
        self.partial: list[str] = []
        self.open_after_resume: list[str] = []
        self.closed_on_resume = 0
        self.stray: list[str] = []
        self.bad: list[str] = []

    def line(self) -> str:
        return (f"crash suite (seed {SEED}): {self.kills} kills ({self.completed} runs ended "
                f"first), {self.acknowledged} acknowledged records checked, "
                f"{len(self.lost)} lost, {len(self.partial)} partial files, "
                f"{self.closed_on_resume} unfinished calls closed on resume, "
                f"{len(self.open_after_resume)} left open, {len(self.stray)} stray temp files, "
                f"{len(self.bad)} invalid or unresumable transcripts")


def test_sigkill_at_random_points_loses_nothing(script, tmp_path):
    path, valid = script
    follow_up = path.with_name("follow-up.jsonl")
    rng = random.Random(SEED)
    figures = Figures()
    # one full run: how many lines a run prints, and that the script itself is sound
    full = tmp_path / "full"
    (full / "ws").mkdir(parents=True)
    command = [*RUNS_EVERYTHING, "--output-format", "stream-json", "--model", f"scripted:{path}",
               "go"]
    lines, _ = kill_at(command, cwd=full / "ws", agent_dir=full / "agent", after_lines=10**9,
                       delay=0)
    assert lines[-1]["type"] == "result" and not lines[-1]["is_error"], lines[-1]
    assert all((full / "ws" / name).exists() for name in valid), "the tools did not run"
    total = len(lines)

    for kill in range(KILLS):
        where = tmp_path / f"kill{kill}"
        workspace, agent = where / "ws", where / "agent"
        workspace.mkdir(parents=True)
        seen, killed = kill_at(
            command, cwd=workspace, agent_dir=agent, after_lines=rng.randint(1, total - 1),
            delay=rng.choice((0.0, rng.uniform(0, 0.002), rng.uniform(0, 0.05))))
        figures.kills += killed
        figures.completed += not killed
        transcript = session_file(agent)
        try:
            checked, missing = acknowledged_missing(seen, transcript)
        except Exception as exc:  # an unreadable transcript is a finding, not a crash
            figures.bad.append(f"kill {kill}: {type(exc).__name__}: {exc}")
            continue
        figures.acknowledged += checked
        figures.lost.update(f"kill {kill}: {m}" for m in missing)
        for name, contents in valid.items():
            target = workspace / name
            if target.exists() and target.read_text(encoding="utf-8") not in contents:
                figures.partial.append(f"kill {kill}: {name} ({target.stat().st_size} bytes)")
        before = len(open_calls(transcript))
        session_id = transcript.stem
        resumed = run(["--resume", session_id, "--output-format", "json", "--model",
                       f"scripted:{follow_up}", "go on"], cwd=workspace, agent_dir=agent)
        result = json.loads(resumed.stdout) if resumed.stdout.strip() else {}
        if resumed.returncode != 0 or result.get("result") != "resumed and done" or \
                "Traceback" in resumed.stderr:
            figures.bad.append(f"kill {kill}: resume exited {resumed.returncode}: "
                               f"{resumed.stderr[-500:]}")
            continue
        figures.closed_on_resume += before
        left = open_calls(transcript)
        figures.open_after_resume += [f"kill {kill}: {c}" for c in left]
        _, missing = acknowledged_missing(seen, transcript)
        figures.lost.update(f"kill {kill}: {m}" for m in missing)
        figures.stray += [f"kill {kill}: {p.name}" for p in workspace.iterdir()
                          if p.name not in valid]

    print(figures.line())
    assert figures.kills > 0, "no kill landed before its run ended"
    assert not figures.bad, figures.bad
    assert not figures.lost, sorted(figures.lost)
    assert not figures.partial, figures.partial
    assert not figures.open_after_resume, figures.open_after_resume
    assert not figures.stray, figures.stray


def test_each_fact_is_in_the_transcript_before_its_event(tmp_path):
    """A stream-json consumer that looks at the transcript the moment it reads a ``tool_end``
    or ``message_end`` finds the fact already there, even while later calls of the same turn
    still run."""
    script = tmp_path / "turns.jsonl"
    calls = [{"name": "write", "arguments": {"path": "a.txt", "content": "one\n"}},
             {"name": "edit", "arguments": {"path": "a.txt", "edits": [
                 {"old_text": "one", "new_text": "two"}]}},
             {"name": "bash", "arguments": {"command": "sleep 0.3; cat a.txt"}}]
    turns = [{"text": "three calls", "tool_calls": calls}, {"text": "done"}]
    script.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    workspace, agent = tmp_path / "ws", tmp_path / "agent"
    workspace.mkdir()
    process = start_run([*RUNS_EVERYTHING, "--output-format", "stream-json", "--model",
                         f"scripted:{script}", "go"], cwd=workspace, agent_dir=agent)
    watchdog = threading.Timer(WAIT, process.kill)
    watchdog.start()
    seen: list[dict[str, Any]] = []
    try:
        assert process.stdout is not None
        for raw in process.stdout:
            seen.append(json.loads(raw))
            if seen[-1]["type"] in ("tool_end", "message_end"):
                checked, missing = acknowledged_missing(seen[-1:], session_file(agent))
                assert (checked, missing) == (1, []), f"seen before it was recorded: {missing}"
        assert process.wait(WAIT) == 0
    finally:
        watchdog.cancel()
        process.kill()
        process.stdout.close()  # type: ignore[union-attr]
        process.stderr.close()  # type: ignore[union-attr]
    assert [e["type"] for e in seen].count("tool_end") == 3
