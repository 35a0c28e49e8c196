"""``zpi-host run --mcp-config`` with the test MCP server (tests/helpers/mcp_servers.py) as a
real subprocess, and ``zpi-host mcp list``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from helpers.cli import zpi
from helpers.mcp_servers import SERVER_FILE

SERVER = {"command": sys.executable, "args": [str(SERVER_FILE)]}


def script(tmp_path: Path, *turns: dict | str) -> str:
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps(turn) + "\n" for turn in turns))
    return f"scripted:{path}"


def run_add(tmp_path: Path, *allow: str) -> dict:
    model = script(tmp_path, {"tool_calls": [{"name": "mcp__srv__add",
                                              "arguments": {"a": 20, "b": 22}}]},
                   {"text": "done"})
    rules = [arg for rule in allow for arg in ("--allow", rule)]
    out = zpi(tmp_path, "run", "--model", model, "--output-format", "json", *rules,
              "--mcp-config", json.dumps({"mcpServers": {"srv": SERVER}}), "add them")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    return json.loads(out.stdout)


def test_run_with_mcp_config_json_calls_the_servers_tool_under_permission_rules(tmp_path):
    # a tool with side effects is asked about, and a run cannot ask: denied
    (denial,) = run_add(tmp_path)["denials"]
    assert denial["tool"] == "mcp__srv__add" and "--allow mcp__srv__add" in denial["reason"]
    # each of Claude Code's spellings allows it: the tool, the server's wildcard, the server
    for rule in ("mcp__srv__add", "mcp__srv__*", "mcp__srv"):
        result = run_add(tmp_path, rule)
        assert result["result"] == "done" and result["denials"] == [], rule
    assert run_add(tmp_path, "mcp__other")["denials"]


def test_mcp_config_files_and_bad_values(tmp_path):
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"from_file": SERVER}}))
    model = script(tmp_path, {"text": "ok"})
    out = zpi(tmp_path, "run", "--model", model, "--mcp-config", str(config),
              "--strict-mcp-config", "hi")
    assert out.returncode == 0, out.stderr
    bad = zpi(tmp_path, "run", "--model", model, "--mcp-config", "{oops", "hi")
    assert bad.returncode != 0 and "--mcp-config: the JSON given is not valid" in bad.stderr
    assert "Traceback" not in bad.stderr
    missing = zpi(tmp_path, "run", "--model", model, "--mcp-config", "nope.json", "hi")
    assert missing.returncode != 0 and "--mcp-config: no file" in missing.stderr


def test_mcp_list_shows_each_server_its_source_status_and_tools_but_no_secret(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "shipped": SERVER, "broken": {"type": "http", "url": "nope"}}}))
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"mcpServers": {
        "mine": {**SERVER, "env": {"TOKEN": "secret-value-1234567"}}}}))
    out = zpi(tmp_path, "--cwd", str(project), "mcp", "list", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert rows["mine"]["status"] == "connected" and rows["mine"]["transport"] == "stdio"
    assert "mcp__mine__echo" in rows["mine"]["tools"]
    assert rows["shipped"]["status"] == "needs approval" and rows["shipped"]["tools"] == []
    assert rows["broken"]["status"] == "invalid" and ".mcp.json" in rows["broken"]["error"]
    assert "secret-value-1234567" not in out.stdout + out.stderr
    table = zpi(tmp_path, "--cwd", str(project), "mcp", "list")
    assert table.returncode == 0, table.stderr
    assert "SERVER" in table.stdout and "mcp__mine__echo" in table.stdout
    assert "secret-value-1234567" not in table.stdout + table.stderr


def test_a_published_server_from_pypi_runs_as_users_run_it(tmp_path):
    """``mcp-server-time`` (PyPI, installed by tox), started by its console script."""
    import shutil

    command = shutil.which("mcp-server-time") or str(Path(sys.executable).with_name(
        "mcp-server-time"))
    assert Path(command).is_file(), "mcp-server-time is a test dependency (tox.ini)"
    model = script(tmp_path, {"tool_calls": [{"name": "mcp__time__convert_time", "arguments": {
        "source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}}]},
                   {"text": "done"})
    server = {"command": command, "args": ["--local-timezone", "UTC"]}
    out = zpi(tmp_path, "run", "--model", model, "--output-format", "stream-json",
              "--allow", "mcp__time", "--mcp-config", json.dumps({"mcpServers": {"time": server}}),
              "what time is it in Tokyo?")
    assert out.returncode == 0, out.stderr
    (end,) = [e for e in map(json.loads, out.stdout.splitlines()) if e["type"] == "tool_end"]
    assert not end["result"]["is_error"]
    converted = json.loads(end["result"]["content"][0]["text"])
    assert converted["target"]["timezone"] == "Asia/Tokyo"
    assert converted["target"]["datetime"].endswith("T21:00:00+09:00")


def test_list_plugins_names_the_servers_without_starting_them(tmp_path):
    agent = tmp_path / "agent"
    agent.mkdir()
    marker = tmp_path / "started"
    starts = {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"],
              "env": {"TOKEN": "secret-value-7654321"}}
    (agent / "settings.json").write_text(json.dumps({"mcpServers": {"mine": starts}}))
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"shipped": SERVER}}))
    out = zpi(tmp_path, "--list-plugins", "--json")
    assert out.returncode == 0, out.stderr
    (row,) = [r for r in json.loads(out.stdout) if r["name"] == "builtins:mcp"]
    assert row["contributes"]["mcp servers"] == ["mine (user)",
                                                 "shipped (project, needs approval)"]
    assert not marker.exists() and "secret-value-7654321" not in out.stdout


def test_a_signal_during_a_call_stops_the_server_process_group(tmp_path):
    """SIGTERM while an MCP call runs: the run ends (143) and the server's group is gone."""
    import signal
    import subprocess
    import time

    from helpers.cli import EXE, clean_environment

    from zpi_host.support.process_groups import group_alive

    pidfile = tmp_path / "server.pid"
    server = {**SERVER, "env": {"MCP_TEST_PIDFILE": str(pidfile)}}
    model = script(tmp_path, {"tool_calls": [{"name": "mcp__srv__sleep",
                                              "arguments": {"seconds": 60}}]}, {"text": "x"})
    run = subprocess.Popen(
        [EXE, "run", "--model", model, "--allow", "mcp__srv", "--output-format", "stream-json",
         "--mcp-config", json.dumps({"mcpServers": {"srv": server}}), "sleep"],
        cwd=tmp_path, env=clean_environment(tmp_path), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        assert run.stdout is not None
        for line in run.stdout:  # the call has started: the server is up and busy
            if '"tool_start"' in line:
                break
        pid = int(pidfile.read_text())
        assert group_alive(pid)
        run.send_signal(signal.SIGTERM)
        assert run.wait(60) == 143
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    for _ in range(200):  # the group is reaped by the host's exit; its init may lag a little
        if not group_alive(pid):
            break
        time.sleep(0.05)
    assert not group_alive(pid), f"MCP server group {pid} survived the run"
    assert "Traceback" not in (run.stderr.read() if run.stderr else "")


#: where ``.ci/run`` installs the npm-published server (tox.ini passes it on)
NPM_SERVERS = Path(os.environ.get("ZPI_TEST_NPM_SERVERS")
                   or Path(__file__).resolve().parents[2] / ".mcp-npm")


def npm_filesystem_server() -> Path:
    """``mcp-server-filesystem`` of ``@modelcontextprotocol/server-filesystem`` as npm
    installed it, or a skip saying why it is not there."""
    import shutil

    command = NPM_SERVERS / "node_modules" / ".bin" / "mcp-server-filesystem"
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the npm-published MCP server cannot run "
                    "(.ci/run installs it when npm is there)")
    if not command.is_file():
        pytest.skip(f"@modelcontextprotocol/server-filesystem is not installed in "
                    f"{NPM_SERVERS} (.ci/run installs it with npm; or set "
                    "ZPI_TEST_NPM_SERVERS to a folder where `npm install --prefix` put it)")
    return command


