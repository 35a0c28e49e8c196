"""Piped ``zpi-host run`` output stays byte for byte what it was before the terminal display
learned Markdown, diffs, stderr tails and footers: none of that may leak into a pipe.

The expected bytes were recorded from the code before those changes, for this scripted
session: Markdown text, a read, an edit, a write, a failing command (stdout and stderr) and
a final answer."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.e2e.test_cli_terminal import EXE, environment

TURNS = [
    {"thinking": "Check the file.", "text": "# Plan\n\n- read `app.py`\n- fix it\n",
     "tool_calls": [{"name": "read", "arguments": {"path": "app.py"}}],
     "usage": {"input_tokens": 100, "output_tokens": 10}},
    {"text": "Fixing the typo.", "tool_calls": [
        {"name": "edit", "arguments": {"path": "app.py", "edits": [
            {"old_text": "Helo", "new_text": "Hello"}]}},
        {"name": "write", "arguments": {"path": "notes.md", "content": "one\ntwo\n"}}],
     "usage": {"input_tokens": 200, "output_tokens": 20}},
    {"text": "Now a check that fails.", "tool_calls": [{"name": "bash", "arguments": {
        "command": "echo out; echo 'boom: no such thing' >&2; exit 2"}}],
     "usage": {"input_tokens": 300, "output_tokens": 30}},
    {"text": "Done. **The greeting** is fixed:\n\n```python\nprint(\"Hello\")\n```\n",
     "usage": {"input_tokens": 400, "output_tokens": 40}},
]

STDOUT = 'Done. **The greeting** is fixed:\n\n```python\nprint("Hello")\n```\n\n'
STDERR = ("• read(path=app.py)\n"
          '• edit(path=app.py, edits=[{"old_text": "Helo", "new_text": "Hell…)\n'
          "• write(path=notes.md, content=one\\ntwo\\n)\n"
          "• bash(command=echo out; echo 'boom: no such thing' >&…)\n"
          "  ✗ Exit code 2\n")


def test_piped_text_output_is_unchanged(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(turn) + "\n" for turn in TURNS))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "app.py").write_text('def greet():\n    print("Helo")\n')
    out = subprocess.run(
        [EXE, "run", "--allow", "bash", "--permission-mode", "acceptEdits",
         "--model", f"scripted:{script}", "fix it"],
        capture_output=True, cwd=workspace, env=environment(tmp_path),
        stdin=subprocess.DEVNULL, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode() == STDOUT
    assert out.stderr.decode() == STDERR
    assert (workspace / "app.py").read_text() == 'def greet():\n    print("Hello")\n'
    assert (workspace / "notes.md").read_text() == "one\ntwo\n"
