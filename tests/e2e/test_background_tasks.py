"""Background commands through whole ``zpi-host run`` processes: a plain run stops its tasks
before the result and leaves nothing running; a host killed with a task running is resumed
with the task reported as ended."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

from e2e.test_builtins import EXE, zpi

from zpi_host.support.process_groups import process_alive

WAIT = 30  # seconds: a bound against hangs


def write_script(path: Path, turns: list) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return path


def background(command: str) -> dict:
    return {"tool_calls": [{"name": "bash", "arguments": {
        "command": command, "run_in_background": True, "description": "the watcher"}}]}


def until_exists(path: Path) -> dict:
    return {"tool_calls": [{"name": "bash", "arguments": {
        "command": f"while [ ! -s {path} ]; do sleep 0.02; done"}}]}


def test_a_plain_run_stops_its_background_command_before_the_result(tmp_path):
    pidfile = tmp_path / "watcher.pid"
    script = write_script(tmp_path / "script.jsonl", [
        background(f"sleep 600 & echo $! > {pidfile}; wait"), until_exists(pidfile),
        {"text": "The watcher is running."}])
    out = zpi(tmp_path, "run", "--allow", "bash", "--model", f"scripted:{script}",
              "--output-format", "stream-json", "start the watcher")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    types = [line.get("type") for line in lines]
    assert types.index("task_started") < types.index("task_notification") < len(lines) - 1
    ended = lines[types.index("task_notification")]["info"]
    assert ended["status"] == "stopped" and "the run ended" in ended["summary"]
    assert lines[-1]["result"] == "The watcher is running."
    # the sleep would have outlived the host: it is gone, and so is its shell
    assert not process_alive(int(pidfile.read_text()))
    assert not process_alive(ended["pid"])
    transcript = next((tmp_path / "agent" / "sessions").rglob("*.jsonl"))
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    tasks = [r["data"] for r in records if r.get("namespace") == "zpi.task"]
    assert [(t["event"], t.get("pgid"), t.get("exit_code")) for t in tasks] == [
        ("start", None, None), ("spawned", ended["pgid"], None),
        ("end", None, -signal.SIGTERM)]


def spawned(tmp_path) -> bool:
    """Whether the session's transcript records a started background process (its group)."""
    for transcript in (tmp_path / "agent" / "sessions").rglob("*.jsonl"):
        if '"event": "spawned"' in transcript.read_text() or \
                '"event":"spawned"' in transcript.read_text():
            return True
    return False


def test_a_killed_host_leaves_a_task_that_resume_reports_as_ended(tmp_path):
    """SIGKILL gives the host no time to stop anything: the background command's group
    outlives it. Resuming the session reports the task as ended and no longer managed."""
    pidfile = tmp_path / "watcher.pid"
    script = write_script(tmp_path / "script.jsonl", [
        background(f"sleep 600 & echo $! > {pidfile}; wait"),
        {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 600"}}]}])
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith(("ZPI_", "OPENAI_", "ANTHROPIC_"))}
    environ.update({"ZPI_AGENT_DIR": str(tmp_path / "agent"), "HOME": str(tmp_path)})
    host = subprocess.Popen([EXE, "run", "--allow", "bash", "--model", f"scripted:{script}",
                             "--output-format", "json", "start the watcher"],
                            cwd=tmp_path, env=environ,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    orphan_groups = []
    try:
        deadline = time.monotonic() + WAIT
        while not (pidfile.exists() and pidfile.read_text().strip() and spawned(tmp_path)):
            assert time.monotonic() < deadline and host.poll() is None, host.stderr
            time.sleep(0.05)
        child = int(pidfile.read_text())
        orphan_groups.append(os.getpgid(child))
        host.kill()
        host.communicate(timeout=WAIT)
        assert process_alive(child)  # nobody stopped it

        transcript = next((tmp_path / "agent" / "sessions").rglob("*.jsonl"))
        session_id = transcript.stem
        resume = write_script(tmp_path / "resume.jsonl", [{"text": "Noted."}])
        out = zpi(tmp_path, "run", "--model", f"scripted:{resume}", "--output-format",
                  "json", "--resume", session_id, "what happened?")
        assert out.returncode == 0, out.stderr
        records = [json.loads(line) for line in transcript.read_text().splitlines()]
        tasks = [r["data"] for r in records if r.get("namespace") == "zpi.task"]
        assert [t["event"] for t in tasks] == ["start", "spawned", "end"]
        assert tasks[2]["status"] == "stopped" and tasks[2]["exit_code"] is None
        context = [r for r in records if r.get("type") == "context"
                   and r.get("source") == "builtins:tasks"]
        assert len(context) == 1
        text = context[0]["text"]
        assert tasks[0]["task_id"] in text and "ended while no host was running it" in text
        assert f"process group {orphan_groups[0]} still exists" in text
    finally:
        if host.poll() is None:
            host.kill()
        for group in orphan_groups:
            with contextlib.suppress(OSError):
                os.killpg(group, signal.SIGKILL)


def test_text_mode_says_on_stderr_how_each_task_ended(tmp_path):
    # the second call returns once the task's end is in the transcript: it has ended by
    # itself before the run ends (and is not stopped by it)
    ended = ("until grep -qs '\"event\":\"end\"' agent/sessions/*/*.jsonl; "
             "do sleep 0.02; done")
    script = write_script(tmp_path / "script.jsonl", [
        background("echo built; exit 4"),
        {"tool_calls": [{"name": "bash", "arguments": {"command": ended}}]},
        {"text": "Done."}])
    out = zpi(tmp_path, "run", "--allow", "bash", "--model", f"scripted:{script}", "build it")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Done."
    assert "background task b" in out.stderr and "(the watcher) exited with code 4" in \
        out.stderr
