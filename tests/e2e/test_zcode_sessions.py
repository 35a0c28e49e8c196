"""ZCode folders, config-file hooks and commands end to end: ``zpi-host run`` as a subprocess
against the loopback model server, checking what the model received and what the hooks saw."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.zcode import copy_plugin, personal_folders, user_config, workspace_config

from zpi_builtins.title import SYSTEM as TITLE_SYSTEM
from zpi_host.testing import ModelServer

EXE = shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("ZPI_", "CLAUDE_", "ZCODE_")) and k != "OPENAI_API_KEY"}
    return {**base, "HOME": str(home), "ZPI_AGENT_DIR": str(tmp_path / "agent"),
            "OPENAI_API_KEY": "sk-loopback"}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def zpi(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=90)


def run(server: ModelServer, *args: str, cwd: Path, env: dict[str, str]
        ) -> subprocess.CompletedProcess[str]:
    return zpi("run", "--model", "openai:gpt-test", "--base-url", server.base_url,
               "--output-format", "json", *args, cwd=cwd, env=env)


def bash(command: str) -> dict:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


def sent(server: ModelServer) -> list[str]:
    """What the model was sent, request by request, as JSON text (not the title request
    ``builtins:title`` sends after the run)."""
    return [json.dumps(request.json["messages"]) for request in server.requests
            if TITLE_SYSTEM not in json.dumps(request.json)]


def seen(env: dict[str, str]) -> list[dict]:
    path = Path(env["ZPI_AGENT_DIR"]) / "plugin-data" / "zcode" / "hooks-zc" / "seen.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_zcode_hook_folder_through_plugin_dir(tmp_path, env, work):
    folder = copy_plugin("hooks-zc", tmp_path / "plugins")
    turns = [bash("rm -rf build"), bash("echo hello"), "first", "second", "third", "fourth",
             "never"]
    with ModelServer(turns) as server:
        out = run(server, "--plugin-dir", str(folder), "go", cwd=work, env=env)
        messages = sent(server)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert (result["result"], result["num_turns"]) == ("fourth", 6)
    assert [d["tool"] for d in result["denials"]] == ["bash"]
    first = messages[0]
    assert "zc-start: the codename is KESTREL" in first and "zc-prompt: answer briefly" in first
    assert "plain-start-output" not in "".join(messages)  # non-JSON stdout: diagnostics only
    assert "zc-guard: rm -rf is not allowed" in messages[1]
    assert "hello" in messages[2] and "zc-post: output checked" in messages[2]
    assert "REPLACED BY HOOK" not in "".join(messages)
    assert messages[3].count("zc-stop: keep going") == 1 and len(messages) == 6
    assert "cannot replace a tool's output" in out.stderr
    assert "at most 3 consecutive continuations" in out.stderr
    records = seen(env)
    assert {r["input"]["sessionId"] for r in records} == {result["session_id"]}
    assert [r["input"]["stop_hook_active"] for r in records if r["event"] == "Stop"] == [
        False, True, True, True]
    start = records[0]
    assert start["env"]["ZCODE_PROJECT_DIR"] == start["env"]["CLAUDE_PROJECT_DIR"] == str(work)
    assert start["env"]["ZCODE_PLUGIN_NAME"] == "hooks-zc"
    assert Path(start["env"]["ZCODE_PLUGIN_ROOT"]).is_relative_to(env["ZPI_AGENT_DIR"])


def test_config_file_hooks_and_personal_commands(tmp_path, env, work):
    home = Path(env["HOME"])
    user_config(home, "user-config.json")
    workspace_config(work, "workspace-config.json")
    personal_folders(home, work)
    with ModelServer([bash("echo x"), "done"]) as server:
        out = run(server, "--trust-project", "--allow", "bash", "/a:b the release", cwd=work,
                  env=env)
        messages = sent(server)
    assert out.returncode == 0, out.stderr
    assert "Run b with the release" in messages[0]  # ~/.zcode/commands/a/b.md
    assert "workspace-config: tests live in tests/" in messages[0]
    assert "user-config: xxx" not in "".join(messages)  # cut at maxOutputBytes: invalid JSON
    assert "over the capture limit" in out.stderr
    assert (work / "order.log").read_text().split() == ["user-config", "workspace-config"]


def test_a_claude_manifest_forced_to_zcode_runs_its_command(tmp_path, env, work):
    folder = copy_plugin("legacy-kit", tmp_path / "plugins")
    with ModelServer(["checked"]) as server:
        out = run(server, "--zcode-plugin-dir", str(folder), "/legacy.kit:check the parser",
                  cwd=work, env=env)
        messages = sent(server)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"] == "checked"
    assert "Check the parser" in messages[0]


def test_list_plugins_shows_zcode_folders_config_and_failures(tmp_path, env, work):
    home = Path(env["HOME"])
    user = user_config(home, "user-config.json")
    plugins = tmp_path / "plugins"
    kit, dual, legacy, bad = (copy_plugin(name, plugins) for name in (
        "zc-kit", "dual", "legacy-kit", "bad-name"))
    out = zpi("--list-plugins", "--json", "--plugin-dir", str(kit), "--plugin-dir", str(dual),
              "--plugin-dir", str(bad), "--zcode-plugin-dir", str(legacy), cwd=work, env=env)
    assert out.returncode == 0, out.stderr
    found = {row["name"]: row for row in json.loads(out.stdout)}
    assert found["zcode:zc.kit_1"]["version"] == "0.0.0"
    assert found["zcode:dual-zc"]["source"] == "zcode" and "claude:dual-claude" not in found
    assert found["zcode:legacy.kit"]["contributes"]["commands"] == ["legacy.kit:check"]
    assert found["zcode:Bad Name!"]["status"] == "failed"
    assert "must be lowercase letters" in found["zcode:Bad Name!"]["error"]
    assert found["zcode:config"]["contributes"]["files"] == [str(user)]
    table = zpi("--list-plugins", "--plugin-dir", str(kit), cwd=work, env=env)
    assert "zcode:zc.kit_1" in table.stdout and "zcode:config" in table.stdout


def test_listing_zcode_plugins_stays_light(tmp_path, env, work):
    """``--list-plugins`` with ZCode folders and config hooks imports no httpx, anyio, cattrs."""
    user_config(Path(env["HOME"]), "user-config.json")
    kit = copy_plugin("hooks-zc", tmp_path / "plugins")
    code = ("import sys, io, contextlib\nfrom zpi_host.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    main(['--list-plugins', '--plugin-dir', {str(kit)!r}])\n"
            "print(sorted(m for m in ('httpx', 'anyio', 'cattrs') if m in sys.modules))\n"
            "print('zpi_compat_zcode.config_hooks' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=work, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "True"]
