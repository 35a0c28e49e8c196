"""``zpi-host run`` in text mode on a real pseudo-terminal: the live display."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from tests.helpers.terminal import Terminal

from zpi_host.cli.live import SPINNER
from zpi_host.testing import ModelServer

REPO = Path(__file__).resolve().parents[2]
EXE = shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))
SCRIPT = str(REPO / "examples/demo/script.jsonl")
ANSWER = 'Fixed the typo in greet.py: it now prints "Hello, world!".'
TIME = r"\d+\.\ds"
#: the footer a run on a terminal ends with
FOOTER = r"\d+ turns? · \d+ in, \d+ out tokens · \$\d+\.\d{4} · \d+\.\ds"
#: what the demo passes (examples/demo/run.sh): its edit and its command run unasked
DEMO = ("--permission-mode", "acceptEdits", "--allow", "bash(python3 greet.py)")


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ZPI_", "OPENAI_", "ANTHROPIC_")) and k != "NO_COLOR"}
    env.update({"HOME": str(tmp_path / "home"), "ZPI_AGENT_DIR": str(tmp_path / "agent"),
                "TERM": "xterm-256color", **extra})
    return env


def on_terminal(tmp_path: Path, *args: str, cwd: Path, **env: str) -> tuple[int, Terminal]:
    terminal = Terminal([EXE, "run", *args], cwd=cwd, env=environment(tmp_path, **env))
    return terminal.finish(), terminal


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    shutil.copytree(REPO / "examples/demo/workspace", workspace)
    return workspace


def script(tmp_path: Path, *turns: dict) -> str:
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps(turn) + "\n" for turn in turns))
    return f"scripted:{path}"


def test_the_demo_streams_text_and_one_line_per_tool_call(tmp_path, demo):
    code, term = on_terminal(tmp_path, *DEMO, "--model", f"scripted:{SCRIPT}", "fix it",
                             cwd=demo)
    assert code == 0, term.text
    screen = term.screen
    expected = [
        "✻ thinking… 5 words",  # the scripted first turn thinks: collapsed to one line
        "Let me read greet.py.",
        rf"✓ read greet.py · 6 lines · {TIME}",
        "The greeting is misspelled; fixing it.",
        rf"✓ edit greet.py · \+1 -1 lines · {TIME}",
        re.escape("  @@ -1,5 +1,5 @@"),  # the edit's diff, coloured (below)
        "   def greet\\(name\\):",
        re.escape('  -    return "Helo, " + name + "!"'),
        re.escape('  +    return "Hello, " + name + "!"'),
        "   ", "   ",
        "   if __name__ == \"__main__\":",
        "Now run it to check.",
        rf"✓ bash python3 greet.py · 1 line · {TIME}",
        "  │ Hello, world!",
        re.escape(ANSWER),
        "4 turns · 3770 in, 99 out tokens · \\$0\\.0000 · " + TIME,  # the footer
    ]
    assert len(screen) == len(expected), screen
    for line, pattern in zip(screen, expected, strict=True):
        assert re.fullmatch(pattern, line), (line, pattern)
    # while a call runs, a spinner line names it (at whichever frame: the permission check of
    # the command may take a few); colours are on
    assert re.search(rf"[{SPINNER}] bash python3 greet\.py · {TIME}", term.text)
    assert "\x1b[32m✓\x1b[0m" in term.output and "\x1b[36m⠋" in term.output
    assert '\x1b[31m-    return "Helo, "' in term.output
    assert '\x1b[32m+    return "Hello, "' in term.output


def test_no_color_turns_colours_off_but_keeps_the_display(tmp_path, demo):
    code, term = on_terminal(tmp_path, *DEMO, "--model", f"scripted:{SCRIPT}", "fix it",
                             cwd=demo,
                             NO_COLOR="1")
    assert code == 0, term.text
    assert not re.search(r"\x1b\[[0-9;]*m", term.output)
    assert term.screen[-2] == ANSWER and term.screen[2].startswith("✓ read greet.py")


def test_a_failed_call_shows_its_whole_error_and_bash_shows_its_output_tail(tmp_path):
    model = script(tmp_path,
                   {"tool_calls": [{"name": "read", "arguments": {"path": "missing.txt"}}]},
                   {"tool_calls": [{"name": "bash", "arguments": {
                       "command": "for i in 1 2 3 4 5; do echo line $i; done"}}]},
                   {"text": "done"})
    code, term = on_terminal(tmp_path, "--allow", "bash", "--model", model, "go", cwd=tmp_path)
    assert code == 0, term.text
    screen = term.screen
    error = next(line for line in screen if line.startswith("✗ read missing.txt"))
    assert "error:" in error and not error.endswith("…")
    bash = screen.index(next(line for line in screen if line.startswith("✓ bash for i")))
    assert screen[bash + 1:bash + 4] == ["  │ line 3", "  │ line 4", "  │ line 5"]
    assert "\x1b[31m✗" in term.output and screen[-2] == "done"
    assert re.fullmatch(FOOTER, screen[-1])


def test_the_model_and_its_commands_cannot_drive_the_terminal(tmp_path):
    """Escape sequences from the model's text and a command's output never reach the
    terminal (clipboard, title, clear screen); a pipe still gets the model's text as it was."""
    answer = "done\u001b]0;owned\u0007 \u202eevil"
    model = script(tmp_path, {"text": "Sure\u001b]52;c;ZXZpbA==\u0007\u001b[2J, running it.",
                              "tool_calls": [{"name": "bash", "arguments": {
                                  "command": r"printf '\033]0;title\007\033[31mred\033[0m\n'"}}]},
                   {"text": answer})
    code, term = on_terminal(tmp_path, "--allow", "bash", "--model", model, "go", cwd=tmp_path)
    assert code == 0, term.text
    assert "\x1b]" not in term.output and "\x1b[2J" not in term.output
    assert "\x1b[31m" not in term.output and "\u202e" not in term.output
    assert "Sure, running it." in term.screen and "  │ red" in term.screen
    assert term.screen[-2] == "done <U+202E>evil"
    import subprocess

    piped = subprocess.run([EXE, "run", "--allow", "bash", "--model", model, "go"],
                           capture_output=True, text=True, cwd=tmp_path,
                           env=environment(tmp_path), timeout=60)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == answer + "\n"


