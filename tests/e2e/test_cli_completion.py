"""``zpi-host completion bash|zsh|fish``: the scripts load in the real shells and complete
commands, options, choices, the directory's saved sessions and the catalog's models."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.e2e.test_cli_terminal import EXE, environment, script


def shell_env(tmp_path: Path) -> dict[str, str]:
    env = environment(tmp_path)
    env["PATH"] = f"{Path(EXE).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def completion_script(tmp_path: Path, shell: str) -> Path:
    out = subprocess.run([EXE, "completion", shell], capture_output=True, text=True,
                         cwd=tmp_path, env=shell_env(tmp_path), timeout=60)
    assert out.returncode == 0, out.stderr
    path = tmp_path / f"completion.{shell}"
    path.write_text(out.stdout)
    return path


def saved_session(tmp_path: Path) -> str:
    out = subprocess.run([EXE, "run", "--output-format", "json", "--model",
                          script(tmp_path, {"text": "ok"}), "hello"], capture_output=True,
                         text=True, cwd=tmp_path, env=shell_env(tmp_path), timeout=60,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    return str(re.search(r'"session_id": "([0-9a-f-]{36})"', out.stdout).group(1))


def bash_completes(tmp_path: Path, path: Path, *lines: str) -> list[list[str]]:
    """What bash offers at the end of each command line (COMP_LINE, COMP_WORDS as bash
    sets them), after sourcing the script."""
    calls = "".join(
        f'COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}; read -r -a COMP_WORDS <<< '
        f'"$COMP_LINE"; COMP_CWORD=${{#COMP_WORDS[@]}}; _zpi_host; '
        'printf "%s\\n" "${COMPREPLY[*]}"; ' for line in lines)
    out = subprocess.run(["bash", "-c", f"source {path}; complete -p zpi-host; {calls}"],
                         capture_output=True, text=True, cwd=tmp_path,
                         env=shell_env(tmp_path), timeout=60)
    assert out.returncode == 0, out.stderr
    first, *rest = out.stdout.splitlines()
    assert first == "complete -o default -F _zpi_host zpi-host"
    return [line.split() for line in rest]


def test_the_bash_script_loads_and_completes(tmp_path: Path) -> None:
    session_id = saved_session(tmp_path)
    path = completion_script(tmp_path, "bash")
    (commands, options, choices, sessions, models, colon, nested, shells) = bash_completes(
        tmp_path, path, "zpi-host ", "zpi-host run --ver", "zpi-host run --permission-mode a",
        "zpi-host run -r ", "zpi-host chat --model son", "zpi-host run --model anthropic:cl",
        "zpi-host sessions l", "zpi-host completion ")
    assert {"run", "chat", "sessions", "models", "completion", "--list-plugins"} <= set(
        commands)
    assert options == ["--verbose"]
    assert choices == ["acceptEdits", "ask"]
    assert sessions == [session_id]
    assert "sonnet" in models
    # bash splits words at ':': what follows the colon is offered
    assert colon and all(m.startswith("claude") for m in colon)
    assert nested == ["list"]
    assert shells[-3:] == ["bash", "zsh", "fish"]


def test_values_never_fail_loudly(tmp_path: Path) -> None:
    (tmp_path / ".zpi").mkdir()
    (tmp_path / ".zpi/settings.json").write_text("{broken")
    out = subprocess.run([EXE, "completion", "--values", "models"], capture_output=True,
                         text=True, cwd=tmp_path, env=shell_env(tmp_path), timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_the_zsh_script_loads_in_zsh_and_offers_models(tmp_path: Path) -> None:
    path = completion_script(tmp_path, "zsh")
    code = ("autoload -U compinit; compinit -u -D; source " + str(path) + "; "
            "print -r -- $_comps[zpi-host]; "
            # outside a completion widget: compadd stubbed to print what it would offer
            "compadd() { [[ $1 == -a ]] && print -l -- ${(P)2}; }; "
            "words=(zpi-host run --model ''); CURRENT=4; _zpi_host; "
            "words=(zpi-host sessions ''); CURRENT=3; _zpi_host")
    out = subprocess.run(["zsh", "-f", "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env=shell_env(tmp_path), timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "_zpi_host"
    assert "sonnet" in lines and "list" in lines and "fork" in lines


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_the_fish_script_loads_in_fish_and_completes(tmp_path: Path) -> None:
    session_id = saved_session(tmp_path)
    path = completion_script(tmp_path, "fish")
    code = (f"source {path}; complete -C 'zpi-host run --verb'; "
            "complete -C 'zpi-host run --resume '; complete -C 'zpi-host sessions '")
    out = subprocess.run(["fish", "--no-config", "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env=shell_env(tmp_path), timeout=60)
    assert out.returncode == 0, out.stderr
    offered = [line.split("\t")[0] for line in out.stdout.splitlines()]
    assert "--verbose" in offered and session_id in offered and "list" in offered


@pytest.mark.parametrize("command", [(), ("run",), ("chat",), ("prompt",), ("sessions",),
                                     ("models",), ("mcp",), ("completion",)])
def test_every_command_has_examples_in_its_help(tmp_path: Path, command: tuple[str, ...]):
    out = subprocess.run([EXE, *command, "--help"], capture_output=True, text=True,
                         cwd=tmp_path, env=shell_env(tmp_path), timeout=60)
    assert out.returncode == 0, out.stderr
    examples = out.stdout.split("examples:\n", 1)[1].splitlines()
    assert examples[0].startswith("  zpi-host") or examples[0].startswith("  source")
    assert all("zpi-host" in line for line in examples[:2])
