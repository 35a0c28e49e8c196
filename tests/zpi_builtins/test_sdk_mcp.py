"""MCP servers configured in settings, through the Claude-style SDK: the server's tools and
Claude Code's resource tool names (``ListMcpResourcesTool``, ``ReadMcpResourceTool``)."""

from __future__ import annotations

import json
import sys

import pytest
from helpers.builtins import loopback_sdk_options
from helpers.mcp_servers import SERVER_FILE

from zpi_host.sdk import ResultMessage, query

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
