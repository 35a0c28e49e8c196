"""builtins:memory batches: a side request at session end proposes updates, applied under
the lock; a user's edit made during the session is kept and the refusal reported."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.builtins import builtins_settings, scripted_session

from zpi_builtins.memory_batch import parse_answer, validate
from zpi_builtins.memory_store import render
from zpi_host.session.assembly import create_session
from zpi_host.testing import FunctionModel

pytestmark = pytest.mark.anyio

BATCH = builtins_settings(memory={"batch": True})


def side(updates) -> dict:
    return {"purpose": "memory", "text": json.dumps(updates)}


def write_memory(folder: Path, name: str, content: str, scope: str = "project") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_bytes(render(scope, name, f"about {name}", content))
    return path


def memory_records(session) -> list[dict]:
    lines = Path(session.store.path).read_text().splitlines()
    return [r["data"] for r in map(json.loads, lines)
            if r.get("type") == "custom" and r.get("namespace") == "zpi.memory"]


async def test_a_batch_applies_updates_and_keeps_a_users_edit(zpi_env, tmp_path):
    project = tmp_path / ".zpi" / "memory"
    edited = write_memory(project, "build", "make")
    old = write_memory(project, "old", "obsolete")
    session = await scripted_session(tmp_path, ["noted", side([
        {"action": "replace", "scope": "project", "name": "build", "content": "make -j2"},
        {"action": "add", "scope": "user", "name": "editor", "description": "the editor",
         "content": "The user uses vim."},
        {"action": "remove", "scope": "project", "name": "old"},
        {"action": "add", "scope": "project", "name": "../escape", "description": "d",
         "content": "c"},
    ])], settings=BATCH)
    await session.run("I use vim; the build is make -j2")
    edited.write_bytes(render("project", "build", "about build", "make -j8  # mine"))
    await session.dispose()
    assert "make -j8  # mine" in edited.read_text()  # the user's edit is kept
    assert not old.exists()
    assert "The user uses vim." in (zpi_env.agent_dir / "memory" / "editor.md").read_text()
    assert not (tmp_path / ".zpi" / "escape.md").exists()
    (side_request,) = [r for r in session.test_model.requests if r.purpose == "memory"]
    prompt = side_request.messages[0].content[0].text
    assert "## [project] build: about build\nmake\n" in prompt  # as the session knew it
    assert "User: I use vim; the build is make -j2" in prompt and "Assistant: noted" in prompt
    (record,) = memory_records(session)
    assert record["applied"] == [{"action": "add", "scope": "user", "name": "editor"},
                                 {"action": "remove", "scope": "project", "name": "old"}]
    refused = {r["name"]: r["reason"] for r in record["refused"]}
    assert "changed on disk since it was last read" in refused["build"]
    assert "is not allowed" in refused["../escape"]
    (warning,) = [w for w in session.warnings if w.startswith("memory batch")]
    assert warning.startswith("memory batch: 2 update(s) refused (the files on disk are kept)")


async def test_no_batch_unless_switched_on_and_planned_by_the_script(zpi_env, tmp_path):
    off = await scripted_session(tmp_path, ["ok", side([])])
    await off.run("hi")
    await off.dispose()
    assert all(r.purpose is None for r in off.test_model.requests)
    unplanned = await scripted_session(tmp_path, ["ok"], settings=BATCH)
    await unplanned.run("hi")
    await unplanned.dispose()
    assert all(r.purpose is None for r in unplanned.test_model.requests)
    assert not [w for w in unplanned.warnings if "memory" in w]


@pytest.mark.parametrize(("answer", "problem"), [
    ("I would remember the build command.", "is not JSON"),
    ('{"action": "add"}', "must be a JSON list of updates, got dict"),
])
async def test_a_bad_answer_changes_nothing_and_is_reported(zpi_env, tmp_path, answer,
                                                            problem):
    def reply(request):
        return answer if request.purpose == "memory" else "ok"

    model = FunctionModel(reply, side=("memory",))
    session = await create_session(model="fn:m", provider=model, cwd=tmp_path, settings=BATCH)
    await session.run("hi")
    await session.dispose()
    assert not (tmp_path / ".zpi" / "memory").exists()
    (warning,) = [w for w in session.warnings if w.startswith("memory batch")]
    assert warning.startswith("memory batch: nothing was changed:") and problem in warning
    (record,) = memory_records(session)
    assert problem in record["error"]


def test_answer_parsing_and_validation():
    fenced = '```json\n[{"action": "remove", "scope": "user", "name": "a"}]\n```'
    updates, invalid = validate(parse_answer(fenced))
    assert [u.key for u in updates] == [("user", "a")] and invalid == []
    many = [{"action": "remove", "scope": "user", "name": f"m{i}"} for i in range(25)]
    updates, invalid = validate([*many, "text"])
    assert len(updates) == 20 and len(invalid) == 6
    assert invalid[0][1] == "more than 20 updates in one batch"


APPLY = """
import json, sys, time
from pathlib import Path
from zpi_builtins.memory import memory_dirs, load_all
from zpi_builtins.memory_store import Update, apply_updates

