"""Real ``zpi-host`` processes for the crash and signal suites: starting them, finding their
transcript, checking it the way a resume will, and watching the process groups they start."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXE = shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))
#: bound on any wait in these suites, so a hang fails instead of blocking CI
WAIT = 30.0


def host_env(agent_dir: Path) -> dict[str, str]:
    """The environment of a host process: no ZPI_ or provider variables from outside, its own
    agent dir."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ZPI_", "OPENAI_", "ANTHROPIC_"))}
    env["ZPI_AGENT_DIR"] = str(agent_dir)
    return env


def start_run(args: Sequence[str], *, cwd: Path, agent_dir: Path) -> subprocess.Popen[bytes]:
    """``zpi-host run ARGS`` in the background, stdout and stderr piped."""
    return subprocess.Popen([EXE, "run", *args], cwd=cwd, env=host_env(agent_dir),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def run(args: Sequence[str], *, cwd: Path, agent_dir: Path) -> subprocess.CompletedProcess[str]:
    """``zpi-host run ARGS`` to the end."""
    return subprocess.run([EXE, "run", *args], cwd=cwd, env=host_env(agent_dir),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=WAIT * 2)


def session_file(agent_dir: Path) -> Path:
    """The one transcript under ``agent_dir``."""
    found = sorted((agent_dir / "sessions").glob("*/*.jsonl"))
    assert len(found) == 1, f"expected one session file under {agent_dir}, found {found}"
    return found[0]


def read_branch(path: Path) -> list[Any]:
    """The transcript's active branch, read and validated as a resume reads it (raises
    TranscriptError on damage; a torn final line is dropped)."""
    from zpi_host.transcript import history
    from zpi_host.transcript.reader import read_transcript

    transcript = read_transcript(path)
    return history.active_branch(transcript.records, transcript.linear)


def open_calls(path: Path) -> list[tuple[str, str, bool]]:
    """Tool calls of the model's context that have no result (call id, tool, started)."""
    from zpi_host.transcript import history

    return history.unfinished_calls(read_branch(path))


def tool_results(path: Path) -> dict[str, Any]:
    """Every tool result message of the transcript, by call id."""
    return {r.call_id: r.message for r in read_branch(path) if r.TYPE == "tool_result"}


def wait_until(condition: Any, timeout: float = WAIT, step: float = 0.02) -> bool:
    """Poll ``condition()`` until it is true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return bool(condition())


def kill_group(pgid: int) -> None:
    """Clean up after a failed test: SIGKILL a group that should be gone already."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
