"""In-process MCP servers (``tool`` + ``create_sdk_mcp_server``) written as for
claude-agent-sdk (its examples/mcp_calculator.py style): their tools run in this process under
``mcp__<server>__<tool>``, through permissions, hooks, the transcript and the client's MCP
controls."""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any, NotRequired, TypedDict

import pytest

from zpi_host.errors import UsageError
from zpi_host.providers.messages import ToolResultMessage
from zpi_host.sdk import (
    ClaudeSDKClient,
    HookMatcher,
    McpServerError,
    ResultMessage,
    SystemMessage,
    ToolAnnotations,
    UnsupportedOptionError,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)
from zpi_host.tools.base import ImageContent

from .conftest import collect

pytestmark = pytest.mark.anyio

#: what the handlers were called with, appended in this process
CALLS: list[tuple[str, dict[str, Any]]] = []
PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n-not-really-a-png").decode()


@tool("add", "Add two numbers", {"a": float, "b": float})
async def add_numbers(args: dict[str, Any]) -> dict[str, Any]:
    CALLS.append(("add", args))
    return {"content": [{"type": "text", "text": f"{args['a']} + {args['b']} = "
                                                 f"{args['a'] + args['b']}"}]}


@tool("divide", "Divide two numbers", {"a": float, "b": float})
async def divide_numbers(args: dict[str, Any]) -> dict[str, Any]:
    CALLS.append(("divide", args))
    if args["b"] == 0:
        return {"content": [{"type": "text", "text": "Error: Division by zero"}],
                "is_error": True}
    return {"content": [{"type": "text", "text": f"{args['a'] / args['b']}"}]}


@tool("sqrt", "Square root", {"n": float})
async def square_root(args: dict[str, Any]) -> dict[str, Any]:
    CALLS.append(("sqrt", args))
    if args["n"] < 0:
        raise ValueError(f"cannot take the square root of {args['n']}")
    return {"content": [{"type": "text", "text": str(args["n"] ** 0.5)}]}


@tool("plot", "Draw the numbers", {"values": list[float]},
      annotations=ToolAnnotations(read_only_hint=True))
async def plot(args: dict[str, Any]) -> dict[str, Any]:
    CALLS.append(("plot", args))
    return {"content": [{"type": "text", "text": "the plot:"},
                        {"type": "image", "data": PIXEL, "mimeType": "image/png"}]}


def calculator() -> Any:
    return create_sdk_mcp_server(name="calculator", version="2.0.0",
                                 tools=[add_numbers, divide_numbers, square_root, plot])


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    CALLS.clear()


def results(messages: list[Any]) -> list[Any]:
    return [b for m in messages if isinstance(m, UserMessage) for b in m.content]


def sent(request: Any) -> str:
    """What a request carried: the JSON body, or the scripted model's messages and tools."""
    if isinstance(request, dict):
        return json.dumps(request)
    return repr(list(request.messages)) + repr(request.tools)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def test_query_calls_an_in_process_tool_and_the_model_gets_its_result(backend):
    backend.turns(call("mcp__calc__add", a=2, b=3.5), "the sum is 5.5")
    options = backend.options(mcp_servers={"calc": calculator()},
                              allowed_tools=["mcp__calc__add"])
    messages = await collect(query("what is 2 + 3.5?", options))
    assert CALLS == [("add", {"a": 2, "b": 3.5})]  # ran here, in this process
    [result] = results(messages)
    assert not result.is_error and "2 + 3.5 = 5.5" in str(result.content)
    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    assert {"mcp__calc__add", "mcp__calc__divide", "mcp__calc__sqrt",
            "mcp__calc__plot"} <= set(init.data["tools"])
    assert init.data["mcp_servers"] == [{"name": "calc", "status": "connected",
                                         "source": "sdk"}]
    assert messages[-1].result == "the sum is 5.5"
    # the model was offered the tool with the schema made from {"a": float, "b": float}
    first, second = (sent(r) for r in backend.requests())
    assert "mcp__calc__add" in first and "number" in first
    assert "2 + 3.5 = 5.5" in second  # and it saw the result in its second request


