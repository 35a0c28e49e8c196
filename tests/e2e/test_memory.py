"""builtins:memory in a whole ``zpi-host run`` process: the tool writes a project memory, the
batch at the end adds a user memory and refuses to overwrite one the user edited meanwhile,
and the next run's system prompt lists them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from helpers.cli import zpi

from zpi_builtins.memory_store import render


def script(tmp_path: Path, name: str, turns: list) -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return f"scripted:{path}"


def test_memory_tool_batch_and_index_across_two_runs(tmp_path):
    agent = tmp_path / "agent"
    (agent / "memory").mkdir(parents=True)
    (agent / "settings.json").write_text(json.dumps(
        {"plugins": {"builtins": {"memory": {"batch": True}}}}))
    style = agent / "memory" / "style.md"
    style.write_bytes(render("user", "style", "code style", "Tabs."))
    # the user's edit lands while the run goes on: a bash call of the script makes it
    edit = (f"{sys.executable} -c \"import pathlib; p = pathlib.Path({str(style)!r}); "
            "p.write_text(p.read_text().replace('Tabs.', 'Tabs, width 4.'))\"")
    first = script(tmp_path, "first.jsonl", [
        {"tool_calls": [{"name": "memory", "arguments": {
            "action": "add", "scope": "project", "name": "build",
            "description": "how to build", "content": "`cargo build --release`"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": edit}}]},
        {"text": "Noted."},
        {"purpose": "memory", "text": json.dumps([
            {"action": "add", "scope": "user", "name": "language", "description":
             "the user's language", "content": "Rust first."},
            {"action": "replace", "scope": "user", "name": "style", "content": "Spaces."}])},
    ])
    out = zpi(tmp_path, "run", "--model", first, "--output-format", "json",
              "--permission-mode", "bypass", "we build with cargo")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"] == "Noted."
    assert "`cargo build --release`" in (tmp_path / ".zpi" / "memory" / "build.md").read_text()
    assert "Rust first." in (agent / "memory" / "language.md").read_text()
    assert style.read_text().endswith("Tabs, width 4.\n")  # the user's edit is kept
    assert "memory batch: 1 update(s) refused" in out.stderr
    assert "user memory 'style' was changed on disk since it was last read" in out.stderr
    transcript = next((agent / "sessions").rglob("*.jsonl")).read_text()
    assert '"namespace":"zpi.memory"' in transcript.replace(" ", "")

    first_transcript = next((agent / "sessions").rglob("*.jsonl"))
    second = script(tmp_path, "second.jsonl", [{"text": "ok"}])
    out = zpi(tmp_path, "run", "--model", second, "--output-format", "json", "hi")
    assert out.returncode == 0, out.stderr
    (transcript,) = set((agent / "sessions").rglob("*.jsonl")) - {first_transcript}
    index = ("# Memories\nNotes kept from earlier sessions (the `memory` tool views and changes "
             "them). View a memory before relying on it.\n- [project] build: how to build\n"
             "- [user] language: the user's language\n- [user] style: code style")
    assert json.dumps(index)[1:-1] in transcript.read_text()
    listing = zpi(tmp_path, "--list-plugins")
    assert "builtins:memory" in listing.stdout and "tools: memory" in listing.stdout
