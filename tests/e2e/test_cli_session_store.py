"""Whole-process runs with ``zpi-host run --session-store``: two "hosts" (two agent dirs)
share sessions through one SQLite store."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

EXE = shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))


def _run(tmp_path: Path, agent: str, *args: str, where: str = "work"
         ) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith(("ZPI_", "OPENAI_", "ANTHROPIC_"))}
    environ["ZPI_AGENT_DIR"] = str(tmp_path / agent)
    work = tmp_path / where
    work.mkdir(exist_ok=True)
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=work,
                          env=environ, timeout=60)


def _script(path: Path, *texts: str) -> str:
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    return f"scripted:{path}"


def test_a_session_started_on_one_host_continues_on_another(tmp_path):
    store = f"sqlite:{tmp_path / 'shared.sqlite'}"
    out = _run(tmp_path, "host-a", "run", "--model", _script(tmp_path / "a.jsonl", "one"),
               "--session-store", store, "--output-format", "json", "first prompt")
    assert out.returncode == 0, out.stderr
    session_id = json.loads(out.stdout)["session_id"]
    # host B has no local copy: --continue finds the session in the store
    out = _run(tmp_path, "host-b", "run", "--model", _script(tmp_path / "b.jsonl", "two"),
               "--session-store", store, "--continue", "--output-format", "json", "second")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["session_id"] == session_id
    with sqlite3.connect(tmp_path / "shared.sqlite") as db:
        types = [json.loads(r[0])["type"] for r in db.execute(
            "SELECT entry FROM entries WHERE session_id = ? ORDER BY seq", (session_id,))]
    assert types.count("user") == 2 and types[0] == "header"
    # host B keeps the session it continued in its own agent dir: a durable local record
    (local,) = (tmp_path / "host-b" / "sessions").rglob(f"{session_id}.jsonl")
    assert [json.loads(line)["type"] for line in local.read_text().splitlines()] == types


def test_bad_store_specs_are_usage_errors(tmp_path):
    out = _run(tmp_path, "a", "run", "--model", "scripted:x", "--session-store", "redis://x",
               "p")
    assert out.returncode == 2 and "unknown session store 'redis://x'" in out.stderr
    out = _run(tmp_path, "a", "run", "--model", "scripted:x", "--no-session",
               "--session-store", f"sqlite:{tmp_path / 's.db'}", "p")
    assert out.returncode == 2 and "cannot be used with --no-session" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("spec", [
    "postgresql://bob:Sup3rSecret@[::1/db",  # libpq quotes the whole URL
    "postgresql://bob:Sup3r%zzSecret@127.0.0.1:1/db",  # libpq quotes the password alone
    "postgres+psycopg://bob:Sup3rSecret@127.0.0.1:1/db",  # not a scheme we know
])
def test_a_store_password_never_appears_in_an_error(tmp_path, spec):
    if spec.startswith("postgresql:"):
        pytest.importorskip("psycopg")
    model = _script(tmp_path / "m.jsonl", "never")
    for args in (["run", "--model", model, "--session-store", spec, "p"],
                 ["sessions", "list", "--store", spec]):
        out = _run(tmp_path, "a", *args)
        # a new run warns (the mirror cannot reach its store) and goes on; others fail
        assert out.stderr.startswith("zpi-host: " + ("warning" if out.returncode == 0 else
                                                       "error")), out.stderr
        assert "bob:***@" in out.stderr or '"***"' in out.stderr, out.stderr
        assert "Sup3r" not in out.stderr + out.stdout and "Traceback" not in out.stderr


@pytest.mark.parametrize(("damage", "problem"), [
    ('{"type":"user","x":' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply to read"),
    ('{"type":"user",', "not valid JSON"),
])
def test_a_damaged_row_in_a_sqlite_store_is_a_clear_error(tmp_path, damage, problem):
    """Another program (or a shared store's other user) wrote a row this store cannot read."""
    database = tmp_path / "shared.sqlite"
    store = f"sqlite:{database}"
    out = _run(tmp_path, "host-a", "run", "--model", _script(tmp_path / "a.jsonl", "answer"),
               "--session-store", store, "--output-format", "json", "the question")
    session_id = json.loads(out.stdout)["session_id"]
    with sqlite3.connect(database) as db:
        db.execute("UPDATE entries SET entry = ? WHERE seq = (SELECT min(seq) + 2 FROM "
                   "entries WHERE session_id = ?)", (damage, session_id))
        db.execute("UPDATE summaries SET data = ?", (damage,))
    for args in (["run", "--model", _script(tmp_path / "b.jsonl", "never"), "--session-store",
                  store, "--resume", session_id, "again"],
                 ["sessions", "show", session_id, "--store", store],
                 ["sessions", "list", "--store", store]):
        out = _run(tmp_path, "host-b", *args)
        assert out.returncode == 1, out.stderr
        assert out.stderr.startswith(f"zpi-host: error: session store {database}: ")
        assert problem in out.stderr and "Traceback" not in out.stderr
        what = "the summary" if args[1] == "list" else "entry 3"
        assert f"{what} of session {session_id} is {problem}" in out.stderr
    out = _run(tmp_path, "host-b", "sessions", "delete", session_id, "--store", store)
    assert out.returncode == 0, out.stderr  # what the message advises works
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT count(*) FROM entries").fetchone() == (0,)


def test_the_sessions_command_over_a_store(tmp_path):
    store = f"sqlite:{tmp_path / 'shared.sqlite'}"
    out = _run(tmp_path, "host-a", "run", "--model", _script(tmp_path / "a.jsonl", "answer"),
               "--session-store", store, "--output-format", "json", "the question")
    session_id = json.loads(out.stdout)["session_id"]
    # host B: nothing local, everything from the store
    listing = json.loads(_run(tmp_path, "host-b", "sessions", "list", "--json",
                              "--store", store).stdout)
    assert [(s["session_id"], s["first_prompt"]) for s in listing] == [
        (session_id, "the question")]
    assert _run(tmp_path, "host-b", "sessions", "rename", session_id, "Named",
                "--store", store).returncode == 0
    shown = json.loads(_run(tmp_path, "host-b", "sessions", "show", session_id, "--json",
                            "--store", store).stdout)
    assert shown["title"] == "Named"
    assert [m["type"] for m in shown["messages"]] == ["user", "assistant"]
    out = _run(tmp_path, "host-b", "sessions", "fork", session_id, "--store", store)
    assert out.returncode == 0, out.stderr
    fork_id = out.stdout.strip()
    assert _run(tmp_path, "host-b", "sessions", "delete", session_id, "--store",
                store).returncode == 0
    listing = json.loads(_run(tmp_path, "host-b", "sessions", "list", "--json",
                              "--store", store).stdout)
    assert [s["session_id"] for s in listing] == [fork_id]
    assert not (tmp_path / "host-b" / "sessions").exists()
    out = _run(tmp_path, "host-b", "sessions", "show", session_id, "--store", store)
    assert out.returncode == 1 and "no session" in out.stderr
    out = _run(tmp_path, "host-b", "sessions", "list", "--all", "--store", store)
    assert out.returncode == 2 and "--all cannot be used with --store" in out.stderr


def test_project_key_shares_a_scope_between_checkouts_at_different_paths(tmp_path):
    store = f"sqlite:{tmp_path / 'shared.sqlite'}"
    out = _run(tmp_path, "host-a", "run", "--model", _script(tmp_path / "a.jsonl", "one"),
               "--session-store", store, "--project-key", "team-project",
               "--output-format", "json", "first", where="checkout-a")
    assert out.returncode == 0, out.stderr
    session_id = json.loads(out.stdout)["session_id"]
    # another checkout path: its own key finds nothing, the shared key finds the session
    listed = _run(tmp_path, "host-b", "sessions", "list", "--json", "--store", store,
                  where="checkout-b")
    assert json.loads(listed.stdout) == []
    listed = _run(tmp_path, "host-b", "sessions", "list", "--json", "--store", store,
                  "--project-key", "team-project", where="checkout-b")
    assert [s["session_id"] for s in json.loads(listed.stdout)] == [session_id]
    out = _run(tmp_path, "host-b", "run", "--model", _script(tmp_path / "b.jsonl", "two"),
               "--session-store", store, "--project-key", "team-project", "--continue",
               "--output-format", "json", "second", where="checkout-b")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["session_id"] == session_id
    shown = json.loads(_run(tmp_path, "host-b", "sessions", "show", session_id, "--json",
                            "--store", store, "--project-key", "team-project",
                            where="checkout-b").stdout)
    assert [m["type"] for m in shown["messages"]] == ["user", "assistant"] * 2
    for command in (["run", "--model", "scripted:x", "--project-key", "k", "p"],
                    ["sessions", "list", "--project-key", "k"]):
        out = _run(tmp_path, "host-b", *command)
        assert out.returncode == 2 and "use it with --" in out.stderr, out.stderr


def test_a_sub_agent_history_is_mirrored_under_its_subpath(tmp_path):
    db = tmp_path / "shared.sqlite"
    script = tmp_path / "task.jsonl"
    turns = [{"tool_calls": [{"name": "task", "arguments": {
                 "agent_type": "general-purpose", "description": "d", "prompt": "sub task"}}]},
             {"text": "sub answer"}, {"text": "main answer"}]
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    out = _run(tmp_path, "host-a", "run", "--model", f"scripted:{script}", "--session-store",
               f"sqlite:{db}", "--permission-mode", "bypass", "--output-format", "json", "go")
    assert out.returncode == 0, out.stderr
    session_id = json.loads(out.stdout)["session_id"]
    (local,) = (tmp_path / "host-a").rglob("agent-*.jsonl")
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT subpath, entry FROM entries WHERE session_id = ? AND "
                            "subpath != '' ORDER BY seq", (session_id,)).fetchall()
    assert {subpath for subpath, _ in rows} == {f"subagents/{local.stem}"}
    assert [json.loads(entry)["uuid"] for _, entry in rows] == [
        json.loads(line)["uuid"] for line in local.read_text().splitlines()]