async def test_is_error_and_a_raising_handler_are_error_results_the_model_reads(scripted):
    scripted.turns({"tool_calls": [
        {"name": "mcp__calc__divide", "arguments": {"a": 1, "b": 0}},
        {"name": "mcp__calc__sqrt", "arguments": {"n": -4}},
        {"name": "mcp__calc__add", "arguments": {"a": "two", "b": 1}}]}, "done")
    options = scripted.options(mcp_servers={"calc": calculator()},
                               allowed_tools=["mcp__calc"])
    messages = await collect(query("go", options))
    divide, sqrt, bad = results(messages)
    assert divide.is_error and "Division by zero" in str(divide.content)
    assert sqrt.is_error and "ValueError: cannot take the square root of -4" in str(
        sqrt.content)
    assert bad.is_error and "'a'" in str(bad.content) and "number" in str(bad.content)
    assert [c[0] for c in CALLS] == ["divide", "sqrt"]  # the bad arguments never reached it
    assert messages[-1].subtype == "success" and messages[-1].result == "done"


async def test_an_image_result_reaches_the_model_as_an_image(scripted):
    scripted.turns(call("mcp__calc__plot", values=[1, 2]), "drawn")
    options = scripted.options(mcp_servers={"calc": calculator()})  # read-only: not asked
    messages = await collect(query("plot", options))
    [result] = results(messages)
    assert not result.is_error
    sent = [m for m in scripted.requests()[1].messages if isinstance(m, ToolResultMessage)]
    assert ImageContent(PIXEL, "image/png") in sent[0].content
    assert CALLS == [("plot", {"values": [1, 2]})]


async def test_disallowed_tools_hide_the_tool_and_a_call_to_it_fails(scripted):
    """Permission is disclosure: a tool denied outright is not offered; a call the model makes
    anyway is an unknown tool, never run (not a permission denial: nothing was asked)."""
    scripted.turns(call("mcp__calc__add", a=1, b=1), "denied")
    options = scripted.options(mcp_servers={"calc": calculator()},
                               permission_mode="bypassPermissions",
                               disallowed_tools=["mcp__calc__add"])
    messages = await collect(query("go", options))
    [result] = results(messages)
    assert result.is_error and CALLS == []
    assert "mcp__calc__add" not in messages[0].data["tools"]  # the init message's list
    assert "mcp__calc__divide" in messages[0].data["tools"]


async def test_a_server_rule_names_every_tool_of_the_server(scripted):
    scripted.turns(call("mcp__calc__add", a=1, b=1), call("mcp__calc__divide", a=4, b=2),
                   "ok")
    options = scripted.options(mcp_servers={"calc": calculator()},
                               allowed_tools=["mcp__calc__add"],
                               disallowed_tools=["mcp__calc"])
    messages = await collect(query("go", options))
    add, divide = results(messages)
    assert add.is_error and divide.is_error and CALLS == []


async def test_without_an_allow_rule_a_tool_that_may_change_things_is_not_run(scripted):
    scripted.turns(call("mcp__calc__add", a=1, b=1), "ok")
    options = scripted.options(mcp_servers={"calc": calculator()})
    [result] = results(await collect(query("go", options)))
    assert result.is_error and CALLS == []


async def test_a_pre_tool_use_hook_matches_the_mcp_name(scripted):
    seen: list[Any] = []

    async def check(input_data: dict[str, Any], tool_use_id: Any, context: Any) -> Any:
        seen.append((input_data["tool_name"], input_data["tool_input"]))
        if input_data["tool_input"].get("b") == 13:
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                           "permissionDecision": "deny",
                                           "permissionDecisionReason": "unlucky number"}}
        return {}

    scripted.turns({"tool_calls": [
        {"name": "mcp__calc__add", "arguments": {"a": 1, "b": 13}},
        {"name": "mcp__calc__add", "arguments": {"a": 1, "b": 2}},
        {"name": "mcp__calc__plot", "arguments": {"values": [1]}}]}, "ok")
    every: list[str] = []

    async def each(input_data: dict[str, Any], tool_use_id: Any, context: Any) -> Any:
        every.append(input_data["tool_name"])
        return {}

    options = scripted.options(mcp_servers={"calc": calculator()},
                               allowed_tools=["mcp__calc__add"],
                               hooks={"PreToolUse": [HookMatcher("mcp__calc__add", [check]),
                                                     HookMatcher("mcp__calc__.*", [each])]})
    unlucky, lucky, _ = results(await collect(query("go", options)))
    assert unlucky.is_error and "unlucky number" in str(unlucky.content)
    assert not lucky.is_error
    assert seen == [("mcp__calc__add", {"a": 1, "b": 13}), ("mcp__calc__add", {"a": 1, "b": 2})]
    assert sorted(every) == ["mcp__calc__add", "mcp__calc__add", "mcp__calc__plot"]
    assert [c[0] for c in CALLS] == ["add", "plot"]