me, root = sys.argv[1], Path(sys.argv[2])
dirs = memory_dirs(root / "agent", root)
memories, _ = load_all(dirs)
known = {m.key: m.fingerprint for m in memories}
(root / f"ready-{me}").touch()
while not (root / "go").exists():
    time.sleep(0.005)
outcome = apply_updates(dirs, [
    Update("replace", "project", "shared", None, f"written by {me}"),
    Update("add", "user", f"own-{me}", "one per process", f"from {me}"),
    Update("add", "project", "first", "who came first", f"{me} came first"),
], known)
print(json.dumps({"applied": [u.name for u, _ in outcome.applied],
                  "refused": [[u.name, why] for u, why in outcome.refused]}))
"""


def test_two_processes_applying_batches_at_once_serialise(tmp_path):
    """Both read the same memories, then apply at the same moment: the lock makes one go
    first; the other's replace and add of the same memories are refused, not written over."""
    write_memory(tmp_path / ".zpi" / "memory", "shared", "original")
    processes = [subprocess.Popen([sys.executable, "-c", APPLY, name, str(tmp_path)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for name in ("p1", "p2")]
    outcomes = {}
    try:
        deadline = time.monotonic() + 30
        while not all((tmp_path / f"ready-{n}").exists() for n in ("p1", "p2")):
            assert time.monotonic() < deadline, "the processes did not start"
            time.sleep(0.01)
        (tmp_path / "go").touch()
        for name, process in zip(("p1", "p2"), processes, strict=True):
            out, err = process.communicate(timeout=60)
            assert process.returncode == 0, err
            outcomes[name] = json.loads(out)
    finally:
        for process in processes:  # never left polling for "go" when the test fails
            if process.poll() is None:
                process.kill()
                process.wait()
    winners = [n for n, o in outcomes.items() if "shared" in o["applied"]]
    assert len(winners) == 1
    (winner,) = winners
    (loser,) = {"p1", "p2"} - {winner}
    assert outcomes[winner]["applied"] == ["shared", f"own-{winner}", "first"]
    assert outcomes[loser]["applied"] == [f"own-{loser}"]
    reasons = dict(outcomes[loser]["refused"])
    assert "changed on disk since it was last read" in reasons["shared"]
    assert "already exists" in reasons["first"]
    project = tmp_path / ".zpi" / "memory"
    assert f"written by {winner}" in (project / "shared.md").read_text()
    assert f"{winner} came first" in (project / "first.md").read_text()
    assert sorted(p.name for p in (tmp_path / "agent" / "memory").iterdir()) == [
        ".lock", "own-p1.md", "own-p2.md"]
    assert not [p for p in project.iterdir() if p.name.endswith(".tmp")]