def test_a_stored_cwd_is_reported_never_obeyed(tmp_path):
    """The header's cwd in a store is data: ``--resume`` from the store works (and writes)
    in the user's directory, says where the session was recorded, and keeps the session's
    records in the agent dir under that directory's project."""
    database = tmp_path / "shared.sqlite"
    store = f"sqlite:{database}"
    out = _run(tmp_path, "host-a", "run", "--model", _script(tmp_path / "a.jsonl", "one"),
               "--session-store", store, "--output-format", "json", "first")
    session_id = json.loads(out.stdout)["session_id"]
    victim = tmp_path / "victim"
    victim.mkdir()
    with sqlite3.connect(database) as db:
        (seq, raw), = db.execute("SELECT seq, entry FROM entries WHERE session_id = ? ORDER "
                                 "BY seq LIMIT 1", (session_id,))
        header = json.loads(raw)
        db.execute("UPDATE entries SET entry = ? WHERE seq = ?",
                   (json.dumps({**header, "cwd": str(victim)}), seq))
    script = tmp_path / "b.jsonl"
    script.write_text(json.dumps({"tool_calls": [{"name": "write", "arguments": {
        "path": "out.txt", "content": "written\n"}}]}) + "\n" + json.dumps({"text": "done"})
        + "\n")
    out = _run(tmp_path, "host-b", "run", "--model", f"scripted:{script}", "--session-store",
               store, "--resume", session_id, "--permission-mode", "bypass",
               "--output-format", "json", "write it")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "work" / "out.txt").read_text() == "written\n"
    assert list(victim.iterdir()) == []
    assert f"was recorded in {victim}; this run works in {tmp_path / 'work'}" in out.stderr
    (local,) = (tmp_path / "host-b" / "sessions").rglob(f"{session_id}.jsonl")
    from zpi_host.transcript.paths import project_key

    assert local.parent.name == project_key(tmp_path / "work")
