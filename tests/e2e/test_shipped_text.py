"""Text from files a repository ships reaches the terminal made safe (issue 28): a settings
key, a model name, a command name or ``AGENTS.md`` holding escape sequences prints them
visibly (``^[``, ``^G``) in ``models``, ``--list-plugins`` and ``prompt``, and in every
warning on stderr. Each command runs on a real pseudo-terminal (the text is made safe only
there: a pipe gets it exactly)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.helpers.cli import EXE
from tests.helpers.terminal import Terminal

#: what a hostile file holds: retitle the window, clear the screen, ring the bell
TITLE, CLEAR = "\x1b]0;pwned\x07", "\x1b[2J"


def _environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ZPI_", "OPENAI_", "ANTHROPIC_"))}
    env.update({"HOME": str(tmp_path / "home"), "ZPI_AGENT_DIR": str(tmp_path / "agent"),
                "TERM": "xterm-256color"})
    return env


def _on_terminal(tmp_path: Path, project: Path, *args: str) -> str:
    terminal = Terminal([EXE, *args], cwd=project, env=_environment(tmp_path), columns=400)
    code = terminal.finish()
    assert code == 0, terminal.output
    out = terminal.output
    assert "Traceback" not in out
    for raw in (TITLE, CLEAR, "\x07"):
        assert raw not in out, out
    return out


def _project(tmp_path: Path, **files: object) -> Path:
    project = tmp_path / "project"
    (project / ".zpi").mkdir(parents=True)
    for name, data in files.items():
        (project / ".zpi" / f"{name}.json").write_text(json.dumps(data))
    return project


def test_models_shows_model_names_and_settings_keys_escaped(tmp_path):
    project = _project(
        tmp_path,
        settings={"models": {f"evil{CLEAR}name": {"provider": "openai",
                                                   "model": f"m{TITLE}x"}}},
        **{"settings.local": {"models": {f"bad{TITLE}": 5}}})
    out = _on_terminal(tmp_path, project, "models")
    assert "evil^[[2Jname" in out and "m^[]0;pwned^Gx" in out  # the table, on stdout
    assert "got an object with keys bad^[]0;pwned^G" in out  # the warning, on stderr


def test_list_plugins_shows_command_names_escaped(tmp_path):
    project = _project(tmp_path, **{"settings.local": {"models": {f"bad{TITLE}": 5}}})
    commands = project / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / f"cmd{TITLE}.md").write_text("hi\n")
    out = _on_terminal(tmp_path, project, "--list-plugins")
    assert "claude:project" in out
    assert "cmd^[]0;pwned^G.md: command name" in out  # a problem of the command, in the table
    assert "keys bad^[]0;pwned^G" in out  # the settings warning


def test_prompt_shows_agents_md_escaped(tmp_path):
    project = _project(tmp_path)
    (project / "AGENTS.md").write_text(f"Be careful.{TITLE}{CLEAR}\x1b[1A\rDone.\n")
    script = tmp_path / "script.jsonl"
    script.write_text('{"text": "unused"}\n')
    out = _on_terminal(tmp_path, project, "prompt", "--model", f"scripted:{script}")
    assert "Be careful.^[]0;pwned^G^[[2J^[[1A^MDone." in out