def test_retries_and_warnings_get_their_own_yellow_lines(tmp_path):
    (tmp_path / ".zpi").mkdir()
    (tmp_path / ".zpi/settings.json").write_text("{not json")
    with ModelServer(["hello there"]) as server:
        server.fail_next(429, retry_after=0.25)
        code, term = on_terminal(tmp_path, "--model", "openai:gpt-test", "--base-url",
                                 server.base_url, "hi", cwd=tmp_path, OPENAI_API_KEY="sk-x")
    assert code == 0, term.text
    assert "rate limited, retrying in 0.2 s, attempt 2 of 4" in term.screen
    assert "\x1b[33mrate limited, retrying" in term.output
    assert term.screen[-2] == "hello there"
    assert "settings.json" in term.text  # --base-url copies the settings: still reported
    code, term = on_terminal(tmp_path, "--model", script(tmp_path, {"text": "hi"}), "hi",
                             cwd=tmp_path)
    assert code == 0, term.text
    assert re.search(r"\x1b\[33mwarning: .*settings\.json", term.output)


def test_without_a_terminal_only_the_answer_and_verbose_adds_usage(tmp_path, demo):
    import subprocess

    out = subprocess.run([EXE, "run", "--verbose", *DEMO, "--model", f"scripted:{SCRIPT}",
                          "fix it"],
                         capture_output=True, text=True, cwd=demo, env=environment(tmp_path),
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ANSWER + "\n"
    assert "\x1b[" not in out.stderr
    assert re.search(r"4 turn\(s\) in \d+\.\d\d s; 3 tool call\(s\) took", out.stderr)
    assert "tokens: 3770 in, 99 out, 0 cache read, 0 cache write; cost $0.0000" in out.stderr


def test_a_dumb_terminal_gets_the_plain_output(tmp_path, demo):
    code, term = on_terminal(tmp_path, *DEMO, "--model", f"scripted:{SCRIPT}", "fix it",
                             cwd=demo,
                             TERM="dumb")
    assert code == 0, term.text
    assert "\x1b[" not in term.output and "⠋" not in term.output
    assert "• read(path=greet.py)" in term.screen and term.screen[-1] == ANSWER


def test_thinking_is_one_dim_line_and_verbose_shows_it_whole(tmp_path):
    """As Claude Code shows reasoning: collapsed to a dimmed "thinking…" line on a terminal
    (the text itself not shown), and the text under it, dimmed, with --verbose."""
    turn = {"thinking": "The user wants a haiku.\nCount the syllables.", "text": "Done."}
    code, term = on_terminal(tmp_path, "--model", script(tmp_path, turn), "write a haiku",
                             cwd=tmp_path)
    assert code == 0, term.text
    assert term.screen[0] == "✻ thinking… 8 words" and term.screen[1] == "Done."
    assert "\x1b[2m✻ thinking… 8 words\x1b[0m" in term.output
    assert "syllables" not in term.text
    (tmp_path / "again").mkdir()
    code, term = on_terminal(tmp_path, "--verbose", "--model", script(tmp_path, turn),
                             "write a haiku", cwd=tmp_path / "again")
    assert code == 0, term.text
    start = term.screen.index("✻ thinking… 8 words")
    assert term.screen[start + 1:start + 4] == [
        "  The user wants a haiku.", "  Count the syllables.", "Done."]
    assert "\x1b[2m  Count the syllables.\x1b[0m" in term.output
