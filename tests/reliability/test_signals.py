"""SIGINT and SIGTERM sent to a real ``zpi-host run`` while bash runs ``sleep``.

The first signal aborts the run cleanly: exit 130 or 143, no traceback, the sleep's process
group gone, the call closed as interrupted in the transcript, and the session resumable. A
second signal exits at once, still without a traceback and leaving a transcript that resumes.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.host_process import (
    WAIT,
    kill_group,
    open_calls,
    run,
    session_file,
    start_run,
    tool_results,
    wait_until,
)

from zpi_host.support.process_groups import group_alive
from zpi_host.transcript.store import INTERRUPTED_TEXT

#: the CLI's default mode asks before commands (and denies them with no terminal)
RUNS_COMMANDS = ("--allow", "bash")


def sleeping_script(folder: Path, pid_file: Path, prefix: str = "") -> Path:
    """One bash call that writes its process group id to ``pid_file`` and sleeps."""
    script = folder / "sleep.jsonl"
    command = f"{prefix}echo $$ > {pid_file}; sleep 300"
    turns = [{"text": "sleeping", "tool_calls": [{"name": "bash",
                                                  "arguments": {"command": command}}]},
             {"text": "never reached"}]
    script.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    return script


def pgid_of(pid_file: Path) -> int:
    assert wait_until(lambda: pid_file.exists() and pid_file.read_text().strip()), \
        "the bash call never started"
    return int(pid_file.read_text())


def resume(workspace: Path, agent: Path, transcript: Path) -> None:
    """A real resume with a short follow-up: it must accept the transcript and go on."""
    follow_up = workspace.parent / "follow-up.jsonl"
    follow_up.write_text(json.dumps({"text": "resumed"}) + "\n", encoding="utf-8")
    out = run(["--resume", transcript.stem, "--output-format", "json", "--model",
               f"scripted:{follow_up}", "go on"], cwd=workspace, agent_dir=agent)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"] == "resumed"
    assert "Traceback" not in out.stderr
    assert open_calls(transcript) == []


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace, tmp_path / "agent", tmp_path / "pid"


@pytest.mark.parametrize(("signum", "code", "fmt"), [
    (signal.SIGINT, 130, "stream-json"),
    (signal.SIGTERM, 143, "text"),
])
def test_a_signal_aborts_the_run_cleanly(places, signum, code, fmt):
    workspace, agent, pid_file = places
    script = sleeping_script(workspace.parent, pid_file)
    process = start_run([*RUNS_COMMANDS, "--output-format", fmt, "--model", f"scripted:{script}",
                         "go"], cwd=workspace, agent_dir=agent)
    pgid = pgid_of(pid_file)
    try:
        process.send_signal(signum)
        stdout, stderr = (b.decode() for b in process.communicate(timeout=WAIT))
        assert process.returncode == code, stderr
        assert "Traceback" not in stderr and "Traceback" not in stdout
        assert f"{signal.Signals(signum).name}: stopping the run" in stderr
        assert wait_until(lambda: not group_alive(pgid)), "the sleep is still running"
    finally:
        kill_group(pgid)
    if fmt == "stream-json":
        lines = [json.loads(line) for line in stdout.splitlines()]
        assert (lines[-1]["type"], lines[-1]["stop_reason"], lines[-1]["is_error"]) == \
            ("result", "aborted", True)
        ends = [e["result"] for e in lines if e["type"] == "tool_end"]  # its start has an end
        assert [(e["call_id"], e["details"].get("interrupted")) for e in ends] == \
            [("call_1_0", True)]
    else:
        assert "--resume" in stderr  # text mode says how to go on
    transcript = session_file(agent)
    assert open_calls(transcript) == []  # closed by the aborted run itself, not by a resume
    closed = tool_results(transcript)["call_1_0"]
    assert closed.is_error and closed.details.get("interrupted") is True
    resume(workspace, agent, transcript)


def test_a_second_sigint_exits_at_once(places):
    """The command ignores SIGTERM, so a clean stop would wait out the grace period before
    SIGKILL; the second Ctrl-C does not wait: it kills the group and exits."""
    workspace, agent, pid_file = places
    script = sleeping_script(workspace.parent, pid_file, prefix="trap '' TERM; ")
    process = start_run([*RUNS_COMMANDS, "--output-format", "stream-json", "--model",
                         f"scripted:{script}", "go"], cwd=workspace, agent_dir=agent)
    pgid = pgid_of(pid_file)
    watchdog = threading.Timer(WAIT, process.kill)
    watchdog.start()
    try:
        process.send_signal(signal.SIGINT)
        assert process.stderr is not None
        first = process.stderr.readline().decode()
        assert "SIGINT: stopping the run" in first, first
        assert process.poll() is None and group_alive(pgid), "the first stop did not wait"
        process.send_signal(signal.SIGINT)
        _, rest = (b.decode() for b in process.communicate(timeout=WAIT))
        stderr = first + rest
        assert process.returncode == 130, stderr
        assert "SIGINT again: exiting now" in stderr, stderr
        assert "Traceback" not in stderr, stderr
        assert wait_until(lambda: not group_alive(pgid)), "the sleep is still running"
    finally:
        watchdog.cancel()
        kill_group(pgid)
    transcript = session_file(agent)
    # usually the forced exit leaves the call open (no time to close it); on a loaded machine
    # the first stop may have recorded it already. Either way resume closes it exactly once.
    assert [c[:2] for c in open_calls(transcript)] in ([], [("call_1_0", "bash")])
    resume(workspace, agent, transcript)
    closed = tool_results(transcript)["call_1_0"]
    assert closed.is_error and closed.content[0].text == INTERRUPTED_TEXT


def acknowledged_interrupt(process: subprocess.Popen[bytes],
                           signum: int = signal.SIGINT) -> str:
    """Send SIGINT until the host says it is stopping (at most a few times, never more once
    it has said anything; one is enough since the watcher thread sees each signal: see
    cli/signals.py); returns what it said."""
    assert process.stderr is not None
    said = ""
    for _ in range(5):
        process.send_signal(signum)
        ready, _, _ = select.select([process.stderr], [], [], 2.0)
        if ready:
            return said + process.stderr.readline().decode()
    return said


class StuckStart:
    """A host stuck while it starts: its scripted model file is a FIFO nobody writes, so it
    blocks reading it (the event loop cannot run) until :meth:`release`."""

    def __init__(self, workspace: Path, agent: Path) -> None:
        self.fifo = workspace.parent / "model.fifo"
        os.mkfifo(self.fifo)
        self.process = start_run(["--model", f"scripted:{self.fifo}", "go"], cwd=workspace,
                                 agent_dir=agent)
        self.writer: int | None = None
        assert wait_until(self._reader_waits), "the host never opened its model file"

    def _reader_waits(self) -> bool:  # a FIFO opens for writing only once a reader holds it
        with contextlib.suppress(OSError):
            self.writer = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
        return self.writer is not None

    def release(self) -> None:
        """End of file: the host reads an empty script and goes on."""
        if self.writer is not None:
            os.close(self.writer)
            self.writer = None

    def finish(self) -> str:
        try:
            _, stderr = self.process.communicate(timeout=WAIT)
        finally:
            self.process.kill()
            self.release()
        return stderr.decode()


def test_a_signal_while_starting_stops_before_the_run(places):
    workspace, agent, _ = places
    stuck = StuckStart(workspace, agent)
    stuck.process.send_signal(signal.SIGINT)
    time.sleep(0.2)  # not a measurement: the signal lands while the host is still stuck
    stuck.release()
    stderr = stuck.finish()
    assert stuck.process.returncode == 130, stderr
    assert "Traceback" not in stderr and "stopped before the run began" in stderr


def test_a_second_sigint_exits_even_when_the_host_is_stuck(places):
    """The event loop cannot act on the first Ctrl-C; the second still ends the process."""
    workspace, agent, _ = places
    stuck = StuckStart(workspace, agent)
    # two signals sent before the first is handled would merge into one: wait for its line
    first = acknowledged_interrupt(stuck.process)
    assert "SIGINT: stopping the run" in first, first
    stuck.process.send_signal(signal.SIGINT)
    stderr = first + stuck.finish()
    assert stuck.process.returncode == 130, stderr
    assert "Traceback" not in stderr and "SIGINT again: exiting now" in stderr


#: RunSignals in a process whose main thread can no longer run a Python signal handler: it
#: blocks SIGINT and SIGTERM and waits in a read nobody answers. That is the state of a signal
#: that lands just after the main thread's last check for signals and before it enters a
#: blocking call (CPython runs the Python handler only once the call returns), made certain.
BLOCKED_MAIN_THREAD = """
import os, signal
import anyio
from zpi_host.cli.signals import RunSignals