async def test_can_use_tool_is_asked_with_the_mcp_name(scripted):
    asked: list[Any] = []

    async def can_use_tool(name: str, arguments: dict[str, Any], context: Any) -> Any:
        from zpi_host.sdk import PermissionResultAllow

        asked.append((name, arguments))
        return PermissionResultAllow()

    scripted.turns(call("mcp__calc__add", a=1, b=2), "ok")
    options = scripted.options(mcp_servers={"calc": calculator()}, can_use_tool=can_use_tool)
    [result] = results(await collect(query("go", options)))
    assert asked == [("mcp__calc__add", {"a": 1, "b": 2})] and not result.is_error


async def test_the_transcript_records_the_call(scripted):
    scripted.turns(call("mcp__calc__add", a=1, b=2), "ok")
    options = scripted.options(mcp_servers={"calc": calculator()},
                               allowed_tools=["mcp__calc__add"])
    messages = await collect(query("go", options))
    from zpi_host.sdk import get_session_messages

    stored = get_session_messages(messages[-1].session_id, directory=str(scripted.cwd))
    text = json.dumps([m.message for m in stored], default=str)
    assert "mcp__calc__add" in text and "1 + 2 = 3" in text


async def test_the_client_reports_toggles_and_reconnects_in_process_servers(scripted):
    scripted.turns(call("mcp__calc__add", a=1, b=2), "first",
                   call("mcp__calc__add", a=3, b=4), "second",
                   call("mcp__calc__add", a=5, b=6), "third")
    options = scripted.options(mcp_servers={"calc": calculator()},
                               allowed_tools=["mcp__calc__add"])
    async with ClaudeSDKClient(options) as client:
        status = await client.get_mcp_status()
        [server] = status["mcpServers"]
        assert server["name"] == "calc" and server["status"] == "connected"
        assert server["serverInfo"] == {"name": "calculator", "version": "2.0.0"}
        assert server["config"] == {"type": "sdk", "name": "calculator"}
        tools = {t["name"]: t for t in server["tools"]}
        assert set(tools) == {"add", "divide", "sqrt", "plot"}
        assert tools["plot"]["annotations"] == {"readOnly": True}

        await client.query("one")
        first = [m async for m in client.receive_response()]
        assert not results(first)[0].is_error

        await client.toggle_mcp_server("calc", enabled=False)
        assert (await client.get_mcp_status())["mcpServers"][0]["status"] == "disabled"
        await client.query("two")
        second = [m async for m in client.receive_response()]
        init = next(m for m in second if isinstance(m, SystemMessage))
        assert init.data["mcp_servers"][0]["status"] == "disabled"
        assert not any(t.startswith("mcp__calc__") for t in init.data["tools"])
        [refused] = results(second)  # the model was not offered it any more
        assert refused.is_error and "MCP server 'calc' is switched off" in str(refused.content)
        tools_offered = [t.name for t in scripted.requests()[2].tools]
        assert "mcp__calc__add" not in tools_offered

        await client.toggle_mcp_server("calc", enabled=True)
        await client.reconnect_mcp_server("calc")  # in-process: nothing to reconnect
        await client.query("three")
        third = [m async for m in client.receive_response()]
        assert not results(third)[0].is_error and isinstance(third[-1], ResultMessage)

        with pytest.raises(McpServerError, match=r"no MCP server of that name.*in-process: calc"):
            await client.toggle_mcp_server("nope", enabled=False)
        with pytest.raises(McpServerError, match="reconnect_mcp_server"):
            await client.reconnect_mcp_server("nope")
    assert [args for _, args in CALLS] == [{"a": 1, "b": 2}, {"a": 5, "b": 6}]


async def test_the_tools_option_keeps_the_mcp_tools(scripted):
    scripted.turns(call("mcp__calc__add", a=1, b=2), "ok")
    options = scripted.options(mcp_servers={"calc": calculator()}, tools=["Read"],
                               allowed_tools=["mcp__calc__add"])
    messages = await collect(query("go", options))
    init = next(m for m in messages if isinstance(m, SystemMessage))
    assert "Read" in init.data["tools"] and "Bash" not in init.data["tools"]
    assert "mcp__calc__add" in init.data["tools"] and CALLS


