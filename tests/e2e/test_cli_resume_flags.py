"""``-c``/``--continue`` and ``-r``/``--resume [ID]`` as Claude Code spells them; ``-r`` alone
picks a recent session on a terminal."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.e2e.test_cli_terminal import EXE, environment, script
from tests.helpers.terminal import Terminal


def zpi(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=tmp_path,
                          env=environment(tmp_path), stdin=subprocess.DEVNULL, timeout=60)


def first_session(tmp_path: Path, prompt: str = "remember the word kiwi") -> str:
    model = script(tmp_path, {"text": "noted"})
    out = zpi(tmp_path, "run", "--output-format", "json", "--model", model, prompt)
    assert out.returncode == 0, out.stderr
    return str(re.search(r'"session_id": "([0-9a-f-]{36})"', out.stdout).group(1))


def messages_of(tmp_path: Path, session_id: str) -> str:
    (path,) = (tmp_path / "agent/sessions").rglob(f"{session_id}.jsonl")
    return path.read_text()


def test_short_continue_and_resume_flags(tmp_path: Path) -> None:
    session_id = first_session(tmp_path)
    out = zpi(tmp_path, "run", "-c", "--model", script(tmp_path, {"text": "kiwi"}), "again?")
    assert out.returncode == 0, out.stderr
    assert "again?" in messages_of(tmp_path, session_id)
    out = zpi(tmp_path, "run", "-r", session_id[:8], "--model",
              script(tmp_path, {"text": "still kiwi"}), "and now?")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "still kiwi\n"
    assert "and now?" in messages_of(tmp_path, session_id)


def test_resume_without_an_id_needs_a_terminal(tmp_path: Path) -> None:
    first_session(tmp_path)
    out = zpi(tmp_path, "run", "--model", script(tmp_path, {"text": "x"}), "hi", "-r")
    assert out.returncode == 2
    assert "--resume without an ID picks a session on a terminal" in out.stderr


def test_resume_without_an_id_on_a_terminal_lists_recent_sessions_to_pick(tmp_path):
    older = first_session(tmp_path, "the older one")
    newer = first_session(tmp_path, "the newer one")
    model = script(tmp_path, {"text": "picked"})
    term = Terminal([EXE, "run", "--model", model, "which one?", "-r"], cwd=tmp_path,
                    env=environment(tmp_path))
    shown = term.read_until(r"resume which\? \[1-2")
    lines = [line for line in shown.splitlines() if re.match(r"\s+\d\. ", line)]
    assert newer in lines[0] and "the newer one" in lines[0]  # newest first
    assert older in lines[1]
    term.send("2\r")
    assert term.finish() == 0, term.text
    assert "picked" in term.screen
    assert "which one?" in messages_of(tmp_path, older)
    assert "which one?" not in messages_of(tmp_path, newer)
