"""Whole-process runs of the installed ``zpi-host`` console script."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXE = shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))


def zpi(*args: str, cwd: Path, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("ZPI_")}
    env.update(env_extra or {})
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=60)


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    shutil.copytree(REPO / "examples/demo/workspace", workspace)
    return workspace


SCRIPT = str(REPO / "examples/demo/script.jsonl")
#: what the demo passes (examples/demo/run.sh): its edit and its command run unasked
DEMO_PERMISSIONS = ("--permission-mode", "acceptEdits", "--allow", "bash(python3 greet.py)")


def test_text_output_runs_the_demo_for_real(demo):
    out = zpi("run", "--cwd", str(demo), "--model", f"scripted:{SCRIPT}", *DEMO_PERMISSIONS,
              "fix it", cwd=demo)
    assert out.returncode == 0, out.stderr
    assert "denied" not in out.stderr
    assert out.stdout.strip() == 'Fixed the typo in greet.py: it now prints "Hello, world!".'
    assert "• read(path=greet.py)" in out.stderr and "• bash(" in out.stderr
    assert '"Hello, "' in (demo / "greet.py").read_text()


def test_json_output(demo):
    out = zpi("run", "--output-format", "json", "--model", f"scripted:{SCRIPT}",
              *DEMO_PERMISSIONS, "fix it", cwd=demo)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["result"].startswith("Fixed the typo")
    assert (result["is_error"], result["num_turns"]) == (False, 4)
    assert result["usage"]["input_tokens"] == 812 + 905 + 1003 + 1050
    assert result["usage"]["output_tokens"] == 24 + 41 + 18 + 16
    assert result["total_cost_usd"] == 0.0 and isinstance(result["duration_ms"], int)
    assert len(result["session_id"]) == 36 and result["denials"] == []


def test_stream_json_ends_with_the_result(demo):
    out = zpi("run", "--output-format", "stream-json", "--model", f"scripted:{SCRIPT}",
              *DEMO_PERMISSIONS, "go", cwd=demo)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    types = [line["type"] for line in lines]
    assert types[0] == "run_start" and types[-1] == "result"
    assert types.count("tool_end") == 3 and types.count("turn_start") == 4
    bash_end = [e for e in lines if e["type"] == "tool_end"][-1]
    assert bash_end["result"]["content"][0]["text"].strip() == "Hello, world!"


def test_failed_run_exits_1(tmp_path):
    script = tmp_path / "s.jsonl"
    script.write_text('{"tool_calls": [{"name": "read", "arguments": {"path": "x"}}]}\n')
    out = zpi("run", "--model", f"scripted:{script}", "go", "--output-format", "json",
              cwd=tmp_path)
    assert out.returncode == 1
    result = json.loads(out.stdout)
    assert result["is_error"] and "has 1 turn(s)" in result["result"]


def test_max_turns_exits_1(demo):
    out = zpi("run", "--max-turns", "2", "--permission-mode", "acceptEdits", "--model",
              f"scripted:{SCRIPT}", "go", cwd=demo)
    assert out.returncode == 1 and "maximum of 2 turns" in out.stderr


def test_no_model_explains_how_to_choose_one(tmp_path):
    out = zpi("run", "hello", cwd=tmp_path)
    assert out.returncode == 2
    assert "no model chosen" in out.stderr and "scripted" in out.stderr


@pytest.mark.parametrize("args, message", [
    (["run", "--model", "nosuch:x", "hi"], "unknown model provider 'nosuch'"),
    (["run", "--model", "scripted", "hi"], "must look like PROVIDER:MODEL"),
    (["run", "--model", "scripted:x", "--cwd", "/no/such/dir", "hi"], "does not exist"),
    (["-p", "zpi.tools", "--list-plugins"], "-p zpi.tools: cannot import the module"),
    (["-p", "not-a-module", "--list-plugins"], "expected no:NAME (block a plugin) or a module"),
])
def test_bad_usage_exits_2(tmp_path, args, message):
    out = zpi(*args, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr


def test_bad_script_line_names_file_and_line(tmp_path):
    script = tmp_path / "bad.jsonl"
    script.write_text('{"text": "ok"}\n{"text": \n')
    out = zpi("run", "--model", f"scripted:{script}", "go", cwd=tmp_path)
    assert out.returncode == 1
    assert f"{script}:2: invalid JSON" in out.stderr
    assert "Traceback" not in out.stderr


def test_blocking_the_tools_plugin_applies_to_run(demo):
    out = zpi("-p", "no:zpi.tools", "run", "--permission-mode", "bypassPermissions", "--model",
              f"scripted:{SCRIPT}", "go", "--output-format", "json", cwd=demo)
    result = json.loads(out.stdout)
    assert result["num_turns"] == 4  # every tool call came back as "unknown tool"
    assert "Helo" in (demo / "greet.py").read_text()


def test_version_lists_the_distributions(tmp_path):
    out = zpi("--version", cwd=tmp_path)
    assert out.returncode == 0
    assert out.stdout.splitlines() == [
        "zpi-host 0.1.0", "zpi-builtins 0.1.0", "zpi-compat-claude 0.1.0",
        "zpi-compat-zcode 0.1.0"]


def test_version_does_not_import_pluggy(tmp_path):
    code = ("import sys; from zpi_host.cli import main; main(['--version']); "
            "assert 'pluggy' not in sys.modules, 'pluggy imported'")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_listing_does_not_import_heavy_libraries(tmp_path):
    code = ("import sys; from zpi_host.cli import main; main(['--list-plugins', '--json']); "
            "heavy = [m for m in ('httpx', 'anyio', 'cattrs') if m in sys.modules]; "
            "assert not heavy, heavy")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_list_plugins_table_and_strict(tmp_path):
    site = tmp_path / "site"
    from zpi_host.testing import install_distribution

    dist = install_distribution(site, "broken-dist", modules={"broken_x": "import nope\n"},
                                entry_points={"zpi.plugins": {"broken": "broken_x"}})
    try:
        env = {"PYTHONPATH": str(site)}
        table = zpi("--list-plugins", cwd=tmp_path, env_extra=env)
        assert table.returncode == 0
        lines = table.stdout.splitlines()
        assert lines[0].split() == ["NAME", "SOURCE", "DISTRIBUTION", "STATUS", "HOOKS",
                                    "CONTRIBUTES"]
        tools_row = next(line for line in lines if line.startswith("zpi.tools"))
        assert "tools: bash, edit, read, write" in tools_row
        assert "failed: import of 'broken_x' failed: ModuleNotFoundError" in table.stdout
        strict = zpi("--list-plugins", "--strict", cwd=tmp_path, env_extra=env)
        assert strict.returncode == 1
        env_strict = zpi("--list-plugins", cwd=tmp_path,
                         env_extra={**env, "ZPI_STRICT_PLUGINS": "1"})
        assert env_strict.returncode == 1 and "plugin 'broken' failed to load" in \
            env_strict.stderr
        blocked = zpi("--list-plugins", "--json", "-p", "no:broken", cwd=tmp_path,
                      env_extra=env)
        row = next(r for r in json.loads(blocked.stdout) if r["name"] == "broken")
        assert row["status"] == "blocked"
    finally:
        dist.remove()


def test_the_strict_hints_name_both_switches_and_each_works(tmp_path):
    """A failed plugin is a warning that names how to make it an error; in strict mode the
    error says how to go on, true whichever switch turned strict mode on."""
    broken = tmp_path / "bad" / ".claude-plugin"
    broken.mkdir(parents=True)
    (broken / "plugin.json").write_text("{oops")
    script = tmp_path / "s.jsonl"
    script.write_text('{"text": "hi"}\n')
    run = ("run", "--model", f"scripted:{script}", "--plugin-dir", "bad", "go")
    env = {"ZPI_AGENT_DIR": str(tmp_path / "agent")}
    lenient = zpi(*run, cwd=tmp_path, env_extra=env)
    assert lenient.returncode == 0 and lenient.stdout.strip() == "hi"
    assert "--strict or ZPI_STRICT_PLUGINS=1 makes this an error" in lenient.stderr
    flag = zpi(*run[:1], "--strict", *run[1:], cwd=tmp_path, env_extra=env)
    variable = zpi(*run, cwd=tmp_path, env_extra={**env, "ZPI_STRICT_PLUGINS": "1"})
    for strict in (flag, variable):
        assert strict.returncode == 1 and strict.stdout == ""
        assert "plugin 'claude:bad' failed to load" in strict.stderr
        assert "--strict or ZPI_STRICT_PLUGINS=1 turns on: without it the host goes on" in \
            strict.stderr
        assert "-p no:claude:bad" in strict.stderr
    blocked = zpi(*run[:1], "--strict", "-p", "no:claude:bad", *run[1:], cwd=tmp_path,
                  env_extra=env)
    assert blocked.returncode == 0 and blocked.stdout.strip() == "hi"


def test_python_dash_m_is_the_same_command(tmp_path):
    out = subprocess.run([sys.executable, "-m", "zpi_host", "--list-plugins", "--json"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0
    providers = {"providers": ["anthropic", "openai", "openai-responses", "scripted"]}
    assert any(r["name"] == "zpi.models" and r["contributes"] == providers
               for r in json.loads(out.stdout))


def test_the_demo_script_leaves_the_users_zpi_alone(tmp_path):
    import os

    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZPI_")}
    env.update({"HOME": str(home), "PATH": f"{Path(EXE).parent}:{env.get('PATH', '')}"})
    out = subprocess.run(["bash", str(REPO / "examples/demo/run.sh")], capture_output=True,
                         text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "denied" not in out.stderr
    assert '"Hello, " + name' in out.stdout  # the file after the run: the edit was made
    assert not (home / ".zpi").exists()


#: ``zpi-host chat``'s answer when the extra ``chat`` (prompt-toolkit) is not installed
NEEDS_CHAT = "zpi-host chat needs prompt-toolkit: pip install 'zpi-host[chat]'"


@pytest.fixture
def without_prompt_toolkit(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import prompt_toolkit`` fails, as when it is not installed."""
    import os

    stub = tmp_path / "no_prompt_toolkit"
    stub.mkdir()
    (stub / "prompt_toolkit.py").write_text(
        "raise ImportError('No module named prompt_toolkit (test stub)')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZPI_")}
    env.update({"PYTHONPATH": str(stub), "HOME": str(tmp_path / "home"),
                "ZPI_AGENT_DIR": str(tmp_path / "agent"), "TERM": "xterm"})
    return env