async def test_no_standard_tools_still_keeps_the_mcp_tools(scripted):
    scripted.turns(call("mcp__calc__add", a=1, b=2), "ok")
    options = scripted.options(mcp_servers={"calc": calculator()}, tools=[],
                               allowed_tools=["mcp__calc__add"])
    messages = await collect(query("go", options))
    init = next(m for m in messages if isinstance(m, SystemMessage))
    assert all(t.startswith("mcp__calc__") for t in init.data["tools"])
    assert not results(messages)[0].is_error and CALLS


class Point(TypedDict):
    x: Annotated[float, "the x coordinate"]
    label: NotRequired[str]


def test_input_schemas_as_claude_agent_sdk_builds_them():
    from zpi_host.sdk.mcp_tools import input_schema_of

    assert input_schema_of("t", {"a": float, "tags": list[str], "n": int | None}) == {
        "type": "object", "required": ["a", "tags", "n"], "properties": {
            "a": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}},
            "n": {"type": "integer"}}}
    assert input_schema_of("t", Point) == {
        "type": "object", "required": ["x"], "properties": {
            "x": {"type": "number", "description": "the x coordinate"},
            "label": {"type": "string"}}}
    given = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    assert input_schema_of("t", given) == given
    with pytest.raises(UsageError, match="input_schema must be"):
        tool("t", "d", 42)  # type: ignore[arg-type]


async def test_bad_handler_results_and_content_are_error_results():
    from zpi_host.sdk.mcp_tools import tool_result

    assert tool_result("mcp__s__t", "plain text").is_error
    bad = tool_result("mcp__s__t", {"content": [{"type": "image", "data": "x"}]})
    assert bad.is_error and "mimeType" in bad.text_content
    mixed = tool_result("mcp__s__t", {"content": [
        {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
        {"type": "resource_link", "name": "doc", "uri": "file:///doc"},
        {"type": "audio", "data": "x"}]})
    assert not mixed.is_error
    assert mixed.text_content.splitlines()[:3] == ["inside", "doc", "file:///doc"]
    assert "'audio' was left out" in mixed.text_content


def test_bad_server_configs_are_refused_by_name(tmp_path):
    from zpi_host.sdk import AgentOptions

    with pytest.raises(UnsupportedOptionError, match="create_sdk_mcp_server"):
        AgentOptions(mcp_servers={"x": {"type": "sdk", "name": "x", "instance": object()}}
                     ).session_kwargs()
    with pytest.raises(UsageError, match="no file"):
        AgentOptions(mcp_servers=str(tmp_path / "missing.json")).session_kwargs()
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(UsageError, match='"mcpServers" object'):
        AgentOptions(mcp_servers=tmp_path / "bad.json").session_kwargs()
    with pytest.raises(UsageError, match="given twice"):
        create_sdk_mcp_server("s", tools=[add_numbers, add_numbers])


def test_external_servers_go_to_the_kernel(tmp_path):
    from zpi_host.sdk import AgentOptions

    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"files": {"command": "files-server"}}}))
    options = AgentOptions(mcp_servers=config, strict_mcp_config=True, cwd=tmp_path)
    kwargs = options.session_kwargs()
    assert kwargs["mcp_servers"] == {"files": {"command": "files-server"}}
    assert kwargs["strict_mcp_config"] is True
    inline = AgentOptions(mcp_servers=json.dumps({"mcpServers": {"t": {"command": "t"}}}),
                          cwd=tmp_path).session_kwargs()
    assert inline["mcp_servers"] == {"t": {"command": "t"}}
    with pytest.raises(UsageError, match=r"^mcp_servers: no file .*nowhere\.json"):
        AgentOptions(mcp_servers=str(tmp_path / "nowhere.json"), cwd=tmp_path).session_kwargs()
    # in-process servers alone (strict or not) need no kernel support
    kwargs = AgentOptions(mcp_servers={"calc": calculator()}, strict_mcp_config=True
                          ).session_kwargs()
    assert [t.name for t in kwargs["custom_tools"]][:2] == ["mcp__calc__add",
                                                            "mcp__calc__divide"]
