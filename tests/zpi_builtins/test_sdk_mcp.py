"""MCP servers configured in settings, through the Claude-style SDK: the server's tools and
Claude Code's resource tool names (``ListMcpResourcesTool``, ``ReadMcpResourceTool``)."""

from __future__ import annotations

import json
import sys

import pytest
from helpers.builtins import loopback_sdk_options
from helpers.mcp_servers import SERVER_FILE

from zpi_host.sdk import McpServerError, ResultMessage, SDKClient, SystemMessage, query

pytestmark = pytest.mark.anyio


async def test_settings_servers_and_the_claude_resource_tools_through_query(
        zpi_env, zpi_model_server, tmp_path):
    zpi_model_server.add_turns(
        {"tool_calls": [{"name": "mcp__srv__echo", "arguments": {"text": "sdk"}}]},
        {"tool_calls": [{"name": "ReadMcpResourceTool", "arguments": {
            "server": "srv", "uri": "notes://readme"}}]},
        {"text": "done"})
    opts = loopback_sdk_options(zpi_model_server, tmp_path, permission_mode="bypassPermissions")
    settings = json.loads(opts.settings)
    settings["mcpServers"] = {"srv": {"command": sys.executable, "args": [str(SERVER_FILE)]}}
    opts.settings = json.dumps(settings)
    messages = [m async for m in query(prompt="go", options=opts)]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and not result.is_error, result
    names = {t["name"] for t in zpi_model_server.requests[0].json["tools"]}
    assert {"mcp__srv__echo", "ListMcpResourcesTool", "ReadMcpResourceTool"} <= names
    assert not {"list_mcp_resources", "read_mcp_resource"} & names
    sent = [json.dumps(r.json["messages"][-1]) for r in zpi_model_server.requests[1:]]
    assert "echo: sdk" in sent[0] and "the notes say hello" in sent[1]


def tool_results(messages):
    """(text, is_error) of each tool result the client streamed."""
    from zpi_host.sdk import ToolResultBlock, UserMessage

    return [(b.content if isinstance(b.content, str) else json.dumps(b.content),
             bool(b.is_error)) for m in messages
            if isinstance(m, UserMessage) and isinstance(m.content, list)
            for b in m.content if isinstance(b, ToolResultBlock)]


def echo(text):
    return {"tool_calls": [{"name": "mcp__srv__echo", "arguments": {"text": text}}]}


async def test_the_client_reports_reconnects_and_toggles_external_servers(
        zpi_env, zpi_model_server, tmp_path):
    zpi_model_server.add_turns(
        echo("one"), {"text": "first"},
        {"tool_calls": [{"name": "mcp__srv__crash", "arguments": {}}]}, {"text": "died"},
        echo("two"), {"text": "second"},
        echo("three"), {"text": "switched off"},
        echo("four"), {"text": "back"})
    servers = {"srv": {"command": sys.executable, "args": [str(SERVER_FILE), "stdio", "s3cret-arg"],
                       "env": {"MCP_TEST_TOKEN": "s3cret-arg"}},
               "missing": {"command": str(tmp_path / "no-such-program")}}
    opts = loopback_sdk_options(zpi_model_server, tmp_path, permission_mode="bypassPermissions",
                                mcp_servers=servers)
    async with SDKClient(opts) as client:
        status = {s["name"]: s for s in (await client.get_mcp_status())["mcpServers"]}
        srv, missing = status["srv"], status["missing"]
        assert srv["status"] == "connected" and srv["scope"] == "dynamic"
        assert srv["serverInfo"]["name"] and "version" in srv["serverInfo"]
        assert srv["config"] == {"type": "stdio", "command": sys.executable,
                                 "args": [str(SERVER_FILE), "stdio", "[redacted]"]}
        tools = {t["name"]: t for t in srv["tools"]}
        assert {"echo", "crash", "pid"} <= set(tools)
        assert tools["echo"]["annotations"]["readOnly"] is True
        assert missing["status"] == "failed" and missing["error"] and "tools" not in missing
        assert "s3cret" not in json.dumps(status)

        await client.query("go")
        first = [m async for m in client.receive_response()]
        init = next(m for m in first if isinstance(m, SystemMessage) and m.subtype == "init")
        assert {"name": "srv", "status": "connected"} in init.data["mcp_servers"]
        assert {"name": "missing", "status": "failed"} in init.data["mcp_servers"]
        assert tool_results(first) == [("echo: one", False)]

        await client.query("crash it")
        [(_, crashed)] = tool_results([m async for m in client.receive_response()])
        assert crashed
        died = {s["name"]: s for s in (await client.get_mcp_status())["mcpServers"]}["srv"]
        assert died["status"] == "failed" and died["error"] and "tools" not in died

        await client.reconnect_mcp_server("srv")
        back = {s["name"]: s for s in (await client.get_mcp_status())["mcpServers"]}["srv"]
        assert back["status"] == "connected" and back["tools"]
        await client.query("again")
        assert tool_results([m async for m in client.receive_response()]) == [
            ("echo: two", False)]

        await client.toggle_mcp_server("srv", False)
        off = {s["name"]: s for s in (await client.get_mcp_status())["mcpServers"]}["srv"]
        assert off["status"] == "disabled" and "tools" not in off
        await client.query("off")
        third = [m async for m in client.receive_response()]
        [(refused, is_error)] = tool_results(third)
        assert is_error and "MCP server 'srv' is switched off" in refused
        init = next(m for m in third if isinstance(m, SystemMessage) and m.subtype == "init")
        assert {"name": "srv", "status": "disabled"} in init.data["mcp_servers"]
        offered = {t["name"] for t in zpi_model_server.requests[-2].json["tools"]}
        assert not any(n.startswith("mcp__srv__") for n in offered)

        await client.toggle_mcp_server("srv", True)
        await client.query("on")
        assert tool_results([m async for m in client.receive_response()]) == [
            ("echo: four", False)]

        await client.reconnect_mcp_server("missing")  # fails again: reported, not raised
        again = {s["name"]: s for s in (await client.get_mcp_status())["mcpServers"]}
        assert again["missing"]["status"] == "failed" and again["missing"]["error"]
        assert again["srv"]["status"] == "connected"

        with pytest.raises(McpServerError, match=r"external: missing, srv"):
            await client.reconnect_mcp_server("nope")
        with pytest.raises(McpServerError, match=r"toggle_mcp_server\('nope'\)"):
            await client.toggle_mcp_server("nope", False)