def test_a_published_server_from_npm_runs_as_users_run_it(tmp_path):
    """``@modelcontextprotocol/server-filesystem`` (npm, pinned in .ci/run) over stdio, given
    the folder it may serve: a read-only tool runs unasked, a writing one needs a rule."""
    command = npm_filesystem_server()
    served = tmp_path / "served"
    served.mkdir()
    (served / "note.txt").write_text("hello from a file\n")
    config = json.dumps({"mcpServers": {"fs": {"command": str(command),
                                               "args": [str(served)]}}})
    read = {"name": "mcp__fs__read_text_file", "arguments": {"path": str(served / "note.txt")}}
    write = {"name": "mcp__fs__write_file", "arguments": {"path": str(served / "new.txt"),
                                                          "content": "written"}}

    def run(*extra: str) -> list[dict]:
        model = script(tmp_path, {"tool_calls": [read, write]}, {"text": "done"})
        out = zpi(tmp_path, "run", "--model", model, "--output-format", "stream-json",
                  *extra, "--mcp-config", config, "read and write")
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr
        return [e["result"] for e in map(json.loads, out.stdout.splitlines())
                if e["type"] == "tool_end"]

    (got, refused) = run()  # readOnlyHint: read unasked; write has side effects: denied
    assert not got["is_error"] and got["content"][0]["text"] == "hello from a file\n"
    assert refused["is_error"] and not (served / "new.txt").exists()
    (_, wrote) = run("--allow", "mcp__fs__write_file")
    assert not wrote["is_error"] and (served / "new.txt").read_text() == "written"
