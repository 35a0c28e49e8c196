"""Agent definitions' ``mcpServers`` (Claude Code's frontmatter, claude-agent-sdk's
``AgentDefinition.mcpServers``): a sub-agent gets the tools of the session's servers it names
and of servers given inline, started for it alone and stopped when it ends; with the test MCP
server (tests/helpers/mcp_servers.py) as real subprocesses."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from helpers.builtins import builtins_settings
from helpers.mcp_servers import SERVER_FILE

from zpi_host.errors import UsageError
from zpi_host.resources import AgentDefinition
from zpi_host.sdk.agents import AgentDefinition as SdkAgentDefinition
from zpi_host.sdk.agents import kernel_agents
from zpi_host.session.assembly import create_session
from zpi_host.support.process_groups import group_alive, process_alive
from zpi_host.testing import FunctionModel

pytestmark = pytest.mark.anyio

QUIET = builtins_settings(title={"enabled": False})
CHILD_PROMPT = "You use MCP tools."


def stdio(**env: str) -> dict:
    return {"command": sys.executable, "args": [str(SERVER_FILE)], "env": env}


def task_call(agent_type: str) -> dict:
    return {"name": "task", "arguments": {"agent_type": agent_type, "description": "a task",
                                          "prompt": "use the tools"}}


def model(child_calls: list[dict], seen: list) -> FunctionModel:
    """The parent starts the sub-agent; the sub-agent makes ``child_calls`` and answers with
    what they returned; the parent ends."""
    def answer(request):
        seen.append(request)
        if request.system_prompt.startswith(CHILD_PROMPT):
            results = [m for m in request.messages if m.role == "tool"]
            if not results:
                return {"tool_calls": child_calls}
            return {"text": " | ".join(("ERROR " if m.is_error else "") + "".join(
                getattr(c, "text", "") for c in m.content) for m in results)}
        if not any(m.role == "tool" for m in request.messages):
            return {"tool_calls": [task_call("helper")]}
        return {"text": "parent done"}
    return FunctionModel(answer)


def task_result(session) -> tuple[bool, str]:
    ((error, text),) = [(m.is_error, "".join(c.text for c in m.content))
                        for m in session.messages if m.role == "tool"]
    return error, text


async def gone(pid: int) -> bool:
    for _ in range(200):
        if not process_alive(pid) and not group_alive(pid):
            return True
        await asyncio.sleep(0.025)
    return False


async def test_a_project_agent_gets_named_and_inline_servers_once_trusted(zpi_env, tmp_path):
    pidfile = tmp_path / "inline.pid"
    inline = stdio(MCP_TEST_PIDFILE=str(pidfile))
    folder = tmp_path / ".zpi" / "agents"
    folder.mkdir(parents=True)
    (folder / "helper.md").write_text(
        "---\nname: helper\ndescription: uses MCP\ntools: read\nmcpServers:\n  - srv\n"
        f"  - inline: {json.dumps(inline)}\n---\n{CHILD_PROMPT}\n")
    calls = [{"name": "mcp__srv__echo", "arguments": {"text": "named"}},
             {"name": "mcp__inline__add", "arguments": {"a": 40, "b": 2}}]
    untrusted = await create_session(model="t:m", provider=model(calls, []), cwd=tmp_path,
                                     settings=QUIET, mcp_servers={"srv": stdio()},
                                     permission_mode="bypass")
    try:
        await untrusted.run("go")
        error, text = task_result(untrusted)
        assert error and "the project is not trusted" in text and "helper.md" in text
        assert not pidfile.exists()  # nothing of the project's was started
    finally:
        await untrusted.dispose()
    seen: list = []
    session = await create_session(model="t:m", provider=model(calls, seen), cwd=tmp_path,
                                   settings=QUIET, mcp_servers={"srv": stdio()},
                                   permission_mode="bypass", trust_project=True)
    try:
        assert "mcp__inline__add" not in session.tools  # the session never has it
        result = await session.run("go")
        assert result.result == "parent done"
        error, text = task_result(session)
        assert not error and text == "echo: named | 42", text
        child = next(r for r in seen if r.system_prompt.startswith(CHILD_PROMPT))
        names = {t.name for t in child.tools}
        assert {"read", "mcp__srv__echo", "mcp__inline__add"} <= names
        assert "bash" not in names and "task" not in names  # its own list, plus the servers
        assert await gone(int(pidfile.read_text()))  # stopped when the sub-agent ended
        assert "mcp__srv__echo" in session.tools  # the session's server lives on
    finally:
        await session.dispose()


async def test_an_sdk_agent_definition_takes_mcp_servers_and_bad_names_are_errors(
        zpi_env, tmp_path):
    (agent,) = kernel_agents({"helper": SdkAgentDefinition(
        description="uses MCP", prompt=CHILD_PROMPT, tools=["read"],
        mcpServers=["srv", {"inline": stdio()}])})
    assert agent.mcp_servers == ("srv", {"inline": stdio()})
    with pytest.raises(UsageError, match=r"agents\['x'\]\.mcpServers: 3 is neither"):
        kernel_agents({"x": SdkAgentDefinition(description="d", prompt="p", mcpServers=[3])})
    missing = AgentDefinition("helper", "uses MCP", CHILD_PROMPT, tools=("read",),
                              origin="sdk option agents", mcp_servers=("nope",))
    seen: list = []
    session = await create_session(model="t:m", provider=model([], seen), cwd=tmp_path,
                                   settings=QUIET, agents=[missing], permission_mode="bypass")
    try:
        await session.run("go")
        error, text = task_result(session)
        assert error and "'nope' is not an MCP server of this session" in text
        assert "agent 'helper'" in text
    finally:
        await session.dispose()


async def test_an_inline_server_that_fails_costs_its_tools_not_the_sub_agent(
        zpi_env, tmp_path):
    broken = AgentDefinition("helper", "uses MCP", CHILD_PROMPT, tools=("read",),
                             origin="sdk option agents",
                             mcp_servers=({"dead": {"command": str(tmp_path / "missing")}},))
    seen: list = []
    session = await create_session(model="t:m", provider=model(
        [{"name": "read", "arguments": {"path": "nothing.txt"}}], seen), cwd=tmp_path,
        settings=QUIET, agents=[broken], permission_mode="bypass")
    try:
        result = await session.run("go")
        assert result.result == "parent done"
        assert any("MCP server 'dead'" in w and "helper sub-agent" in w
                   for w in session.warnings)
    finally:
        await session.dispose()