def test_chat_without_prompt_toolkit_names_the_extra(tmp_path, without_prompt_toolkit):
    out = subprocess.run([EXE, "chat", "--model", f"scripted:{SCRIPT}"], capture_output=True,
                         text=True, cwd=tmp_path, env=without_prompt_toolkit, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert (out.returncode, out.stderr.strip()) == (1, NEEDS_CHAT)
    assert "Traceback" not in out.stderr and out.stdout == ""
    assert not (tmp_path / "agent").exists()  # no session was opened


def test_zpi_host_alone_on_a_terminal_without_prompt_toolkit(tmp_path, without_prompt_toolkit):
    from tests.helpers.terminal import Terminal

    term = Terminal([EXE], cwd=tmp_path, env=without_prompt_toolkit)
    term.read_until("pip install")
    assert term.finish() == 1
    assert NEEDS_CHAT in term.text and "Traceback" not in term.text


@pytest.mark.parametrize("args", [["--version"], ["run", "hi"], []])
def test_on_windows_the_first_command_says_posix_only(monkeypatch, capsys, args):
    from zpi_host.cli import EXIT_FAILED, main

    monkeypatch.setattr(sys, "platform", "win32")
    assert main(args) == EXIT_FAILED == 1
    out = capsys.readouterr()
    assert out.err == "zpi-host supports POSIX systems (Linux, macOS); on Windows use WSL\n"
    assert out.out == ""


def test_on_windows_import_works_and_the_command_says_posix_only(tmp_path):
    code = ("import sys; sys.platform = 'win32'\n"
            "import zpi_host, zpi_host.cli\n"
            "sys.exit(zpi_host.cli.main(['run', 'hi']))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr == "zpi-host supports POSIX systems (Linux, macOS); on Windows use WSL\n"
