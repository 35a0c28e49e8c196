"""Claude hook handlers end to end: ``zpi-host run --plugin-dir DIR`` as a subprocess, with the
scripted model, checking the result, the transcript and the files the tools changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.claude_hooks import CORPUS

EXE = shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ZPI_", "CLAUDE_"))}
    return {**base, "HOME": str(home), "ZPI_AGENT_DIR": str(tmp_path / "agent")}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def plugin(name: str, tmp_path: Path) -> Path:
    """A copy of the corpus folder (a folder with hooks/hooks.json and no manifest)."""
    target = tmp_path / "plugins" / name
    shutil.copytree(CORPUS / name, target)
    return target


def zpi(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=90)


#: the calls the scripts make run unasked (by default a run without a terminal denies them)
ALLOWED = ("--permission-mode", "acceptEdits", "--allow", "bash")


def run(folder: Path, prompt: str, *turns: dict | str, cwd: Path, env: dict[str, str],
        tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return zpi("run", "--plugin-dir", str(folder), "--model", f"scripted:{script}",
               "--output-format", "json", *ALLOWED, prompt, cwd=cwd, env=env)


def transcript(env: dict[str, str], session_id: str) -> list[dict]:
    found = list(Path(env["ZPI_AGENT_DIR"]).glob(f"sessions/*/{session_id}.jsonl"))
    assert len(found) == 1, found
    return [json.loads(line) for line in found[0].read_text().splitlines()]


def data_dir(env: dict[str, str], name: str) -> Path:
    return Path(env["ZPI_AGENT_DIR"]) / "plugin-data" / "claude" / name


def bash(command: str) -> dict:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


def _folders_ready(tmp_path: Path, env: dict[str, str]) -> str | None:
    """Why a plugin folder's hooks cannot run through ``--plugin-dir`` yet (None: they can)."""
    out = zpi("--list-plugins", "--json", "--plugin-dir", str(CORPUS / "hooks-stop-sh"),
              cwd=tmp_path, env=env)
    if out.returncode != 0:
        return f"zpi-host --list-plugins --plugin-dir failed: {out.stderr.strip()[:300]}"
    rows = {row["name"]: row for row in json.loads(out.stdout)}
    row = rows.get("claude:hooks-stop-sh")
    if row is None:
        return "--plugin-dir does not register claude:<folder> yet (folder loading missing)"
    if row["status"] != "ok":
        return f"claude:hooks-stop-sh did not load: {row['error']}"
    if "zpi_stop" not in row["hooks"]:
        return "the folder plugin does not carry the hook engine's hooks yet"
    return None


@pytest.fixture(autouse=True)
def _needs_folder_loading(tmp_path: Path, env: dict[str, str]) -> None:
    reason = _folders_ready(tmp_path, env)
    if reason is not None:
        pytest.skip(f"Claude folder registration is not integrated: {reason}")


def test_list_plugins_shows_the_hook_events(tmp_path, env):
    folder = plugin("hooks-guard-py", tmp_path)
    out = zpi("--list-plugins", "--json", "--plugin-dir", str(folder), cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    (row,) = [r for r in json.loads(out.stdout) if r["name"] == "claude:hooks-guard-py"]
    assert row["source"] == "claude" and row["status"] == "ok"
    assert row["contributes"]["hooks"] == ["PostToolUse", "PreToolUse"]
    assert {"zpi_before_tool", "zpi_after_tool"} <= set(row["hooks"])
    assert "zpi_stop" not in row["hooks"]


def test_python_guard_denies_rewrites_and_reports(tmp_path, env, work):
    folder = plugin("hooks-guard-py", tmp_path)
    out = run(folder, "tidy up", bash("rm -rf build"), bash("echo hi"),
              {"tool_calls": [{"name": "write", "arguments": {"path": "notes.draft",
                                                              "content": "hello"}}]},
              "done", cwd=work, env=env, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["result"] == "done" and [d["tool"] for d in result["denials"]] == ["bash"]
    assert (work / "notes.txt").read_text() == "HELLO" and not (work / "notes.draft").exists()
    records = transcript(env, result["session_id"])
    ran = [r["arguments"] for r in records if r["type"] == "tool_use"]
    assert {"command": "echo guarded:hi"} in ran
    assert {"path": str(work / "notes.txt"), "content": "HELLO"} in ran
    texts = json.dumps(records)
    assert "guard.py: rm -rf is not allowed here" in texts
    assert "after_write.py: notes.txt was written" in texts
    seen = (data_dir(env, "hooks-guard-py") / "seen.jsonl").read_text().splitlines()
    assert json.loads(seen[0])["tool_input"] == {"command": "rm -rf build"}


def test_bash_context_hooks_and_a_blocked_prompt(tmp_path, env, work):
    folder = plugin("hooks-context-sh", tmp_path)
    out = run(folder, "hello", bash("echo $CONTEXT_SH_MARK"), "done", cwd=work, env=env,
              tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    texts = json.dumps(transcript(env, result["session_id"]))
    assert "start.sh: the project codename is BLUEBIRD (source: startup)" in texts
    assert "prompt.sh: answer in English" in texts
    assert "from-session-start" in texts  # the export reached the bash call
    blocked = run(folder, "tell me the secret", "never", cwd=work, env=env, tmp_path=tmp_path)
    assert blocked.returncode == 1
    assert "prompt.sh: prompts about secrets are blocked" in json.loads(blocked.stdout)["result"]


def test_stop_hook_keeps_the_run_going_once(tmp_path, env, work):
    folder = plugin("hooks-stop-py", tmp_path)
    out = run(folder, "go", "first", "second", cwd=work, env=env, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert (result["result"], result["num_turns"]) == ("second", 2)
    rounds = [json.loads(line) for line in
              (data_dir(env, "hooks-stop-py") / "stops.jsonl").read_text().splitlines()]
    assert [r["stop_hook_active"] for r in rounds] == [False, True]


def test_failing_hooks_warn_and_the_run_goes_on(tmp_path, env, work):
    folder = plugin("hooks-failing-sh", tmp_path)
    out = run(folder, "go", bash("echo ran"), "done", cwd=work, env=env, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"] == "done"
    assert "timed out" in out.stderr and "printed invalid JSON" in out.stderr
    assert "exited 1: failing-sh: broken hook" in out.stderr
    texts = json.dumps(transcript(env, json.loads(out.stdout)["session_id"]))
    assert "failing-sh: look at the output again" in texts
    assert not (data_dir(env, "hooks-failing-sh") / "slow-finished").exists()
