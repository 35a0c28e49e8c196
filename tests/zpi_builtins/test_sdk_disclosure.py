"""Permission is disclosure through the SDK: a denied MCP tool stays out of the request, also
after its server is reconnected; the agent option runs a definition as the main agent."""

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


async def test_the_sdk_agent_option_runs_a_definition_as_the_main_agent(
        zpi_env, zpi_model_server, tmp_path):
    from zpi_host.sdk import AgentDefinition, query

    zpi_model_server.add_turns({"text": "done"})
    opts = loopback_sdk_options(zpi_model_server, tmp_path, agent="reader", agents={
        "reader": AgentDefinition(description="reads", prompt="You only read.",
                                  tools=["Read", "Grep"])})
    [m async for m in query(prompt="go", options=opts)]
    body = zpi_model_server.requests[0].json
    assert sorted(t["name"] for t in body["tools"]) == ["Grep", "Read"]
    system = body["system"] if isinstance(body["system"], str) else \
        "".join(b["text"] for b in body["system"])
    assert system.startswith("You only read.")
