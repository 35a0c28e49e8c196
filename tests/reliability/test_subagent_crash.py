"""A host killed while a sub-agent works: the parent resumes, the child's transcript reads
(the call it was running closed as interrupted, like the parent's), and the child's spend
(recorded by the parent only when the child ends) is restored from the child's own
transcript.

Store-backed runs with sub-agents and background commands, SIGKILLed at random points and
resumed from the store: every acknowledged fact (a ``tool_end`` or ``message_end`` line) is
in the local file and, after the resume, in the store; every record of the local files
(session and sub-agents) reached the store; no call is left open in either. Kills land
after a random number of output lines plus a random delay, from one seed
(``ZPI_CRASH_SEED``); ``ZPI_RELIABILITY=long`` runs many more."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.host_process import open_calls, read_branch, run, session_file, start_run, wait_until
from helpers.reliability import LONG, facts_missing, kill_at, scaled

from zpi_host.sdk import AgentOptions, get_subagent_messages, list_subagents, query
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def _child_started_its_command(agent_dir) -> bool:
    for path in (agent_dir / "sessions").rglob("agent-*.jsonl"):
        return '"tool_use"' in path.read_text()
    return False


async def test_a_kill_during_a_sub_agent_loses_neither_history_nor_spend(tmp_path, zpi_env):
    agent_dir, work = tmp_path / "agent", tmp_path / "work"
    work.mkdir()
    script = tmp_path / "script.jsonl"
    turns = [{"tool_calls": [{"name": "task", "arguments": {
                 "agent_type": "general-purpose", "description": "d", "prompt": "wait"}}],
              "usage": {"input_tokens": 1, "output_tokens": 1}},
             {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 3"}}],
              "usage": {"input_tokens": 7, "output_tokens": 3}},
             {"text": "never reached"}]
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    host = start_run(["--model", f"scripted:{script}", "--permission-mode", "bypass", "go"],
                     cwd=work, agent_dir=agent_dir)
    try:
        assert wait_until(lambda: _child_started_its_command(agent_dir)), \
            host.stderr.read().decode() if host.poll() is not None else "no child started"
    finally:
        host.send_signal(signal.SIGKILL)
        host.wait()
    parent = session_file(agent_dir)
    sid = parent.stem
    (agent_id,) = list_subagents(sid, str(work), agent_dir=agent_dir)
    child = get_subagent_messages(sid, agent_id, str(work), agent_dir=agent_dir)
    assert [m.type for m in child] == ["user", "assistant"]  # the call it was running

    zpi_env.set("ZPI_AGENT_DIR", str(agent_dir))
    options = AgentOptions(resume=sid, cwd=work, agent_dir=agent_dir, model="scripted:memory",
                           provider=ScriptedModel(["resumed"]))
    result = [m async for m in query(prompt="again", options=options)][-1]
    assert result.result == "resumed"
    assert result.model_usage[f"scripted/{script}"]["inputTokens"] == 1 + 7
    assert open_calls(parent) == []  # the task call cut off by the kill is closed
    (child_file,) = parent.parent.rglob("agent-*.jsonl")
    assert open_calls(child_file) == []  # and so is the child's command, as interrupted
    assert get_subagent_messages(sid, agent_id, str(work), agent_dir=agent_dir)[-1].type == \
        "user"


STORE_KILLS = int(os.environ.get("ZPI_STORE_CRASH_KILLS", 0)) or scaled(5, 150)
STORE_SEED = int(os.environ.get("ZPI_CRASH_SEED",
                                "23" if not LONG else str(time.time_ns() % 10**6)))


def _store_script(path: Path) -> None:
    """Two delegations (each child runs a command and writes a file), background commands
    and parent calls between them, then a final answer."""
    def bash(command: str, background: bool = False) -> dict[str, Any]:
        return {"name": "bash", "arguments": {"command": command,
                                              "run_in_background": background}}

    def task(n: int) -> dict[str, Any]:
        return {"name": "task", "arguments": {"agent_type": "general-purpose",
                                              "description": f"d{n}", "prompt": f"sub {n}"}}

    turns: list[dict[str, Any]] = []
    for n in range(2):
        turns += [
            {"text": f"start {n}", "tool_calls": [bash(f"sleep 0.2; echo bg {n}", True), {
                "name": "write", "arguments": {"path": f"a{n}.txt", "content": f"a{n}\n"}}]},
            {"text": f"delegate {n}", "tool_calls": [task(n)]},
            {"text": f"child {n} runs", "tool_calls": [bash(f"sleep 0.05; echo child {n}")]},
            {"text": f"child {n} writes", "tool_calls": [{"name": "write", "arguments": {
                "path": f"c{n}.txt", "content": f"c{n}\n"}}]},
            {"text": f"child {n} done"},
            {"text": f"parent {n}", "tool_calls": [bash(f"sleep 0.02; echo parent {n}")]},
        ]
    turns.append({"text": "all done"})
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")


def _stored(database: Path, session_id: str) -> dict[str, list[Any]]:
    """Every transcript of the session in the SQLite store (subpath -> its active branch),
    read as a resume reads them."""
    import sqlite3

    from zpi_host.stores.session_store import entries_jsonl
    from zpi_host.transcript import history
    from zpi_host.transcript.reader import parse_transcript

    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT subpath, entry FROM entries WHERE session_id = ? ORDER BY "
                          "seq", (session_id,)).fetchall()
    grouped: dict[str, list[Any]] = {}
    for subpath, entry in rows:
        grouped.setdefault(subpath, []).append(json.loads(entry))
    out = {}
    for sub, entries in grouped.items():
        transcript = parse_transcript(entries_jsonl(entries))
        out[sub] = history.active_branch(transcript.records, transcript.linear)
    return out


class StoreFigures:
    def __init__(self) -> None:
        self.kills = self.completed = self.acknowledged = self.records = 0
        self.lost: set[str] = set()
        self.open: list[str] = []
        self.bad: list[str] = []

    def line(self) -> str:
        return (f"store crash suite (seed {STORE_SEED}): {self.kills} kills "
                f"({self.completed} runs ended first), {self.acknowledged} acknowledged "
                f"records checked, {self.records} local records checked in the store, "
                f"{len(self.lost)} lost, {len(self.open)} open calls left, "
                f"{len(self.bad)} unresumable")


def test_store_backed_runs_killed_with_sub_agents_lose_nothing(tmp_path):
    from zpi_host.transcript import history

    script, follow_up = tmp_path / "turns.jsonl", tmp_path / "follow-up.jsonl"
    _store_script(script)
    follow_up.write_text(json.dumps({"text": "resumed and done"}) + "\n", encoding="utf-8")
    rng = random.Random(STORE_SEED)
    figures = StoreFigures()
    # one full run: how many lines a run prints, and that the script itself is sound
    full = tmp_path / "full"
    (full / "ws").mkdir(parents=True)
    lines, _ = kill_at(["--output-format", "stream-json", "--model", f"scripted:{script}",
                        "--session-store", f"sqlite:{full / 'store.sqlite'}",
                        "--permission-mode", "bypass", "go"],
                       cwd=full / "ws", agent_dir=full / "agent", after_lines=10**9, delay=0)
    assert lines[-1]["type"] == "result" and not lines[-1]["is_error"], lines[-1]
    for kill in range(STORE_KILLS):
        where = tmp_path / f"kill{kill}"
        workspace, agent, database = where / "ws", where / "agent", where / "store.sqlite"
        workspace.mkdir(parents=True)
        store = ["--session-store", f"sqlite:{database}", "--permission-mode", "bypass"]
        seen, killed = kill_at(
            ["--output-format", "stream-json", "--model", f"scripted:{script}", *store, "go"],
            cwd=workspace, agent_dir=agent, after_lines=rng.randint(1, len(lines) - 1),
            delay=rng.choice((0.0, rng.uniform(0, 0.002), rng.uniform(0, 0.05))))
        figures.kills += killed
        figures.completed += not killed
        transcript = session_file(agent)
        session_id = transcript.stem
        resumed = run(["--resume", session_id, "--output-format", "json", "--model",
                       f"scripted:{follow_up}", *store, "go on"], cwd=workspace,
                      agent_dir=agent)
        result = json.loads(resumed.stdout) if resumed.stdout.strip() else {}
        if resumed.returncode != 0 or result.get("result") != "resumed and done" or \
                "Traceback" in resumed.stderr:
            figures.bad.append(f"kill {kill}: resume exited {resumed.returncode}: "
                               f"{resumed.stderr[-500:]}")
            continue
        stored = _stored(database, session_id)
        local = {"": read_branch(transcript)}
        for child in sorted(transcript.parent.rglob("agent-*.jsonl")):
            local[f"subagents/{child.stem}"] = read_branch(child)
        checked, missing = facts_missing(seen, local[""])
        _, missing_in_store = facts_missing(seen, stored.get("", []))
        figures.acknowledged += checked
        figures.lost.update(f"kill {kill}: {m}" for m in missing)
        figures.lost.update(f"kill {kill}: store lacks {m}" for m in missing_in_store)
        for subpath, records in local.items():
            in_store = {r.uuid for r in stored.get(subpath, [])}
            figures.records += len(records)
            figures.lost.update(f"kill {kill}: {subpath or 'main'} record {r.uuid} ({r.TYPE}) "
                                "not in the store" for r in records if r.uuid not in in_store)
            figures.open += [f"kill {kill}: {subpath or 'main'}: {c}"
                             for c in history.unfinished_calls(records)]
        for subpath, records in stored.items():
            figures.open += [f"kill {kill}: store {subpath or 'main'}: {c}"
                             for c in history.unfinished_calls(records)]
    print(figures.line())
    assert figures.kills > 0, "no kill landed before its run ended"
    assert not figures.bad, figures.bad
    assert not figures.lost, sorted(figures.lost)
    assert not figures.open, figures.open
