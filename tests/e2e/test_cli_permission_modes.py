"""The CLI's permission modes are Claude Code's: by default reads run, and edits and commands
ask; a run that cannot ask denies them with a line that says how to allow them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.cli import zpi

REPO = Path(__file__).resolve().parents[2]
SCRIPT = f"scripted:{REPO / 'examples/demo/script.jsonl'}"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """The demo's workspace; the demo model reads greet.py, edits it and runs it."""
    shutil.copytree(REPO / "examples/demo/workspace", tmp_path / "workspace")
    return tmp_path / "workspace"


def run_json(tmp_path: Path, demo: Path, *flags: str) -> tuple[dict, str]:
    out = zpi(tmp_path, "run", "--cwd", str(demo), "--model", SCRIPT, "--output-format",
              "json", *flags, "fix it")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), out.stderr


@pytest.mark.parametrize("flags", [(), ("--permission-mode", "default"),
                                   ("--permission-mode", "ask")])
def test_by_default_a_run_reads_and_denies_edits_and_commands(tmp_path, demo, flags):
    result, stderr = run_json(tmp_path, demo, *flags)
    assert "Helo" in (demo / "greet.py").read_text()  # the edit did not run
    edit, bash = result["denials"]
    assert (edit["tool"], bash["tool"]) == ("edit", "bash")
    assert "--permission-mode acceptEdits or --allow edit" in edit["reason"]
    assert "--allow 'bash(python3 greet.py:*)'" in bash["reason"]
    assert "acceptEdits" not in bash["reason"]  # it would not allow a command
    # the person is told once, on stderr, with the flags that would allow it
    assert stderr.count("was denied: it needs approval and this run cannot ask") == 1
    assert "zpi-host: edit was denied" in stderr and "--permission-mode acceptEdits" in stderr


def test_the_model_reads_how_to_allow_the_call(tmp_path, demo):
    out = zpi(tmp_path, "run", "--cwd", str(demo), "--model", SCRIPT, "--output-format",
              "stream-json", "fix it")
    ends = [e for e in map(json.loads, out.stdout.splitlines()) if e["type"] == "tool_end"]
    edit_text = ends[1]["result"]["content"][0]["text"]
    assert edit_text.startswith("permission denied for edit: ")
    assert "--permission-mode acceptEdits" in edit_text


def test_accept_edits_runs_edits_inside_the_workspace_and_still_denies_commands(tmp_path, demo):
    result, stderr = run_json(tmp_path, demo, "--permission-mode", "acceptEdits")
    assert '"Hello, "' in (demo / "greet.py").read_text()
    (bash,) = result["denials"]
    assert bash["tool"] == "bash" and "--allow 'bash(python3 greet.py:*)'" in bash["reason"]
    assert "zpi-host: bash was denied" in stderr


def test_accept_edits_does_not_reach_outside_the_workspace(tmp_path, demo):
    outside = tmp_path / "outside.txt"
    script = tmp_path / "s.jsonl"
    script.write_text(json.dumps({"tool_calls": [{"name": "write", "arguments": {
        "path": str(outside), "content": "x"}}]}) + "\n" + json.dumps({"text": "ok"}) + "\n")
    out = zpi(tmp_path, "run", "--cwd", str(demo), "--model", f"scripted:{script}",
              "--output-format", "json", "--permission-mode", "acceptEdits", "go")
    (denial,) = json.loads(out.stdout)["denials"]
    assert denial["source"] == "path" and not outside.exists()


@pytest.mark.parametrize("mode", ["bypassPermissions", "bypass"])
def test_bypass_and_its_old_name_run_everything(tmp_path, demo, mode):
    result, stderr = run_json(tmp_path, demo, "--permission-mode", mode)
    assert result["denials"] == [] and '"Hello, "' in (demo / "greet.py").read_text()
    assert "denied" not in stderr


def test_allow_rules_let_exactly_those_calls_run(tmp_path, demo):
    result, _ = run_json(tmp_path, demo, "--allow", "edit", "--allow", "bash(python3:*)")
    assert result["denials"] == [] and '"Hello, "' in (demo / "greet.py").read_text()


def test_plan_denies_edits_without_a_hint_to_approve(tmp_path, demo):
    result, stderr = run_json(tmp_path, demo, "--permission-mode", "plan")
    assert [d["source"] for d in result["denials"]] == ["mode", "mode"]
    assert "plan mode" in result["denials"][0]["reason"] and "was denied" not in stderr


@pytest.mark.parametrize(("mode", "denied"), [("default", 2), ("ask", 2), ("bypass", 0)])
def test_the_settings_mode_uses_the_same_names(tmp_path, demo, mode, denied):
    """``permissions.mode`` in the user's settings: ``default`` there is the CLI's default
    too (it asks), not the kernel's workspace trust."""
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent/settings.json").write_text(json.dumps({"permissions": {"mode": mode}}))
    result, _ = run_json(tmp_path, demo)
    assert len(result["denials"]) == denied


def test_the_option_wins_over_the_settings_mode(tmp_path, demo):
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent/settings.json").write_text(
        json.dumps({"permissions": {"mode": "bypass"}}))
    result, _ = run_json(tmp_path, demo, "--permission-mode", "default")
    assert len(result["denials"]) == 2


def test_an_unknown_mode_names_the_choices(tmp_path):
    out = zpi(tmp_path, "run", "--permission-mode", "trust", "--model", SCRIPT, "go")
    assert out.returncode == 2
    assert "acceptEdits" in out.stderr and "bypassPermissions" in out.stderr
