"""glob and grep through a whole ``zpi-host run`` process whose scripted model calls them:
with ripgrep on PATH and with ``plugins.builtins.search.ripgrep`` off, the same results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from e2e.test_builtins import zpi
from helpers.host_process import tool_results


def workspace(root: Path) -> None:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "core.py").write_text("def handler():\n    return 'needle'\n")
    (root / "src" / "notes.md").write_text("needle in the notes\n")
    (root / "dist").mkdir()
    (root / "dist" / "core.py").write_text("needle (a build copy)\n")
    # the host's own files live here too: the model's search must not see them
    (root / ".gitignore").write_text("dist/\nagent/\nscript.jsonl\n")


TURNS = [
    {"tool_calls": [{"name": "glob", "arguments": {"pattern": "**/*.py"}},
                    {"name": "grep", "arguments": {"pattern": "NEEDLE", "-i": True,
                                                   "output_mode": "content", "-B": 1}}]},
    {"tool_calls": [{"name": "grep", "arguments": {"pattern": "needle", "type": "md",
                                                   "output_mode": "count"}}]},
    {"text": "The handler returns the needle."},
]


def run(tmp_path: Path, ripgrep: str) -> list[str]:
    (tmp_path / "agent").mkdir(exist_ok=True)
    (tmp_path / "agent" / "settings.json").write_text(json.dumps(
        {"plugins": {"builtins": {"search": {"ripgrep": ripgrep}}}}))
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(t) + "\n" for t in TURNS))
    out = zpi(tmp_path, "run", "--model", f"scripted:{script}", "--output-format", "json",
              "where is the needle?")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"] == "The handler returns the needle."
    transcripts = sorted((tmp_path / "agent" / "sessions").rglob("*.jsonl"),
                         key=lambda p: p.stat().st_mtime)
    results = tool_results(transcripts[-1])
    return ["".join(c.text for c in m.content) for m in results.values()]


@pytest.mark.parametrize("ripgrep", ["auto", "off"])
def test_a_run_whose_model_calls_glob_and_grep(tmp_path, ripgrep):
    if ripgrep == "auto" and shutil.which("rg") is None:
        pytest.skip("ripgrep (rg) is not installed: only the Python engine can run")
    workspace(tmp_path)
    listed, lines, counted = run(tmp_path, ripgrep)
    assert listed == "src/pkg/core.py"
    assert lines == "src/notes.md:1:needle in the notes\n--\n" \
                    "src/pkg/core.py-1-def handler():\nsrc/pkg/core.py:2:    return 'needle'"
    assert counted == "src/notes.md:1\n\nFound 1 matching line(s) in 1 file(s)"
