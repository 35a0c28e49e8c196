"""Permission is disclosure for MCP tools: a tool denied outright stays out of the request,
also after its server is reconnected."""

from __future__ import annotations

import sys

import pytest
from helpers.builtins import loopback_sdk_options
from helpers.mcp_servers import SERVER_FILE

from zpi_host.sdk import SDKClient

pytestmark = pytest.mark.anyio


async def test_a_denied_mcp_tool_stays_hidden_after_a_reconnect(zpi_env, zpi_model_server,
                                                                tmp_path):
    zpi_model_server.add_turns({"text": "first"}, {"text": "second"})
    servers = {"srv": {"command": sys.executable, "args": [str(SERVER_FILE)]}}
    opts = loopback_sdk_options(zpi_model_server, tmp_path, permission_mode="bypassPermissions",
                                mcp_servers=servers, disallowed_tools=["mcp__srv__crash"])
    async with SDKClient(opts) as client:
        await client.query("go")
        [m async for m in client.receive_response()]
        await client.reconnect_mcp_server("srv")
        await client.query("again")
        [m async for m in client.receive_response()]
    for request in zpi_model_server.requests:
        names = {t["name"] for t in request.json["tools"]}
        assert "mcp__srv__echo" in names and "mcp__srv__crash" not in names