async def main():
    with RunSignals() as signals:
        signals.on_first(lambda: None)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        never, _ = os.pipe()
        os.write(1, b"ready\\n")
        os.read(never, 1)

anyio.run(main)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signals_are_acted_on_without_the_main_thread(signum):
    process = subprocess.Popen([sys.executable, "-c", BLOCKED_MAIN_THREAD],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdout is not None and process.stdout.readline() == b"ready\n"
        first = acknowledged_interrupt(process, signum)
        name = signal.Signals(signum).name
        assert f"{name}: stopping the run" in first, first
        process.send_signal(signum)
        _, rest = process.communicate(timeout=WAIT)
    finally:
        process.kill()
    assert process.returncode == 128 + signum, first + rest.decode()
    assert f"{name} again: exiting now" in rest.decode()


#: an event-loop signal handler (asyncio's, as prompt-toolkit installs for SIGWINCH) set before
#: RunSignals: its signal must still reach it while the watcher owns the wakeup fd, and after
FORWARDED = """
import asyncio, os, signal
import anyio
from zpi_host.cli.signals import RunSignals

async def main():
    got = []
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, lambda: got.append(1))
    for stage in ("inside", "after"):
        with RunSignals() if stage == "inside" else open(os.devnull):
            os.kill(os.getpid(), signal.SIGUSR1)
            with anyio.fail_after(10):
                while len(got) < (1 if stage == "inside" else 2):
                    await anyio.sleep(0.01)
    print(len(got))

anyio.run(main)
"""


def test_other_signals_still_reach_the_event_loop():
    out = subprocess.run([sys.executable, "-c", FORWARDED], capture_output=True, text=True,
                         timeout=WAIT)
    assert (out.returncode, out.stdout, out.stderr) == (0, "2\n", "")


#: a command started in its own session a moment ago, before its tool tracked the group: the
#: forced exit's kill_all must still kill it (a second Ctrl-C right after a call starts)
UNTRACKED_GROUP = """
import subprocess, sys
from zpi_host.support import process_groups

child = subprocess.Popen(["sleep", "300"], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(child.pid, flush=True)
assert process_groups.live() == frozenset()
process_groups.kill_all()
"""


def test_a_forced_exit_kills_groups_not_tracked_yet():
    out = subprocess.run([sys.executable, "-c", UNTRACKED_GROUP], capture_output=True,
                         text=True, timeout=WAIT)
    assert out.returncode == 0, out.stderr
    pgid = int(out.stdout)
    try:
        assert wait_until(lambda: not group_alive(pgid), timeout=5), "the sleep is still running"
    finally:
        kill_group(pgid)
