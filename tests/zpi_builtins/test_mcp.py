"""builtins:mcp with real MCP servers as subprocesses (tests/helpers/mcp_servers.py, written
with the mcp package's server API): stdio, streamable HTTP and SSE on loopback; config
sources, precedence, approval, trust, bad input, process clean-up."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest
from helpers.builtins import builtins_settings, scripted_session
from helpers.mcp_servers import SERVER_FILE

from zpi_builtins.mcp_config import McpConfigError, configured_servers, expand, parse_entry
from zpi_host.settings.mcp_sources import MCP_SOURCES
from zpi_host.support.process_groups import group_alive

pytestmark = pytest.mark.anyio

QUIET = {"title": {"enabled": False}}


def stdio(**extra) -> dict:
    return {"command": sys.executable, "args": [str(SERVER_FILE)], **extra}


def tool_results(session) -> list[tuple[str, bool]]:
    return [("".join(getattr(c, "text", "") for c in m.content), m.is_error)
            for m in session.messages if m.role == "tool"]


def call(name: str, arguments: dict) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def run_with(tmp_path, servers: dict, *calls: dict, settings=None, **options):
    session = await scripted_session(
        tmp_path, [*calls, "done"], settings=settings or builtins_settings(**QUIET),
        mcp_servers=servers, permission_mode="bypass", **options)
    try:
        await session.run("go")
    finally:
        await session.dispose()
    return session


# --------------------------------------------------------------------------- config


def test_variables_expand_with_defaults_and_an_unset_one_is_an_error():
    env = {"HOST": "example.com"}
    assert expand("https://${HOST}/${PATH_PART:-mcp}", env, "x") == "https://example.com/mcp"
    with pytest.raises(McpConfigError, match="TOKEN is not set"):
        expand("Bearer ${TOKEN}", env, "file: MCP server 'a'")


@pytest.mark.parametrize(("raw", "why"), [
    ({"type": "websocket", "url": "ws://x"}, "unknown type 'websocket'"),
    ({"args": ["x"]}, "\"command\" must be the program"),
    ({"type": "http", "url": "not a url"}, "is not an http"),
    ({"command": "x", "args": "not a list"}, "must be a list of strings"),
    ({"command": "x", "env": {"A": 1}}, "must be an object of string values"),
    ("just a string", "must be an object"),
])
def test_a_malformed_entry_names_the_file_and_the_entry(raw, why):
    with pytest.raises(McpConfigError) as caught:
        parse_entry("srv", raw, scope="project", origin="/p/.mcp.json", environ={})
    assert why in str(caught.value)
    assert "/p/.mcp.json: MCP server 'srv'" in str(caught.value)


def test_a_bad_entry_does_not_stop_the_others_and_later_sources_win():
    settings = {MCP_SOURCES: {"sources": [
        {"scope": "user", "origin": "user.json", "servers": {
            "a": {"command": "user-a"}, "bad": {"type": "nope"}}},
        {"scope": "local", "origin": "local.json", "servers": {"a": {"command": "local-a"}}},
    ], "approval": {}}}
    found = {c.name: c for c in configured_servers(settings, {})}
    assert found["a"].command == "local-a" and found["a"].status == "pending"
    assert found["bad"].status == "invalid" and "user.json" in found["bad"].error


# --------------------------------------------------------------------------- stdio


async def test_stdio_server_tools_run_through_the_session(zpi_env, tmp_path):
    session = await run_with(
        tmp_path, {"srv": stdio()},
        call("mcp__srv__echo", {"text": "hi"}), call("mcp__srv__add", {"a": 2, "b": 3}),
        call("mcp__srv__fail", {}), call("mcp__srv__image", {}))
    assert {"mcp__srv__echo", "mcp__srv__add", "mcp__srv__big"} <= set(session.tools)
    echo, add = session.tools["mcp__srv__echo"], session.tools["mcp__srv__add"]
    assert echo.metadata.read_only and not add.metadata.read_only and add.metadata.side_effects
    assert add.parameters["properties"]["a"]["type"] == "integer"
    (echoed, e1), (added, e2), (failed, e3), (_, e4) = tool_results(session)
    assert echoed == "echo: hi" and not e1
    assert added == "5" and not e2
    assert e3 and "Error executing tool fail" in failed
    image = [m for m in session.messages if m.role == "tool"][-1].content
    assert not e4 and image[0].type == "image" and image[0].mime_type == "image/png"


async def test_dispose_stops_the_server_process_group(zpi_env, tmp_path):
    from zpi_host.support.process_groups import process_alive

    session = await run_with(tmp_path, {"srv": stdio()}, call("mcp__srv__pid", {}))
    ((pid, error),) = tool_results(session)
    assert not error and int(pid) > 0
    for _ in range(100):  # the SDK's shutdown terminates the group; reaping may lag a little
        if not process_alive(int(pid)) and not group_alive(int(pid)):
            break
        time.sleep(0.05)
    assert not process_alive(int(pid)) and not group_alive(int(pid))


async def test_a_server_that_dies_fails_its_calls_and_the_session_goes_on(zpi_env, tmp_path):
    session = await run_with(tmp_path, {"srv": stdio()}, call("mcp__srv__crash", {}),
                             call("mcp__srv__echo", {"text": "again"}))
    (_, crashed), (after, failed) = tool_results(session)
    assert crashed and failed
    assert "MCP server 'srv'" in after


async def test_garbage_a_hang_and_a_missing_program_cost_one_server_each(
        zpi_env, tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_TIMEOUT", "3000")
    servers = {"garbage": stdio(env={"MCP_TEST_GARBAGE": "1"}),
               "hang": stdio(env={"MCP_TEST_HANG": "1"}),
               "missing": {"command": str(tmp_path / "no-such-program")},
               "bad": {"type": "http"},
               "good": stdio()}
    session = await run_with(tmp_path, servers, call("mcp__garbage__echo", {"text": "g"}),
                             call("mcp__good__echo", {"text": "ok"}))
    (garbage, e1), (good, e2) = tool_results(session)
    assert not e1 and garbage == "echo: g"  # a stray line on stdout is skipped
    assert not e2 and good == "echo: ok"
    assert not any(name.startswith(("mcp__hang__", "mcp__missing__")) for name in session.tools)
    warnings = "\n".join(session.warnings)
    assert "MCP server 'hang'" in warnings and "did not start within 3 s" in warnings
    assert "MCP server 'missing'" in warnings and "failed" in warnings
    assert "MCP server 'bad'" in warnings and "invalid" in warnings


async def test_a_call_past_the_tool_timeout_fails_alone(zpi_env, tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_TOOL_TIMEOUT", "500")
    session = await run_with(tmp_path, {"srv": stdio()}, call("mcp__srv__sleep",
                                                              {"seconds": 30}),
                             call("mcp__srv__echo", {"text": "still here"}))
    (slow, e1), (echoed, e2) = tool_results(session)
    assert e1 and "did not answer sleep within 0.5 s" in slow
    assert not e2 and echoed == "echo: still here"


async def test_a_result_over_the_limit_is_cut(zpi_env, tmp_path):
    session = await run_with(tmp_path, {"srv": stdio()}, call("mcp__srv__big", {"n": 5000}),
                             settings=builtins_settings(mcp={"max_result_chars": 1000},
                                                        **QUIET))
    ((text, error),) = tool_results(session)
    assert not error and text.startswith("x" * 1000) and "x" * 1001 not in text
    assert "over 1000 characters" in text


async def test_secrets_in_env_and_headers_stay_out_of_transcript_and_warnings(
        zpi_env, tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_TEST_TOKEN", "tok-1234567890-secret")
    servers = {"srv": stdio(env={"SERVER_TOKEN": "${MCP_TEST_TOKEN}"}),
               "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                          "headers": {"Authorization": "Bearer hdr-abcdefghij-secret"}}}
    session = await run_with(tmp_path, servers, call("mcp__srv__env", {"name": "SERVER_TOKEN"}))
    ((text, error),) = tool_results(session)
    assert not error and text == "tok-1234567890-secret"  # the server got its variable
    transcript = session.store.path.read_text()
    assert "tok-1234567890-secret" not in transcript and "[redacted]" in transcript
    assert "hdr-abcdefghij-secret" not in "\n".join(session.warnings)
