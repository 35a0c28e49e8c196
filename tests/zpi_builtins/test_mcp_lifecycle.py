"""builtins:mcp over a session's life, with the test MCP server (tests/helpers/mcp_servers.py)
as a real subprocess: a server that dies while idle is ``failed`` without a call and can be
reconnected; a tool list that changes is reported and applies to the next session; servers
started for a session that never runs, or for an assembly that fails, are stopped."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import pytest
from helpers.builtins import builtins_settings, scripted_session
from helpers.mcp_servers import SERVER_FILE

from zpi_host.errors import UsageError
from zpi_host.support.process_groups import group_alive, process_alive

pytestmark = pytest.mark.anyio

QUIET = builtins_settings(title={"enabled": False})


def stdio(**env: str) -> dict:
    return {"command": sys.executable, "args": [str(SERVER_FILE)], "env": env}


def call(name: str, arguments: dict) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def texts(session) -> list[str]:
    return ["".join(getattr(c, "text", "") for c in m.content) for m in session.messages
            if m.role == "tool"]


async def until(check, what: str, tries: int = 400) -> None:
    """Wait (by polling, no clock asserted) until ``check()`` holds."""
    for _ in range(tries):
        if check():
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"never happened: {what}")


async def gone(pid: int) -> bool:
    for _ in range(200):  # the SDK's shutdown terminates the group; reaping may lag a little
        if not process_alive(pid) and not group_alive(pid):
            return True
        await asyncio.sleep(0.025)
    return False


def status_of(session, name: str) -> dict:
    return next(e for e in session.ports.mcp.statuses() if e["name"] == name)


async def test_a_server_that_dies_while_idle_is_failed_at_once_and_reconnects(
        zpi_env, tmp_path):
    session = await scripted_session(
        tmp_path, [call("mcp__srv__pid", {}), "first", call("mcp__srv__echo", {"text": "b"}),
                   "second"], settings=QUIET, mcp_servers={"srv": stdio()},
        permission_mode="bypass")
    try:
        await session.run("go")
        pid = int(texts(session)[0])
        assert status_of(session, "srv")["status"] == "connected"
        os.killpg(pid, signal.SIGKILL)  # dies between runs: nobody calls it
        await until(lambda: status_of(session, "srv")["status"] == "failed",
                    "the dead server is reported failed")
        entry = status_of(session, "srv")
        assert "closed the connection" in entry["error"] and "tools" not in entry
        assert any("MCP server 'srv'" in w and "failed" in w for w in session.warnings)
        assert await gone(pid)
        again = await session.ports.mcp.reconnect("srv")
        assert again["status"] == "connected"
        await session.run("again")
        assert texts(session)[-1] == "echo: b"
    finally:
        await session.dispose()


async def test_a_changed_tool_list_is_reported_and_only_the_next_session_gets_it(
        zpi_env, tmp_path):
    marker = tmp_path / "grown"
    servers = {"srv": stdio(MCP_TEST_GROWN=str(marker))}
    session = await scripted_session(
        tmp_path, [call("mcp__srv__grow", {}), call("mcp__srv__extra", {}), "done"],
        settings=QUIET, mcp_servers=servers, permission_mode="bypass")
    try:
        await session.run("go")
        await until(lambda: "toolListChanged" in status_of(session, "srv"),
                    "the list change is in the status")
        entry = status_of(session, "srv")
        assert "extra" in entry["toolListChanged"] and entry["status"] == "connected"
        assert "extra" not in [t["name"] for t in entry["tools"]]  # the snapshot stays
        assert "mcp__srv__extra" not in session.tools
        grown, unknown = texts(session)
        assert grown == "grown" and "mcp__srv__extra" in unknown  # not a tool of this session
        assert any("changed its tools" in w and "next session" in w
                   for w in session.warnings)
    finally:
        await session.dispose()
    following = await scripted_session(tmp_path, ["done"], settings=QUIET,
                                       mcp_servers=servers, permission_mode="bypass")
    try:
        assert "mcp__srv__extra" in following.tools
    finally:
        await following.dispose()


async def test_servers_of_a_session_that_never_runs_are_stopped_at_dispose(zpi_env, tmp_path):
    pidfile = tmp_path / "pid"
    session = await scripted_session(tmp_path, ["never"], settings=QUIET,
                                     mcp_servers={"srv": stdio(MCP_TEST_PIDFILE=str(pidfile))},
                                     permission_mode="bypass")
    pid = int(pidfile.read_text())
    assert process_alive(pid) and "mcp__srv__echo" in session.tools
    await session.dispose()
    assert await gone(pid)


async def test_servers_started_by_an_assembly_that_fails_are_stopped(zpi_env, tmp_path):
    pidfiles = [tmp_path / f"pid{i}" for i in range(2)]
    servers = {f"s{i}": stdio(MCP_TEST_PIDFILE=str(p)) for i, p in enumerate(pidfiles)}
    # the tools were collected (the servers started), then the options fail the assembly
    with pytest.raises(UsageError, match="exclude_tools"):
        await scripted_session(tmp_path, ["never"], settings=QUIET, mcp_servers=servers,
                               exclude_tools=["no_such_tool"])
    pids = [int(p.read_text()) for p in pidfiles]
    for pid in pids:
        assert await gone(pid), pid
