"""Files a repository ships are hostile (issue 28): a ``.gitignore`` linked to ``/dev/zero``,
a FIFO ``.ignore`` or ``.zpi/settings.json``, an ``AGENTS.md`` linked out of the project or
too large. Each run is a real ``zpi-host`` process with a timeout, so a hang fails the test
instead of blocking it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.helpers.cli import EXE, clean_environment, zpi
from tests.helpers.host_process import tool_results


def _script(tmp_path: Path, *turns: dict) -> str:
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return f"scripted:{path}"


def _results(tmp_path: Path) -> list[str]:
    [transcript] = (tmp_path / "agent" / "sessions").rglob("*.jsonl")
    return ["".join(c.text for c in m.content) for m in tool_results(transcript).values()]


def _choose_engine(tmp_path: Path, ripgrep: str) -> None:
    """``auto``: ripgrep when ``rg`` is on PATH (grep then checks the ignore files before
    ripgrep would read them); ``off``: the Python engine."""
    (tmp_path / "agent").mkdir(exist_ok=True)
    (tmp_path / "agent" / "settings.json").write_text(json.dumps(
        {"plugins": {"builtins": {"search": {"ripgrep": ripgrep}}}}))


def _search_run(tmp_path: Path, *extra: str, ripgrep: str) -> list[str]:
    _choose_engine(tmp_path, ripgrep)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("needle = 1\n")
    model = _script(tmp_path,
                    {"tool_calls": [{"name": "glob", "arguments": {"pattern": "**/*.py"}},
                                    {"name": "grep", "arguments": {"pattern": "needle",
                                                                  "path": "src"}}]},
                    {"text": "done"})
    out = zpi(tmp_path, "run", "--model", model, "--output-format", "json", *extra, "find it")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert json.loads(out.stdout)["result"] == "done"
    return _results(tmp_path)


ENGINES = pytest.mark.parametrize("ripgrep", ["auto", "off"])


@ENGINES
def test_a_gitignore_linked_to_dev_zero_is_reported_and_the_search_finishes(tmp_path, ripgrep):
    os.symlink("/dev/zero", tmp_path / ".gitignore")
    listed, grepped = _search_run(tmp_path, "--permission-mode", "plan", ripgrep=ripgrep)
    assert listed.startswith("src/a.py\n") and grepped.startswith("Found 1 file(s)\nsrc/a.py")
    for text in (listed, grepped):
        assert text.count("[ignore file not used: ") == 1, text
        assert f"{tmp_path}/.gitignore: it is a symlink to /dev/zero, outside {tmp_path}" in text


@ENGINES
def test_a_fifo_ignore_file_hangs_neither_glob_nor_grep(tmp_path, ripgrep):
    os.mkfifo(tmp_path / ".ignore")
    listed, grepped = _search_run(tmp_path, ripgrep=ripgrep)
    assert listed.startswith("src/a.py\n") and grepped.startswith("Found 1 file(s)\nsrc/a.py")
    for text in (listed, grepped):
        assert f"{tmp_path}/.ignore: it is a FIFO (named pipe), not a regular file" in text


def _settings_run(tmp_path: Path) -> str:
    out = zpi(tmp_path, "run", "--model", _script(tmp_path, {"text": "fine"}), "hi")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "fine" and "Traceback" not in out.stderr
    return out.stderr


def test_project_settings_linked_to_dev_zero_are_a_broken_settings_file(tmp_path):
    (tmp_path / ".zpi").mkdir()
    os.symlink("/dev/zero", tmp_path / ".zpi" / "settings.json")
    err = _settings_run(tmp_path)
    assert (f"warning: {tmp_path}/.zpi/settings.json: it is a symlink to /dev/zero, outside "
            f"{tmp_path}; the file was ignored and left unchanged") in err
    assert os.readlink(tmp_path / ".zpi" / "settings.json") == "/dev/zero"


def test_user_settings_that_are_a_device_are_refused_too(tmp_path):
    (tmp_path / "agent").mkdir()
    os.symlink("/dev/zero", tmp_path / "agent" / "settings.json")
    err = _settings_run(tmp_path)
    assert (f"{tmp_path}/agent/settings.json: it is a character device (it links to "
            "/dev/zero), not a regular file") in err


def test_a_fifo_settings_file_does_not_hang_start_up(tmp_path):
    (tmp_path / ".zpi").mkdir()
    os.mkfifo(tmp_path / ".zpi" / "settings.json")
    err = _settings_run(tmp_path)
    assert f"{tmp_path}/.zpi/settings.json: it is a FIFO (named pipe), not a regular file" in err


def _prompt(tmp_path: Path, cwd: Path) -> tuple[str, str]:
    """``zpi-host prompt`` in ``cwd`` (the project): its system prompt and its warnings."""
    model = _script(tmp_path, {"text": "unused"})
    out = subprocess.run([EXE, "prompt", "--model", model], capture_output=True, text=True,
                         cwd=cwd,
                         env=clean_environment(tmp_path), timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    return out.stdout, out.stderr


def test_a_context_file_linked_out_of_the_project_is_not_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("THE USER'S PRIVATE NOTES\n")
    project = tmp_path / "project"
    project.mkdir()
    os.symlink(secret, project / "AGENTS.md")
    os.symlink(secret, project / "CLAUDE.md")
    prompt, err = _prompt(tmp_path, project)
    assert "PRIVATE NOTES" not in prompt
    assert f"{project}/AGENTS.md: it is a symlink to {secret}, outside {project}" in err


def test_a_context_file_linked_inside_the_project_is_read(tmp_path):
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "agents.md").write_text("Run the linter first.\n")
    os.symlink("docs/agents.md", project / "AGENTS.md")
    prompt, err = _prompt(tmp_path, project)
    assert "Run the linter first." in prompt, err


def test_an_oversized_agents_md_is_refused_whole(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "AGENTS.md").write_text("START OF IT\n" + "x" * (5 * 1024 * 1024))
    prompt, err = _prompt(tmp_path, project)
    assert "START OF IT" not in prompt
    assert (f"{project}/AGENTS.md: it is {5 * 1024 * 1024 + 12} bytes, more than the 4 MiB a "
            "context file may have") in err
