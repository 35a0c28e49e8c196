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
from pathlib import Path

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
    monkeypatch.setenv("MCP_TIMEOUT", "10000")  # the good ones start within it on a busy machine
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
    assert "MCP server 'hang'" in warnings and "did not start within 10 s" in warnings
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


# --------------------------------------------------------------------------- HTTP and SSE


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def network_server(transport: str):
    """The test server over ``transport`` on a loopback port; yields its URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(SERVER_FILE), transport, str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}"
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_remote_servers_over_streamable_http_and_sse(zpi_env, tmp_path, transport):
    with network_server(transport) as url:
        session = await run_with(
            tmp_path, {"remote": {"type": transport, "url": url,
                                  "headers": {"X-Test": "${UNSET_HEADER:-fallback}"}}},
            call("mcp__remote__echo", {"text": transport}))
    ((text, error),) = tool_results(session)
    assert not error and text == f"echo: {transport}"


# --------------------------------------------------------------------------- sources


def write_json(path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


async def file_session(zpi_env, project, turns, **options):
    from zpi_host.session.assembly import create_session
    from zpi_host.testing import ScriptedModel

    return await create_session(model="scripted:memory", provider=ScriptedModel([*turns, "ok"]),
                                cwd=project, permission_mode="bypass", **options)


def user_settings(zpi_env, data) -> None:
    write_json(zpi_env.agent_dir / "settings.json",
               {"plugins": {"builtins": QUIET}, **data})


async def test_project_mcp_json_needs_approval_and_trust(zpi_env, tmp_path):
    project = tmp_path / "proj"
    write_json(project / ".mcp.json", {"mcpServers": {"shipped": stdio(),
                                                      "other": stdio()}})
    # not approved: listed, never started, and the project's trust is not even asked for
    user_settings(zpi_env, {})
    session = await file_session(zpi_env, project, [], refuse_untrusted=True)
    await session.run("hi")
    await session.dispose()
    assert not any(n.startswith("mcp__") for n in session.tools)
    assert any("'shipped'" in w and "needs approval" in w and "enabledMcpjsonServers" in w
               for w in session.warnings)
    # approved but the project is not trusted: a non-interactive run refuses
    from zpi_host.settings.trust import UntrustedProjectError

    user_settings(zpi_env, {"enabledMcpjsonServers": ["shipped"],
                            "disabledMcpjsonServers": ["other"]})
    with pytest.raises(UntrustedProjectError, match="MCP server 'shipped'"):
        await file_session(zpi_env, project, [], refuse_untrusted=True)
    # trusted for this session: the approved server starts, the disabled one does not
    session = await file_session(zpi_env, project, [call("mcp__shipped__echo", {"text": "a"})],
                                 trust_project=True)
    await session.run("hi")
    await session.dispose()
    assert "mcp__shipped__echo" in session.tools
    assert not any(n.startswith("mcp__other__") for n in session.tools)
    assert tool_results(session) == [("echo: a", False)]


async def test_project_settings_servers_wait_for_trust_and_local_beats_user(zpi_env, tmp_path):
    project = tmp_path / "proj"
    user_settings(zpi_env, {"mcpServers": {"srv": {"command": "no-such-user-program"}}})
    write_json(project / ".zpi" / "settings.local.json", {"mcpServers": {"srv": stdio()}})
    session = await file_session(zpi_env, project, [], trust_project=False)
    await session.run("hi")
    await session.dispose()
    assert not any(n.startswith("mcp__srv__") for n in session.tools)
    # untrusted: the user's own entry is the one tried (and fails: no such program)
    assert any("MCP server 'srv'" in w and "failed" in w for w in session.warnings)
    session = await file_session(zpi_env, project, [call("mcp__srv__echo", {"text": "l"})],
                                 trust_project=True)
    await session.run("hi")
    await session.dispose()
    assert tool_results(session) == [("echo: l", False)]


async def test_strict_mcp_config_keeps_only_the_given_servers(zpi_env, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    user_settings(zpi_env, {"mcpServers": {"user_srv": stdio()}})
    session = await file_session(zpi_env, project, [], mcp_servers={"given": stdio()},
                                 strict_mcp_config=True)
    await session.dispose()
    assert "mcp__given__echo" in session.tools
    assert not any(n.startswith("mcp__user_srv__") for n in session.tools)


async def test_mcp_servers_may_be_a_config_file_and_a_bad_one_is_a_usage_error(
        zpi_env, tmp_path):
    from zpi_host.errors import UsageError

    project = tmp_path / "proj"
    project.mkdir()
    config = tmp_path / "servers.json"
    write_json(config, {"mcpServers": {"file_srv": stdio()}})
    session = await file_session(zpi_env, project, [], mcp_servers=str(config))
    await session.dispose()
    assert "mcp__file_srv__echo" in session.tools
    config.write_text("{not json")
    with pytest.raises(UsageError, match=r"servers\.json: MCP config file is not valid JSON"):
        await file_session(zpi_env, project, [], mcp_servers=str(config))


def test_no_server_configured_does_not_import_mcp(zpi_env, tmp_path):
    code = ("import asyncio, sys\n"
            "from zpi_host.session.assembly import create_session\n"
            "from zpi_host.testing import ScriptedModel\n"
            "async def main():\n"
            "    s = await create_session(model='scripted:m', provider=ScriptedModel(['x']),"
            f" cwd={str(tmp_path)!r}, settings={{}})\n"
            "    await s.dispose()\n"
            "asyncio.run(main())\n"
            "print('mcp' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


async def test_calling_a_tool_of_a_server_that_did_not_start_names_the_server(zpi_env, tmp_path):
    session = await run_with(tmp_path, {"gone": {"command": str(tmp_path / "missing")}},
                             call("mcp__gone__echo", {"text": "x"}))
    ((text, error),) = tool_results(session)
    assert error and "unknown tool 'mcp__gone__echo'" in text
    assert "MCP server 'gone' is failed" in text


async def test_a_claude_plugin_folders_mcp_json_starts_with_its_plugin_root(zpi_env, tmp_path):
    import shutil

    plugin = tmp_path / "plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "tooly"}))
    shutil.copy(SERVER_FILE, plugin / "server.py")
    write_json(plugin / ".mcp.json", {"mcpServers": {"plug": {
        "command": sys.executable, "args": ["${CLAUDE_PLUGIN_ROOT}/server.py"],
        "env": {"WHERE": "${CLAUDE_PLUGIN_ROOT}"}}}})
    project = tmp_path / "proj"
    project.mkdir()
    session = await file_session(zpi_env, project, [call("mcp__plug__env", {"name": "WHERE"})],
                                 plugin_dirs=[str(plugin)])
    await session.run("hi")
    await session.dispose()
    ((where, error),) = tool_results(session)
    assert not error and where != "(unset)" and (Path(where) / "server.py").is_file()


async def test_resources_are_listed_and_read_through_the_resource_tools(zpi_env, tmp_path):
    session = await run_with(tmp_path, {"srv": stdio()}, call("list_mcp_resources", {}),
                             call("read_mcp_resource", {"server": "srv",
                                                        "uri": "notes://readme"}),
                             call("read_mcp_resource", {"server": "nope", "uri": "x"}))
    (listed, e1), (read, e2), (bad, e3) = tool_results(session)
    assert not e1 and "notes://readme" in listed and "srv" in listed
    assert not e2 and read == "the notes say hello"
    # the schema's enum, checked by the tool argument validator, names the argument
    assert e3 and "invalid argument 'server'" in bad and 'must be one of ["srv"]' in bad
    assert session.tools["list_mcp_resources"].metadata.read_only


def test_claude_codes_resource_tool_names_are_the_same_tools_for_rules():
    from zpi_host.permissions.toolnames import same_tool

    assert "ListMcpResourcesTool" in same_tool("list_mcp_resources")
    assert "read_mcp_resource" in same_tool("ReadMcpResourceTool")


async def test_a_servers_prompt_is_a_slash_command(zpi_env, tmp_path):
    session = await scripted_session(tmp_path, ["reviewed"], settings=builtins_settings(**QUIET),
                                     mcp_servers={"srv": stdio()})
    try:
        assert "mcp__srv__review" in {c.name for c in session.resources.commands}
        await session.run("/mcp__srv__review the parser module")
    finally:
        await session.dispose()
    (request,) = session.test_model.requests
    sent = " ".join(getattr(c, "text", "") for m in request.messages for c in m.content)
    assert "Please review the parser module." in sent


async def test_two_servers_whose_names_meet_cost_the_second_its_tools_not_the_session(
        zpi_env, tmp_path):
    session = await run_with(tmp_path, {"a.b": stdio(), "a_b": stdio()},
                             call("mcp__a_b__echo", {"text": "one"}))
    ((text, error),) = tool_results(session)
    assert not error and text == "echo: one"
    assert any("is taken by the server 'a.b'" in w for w in session.warnings), session.warnings
