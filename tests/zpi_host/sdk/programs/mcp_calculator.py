"""A calculator as an in-process MCP server, written as for claude-agent-sdk (in the style of
its examples/mcp_calculator.py): only the import line names zpi_host.sdk.

Run by tests/zpi_host/sdk/test_mcp_program.py with the model and its address in the
environment; prints one JSON line per message, then what the tools were called with.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from zpi_host.sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)

CALLS: list[dict[str, Any]] = []


@tool("add", "Add two numbers", {"a": float, "b": float})
async def add_numbers(args: dict[str, Any]) -> dict[str, Any]:
    CALLS.append({"tool": "add", "args": args, "pid": os.getpid()})
    result = args["a"] + args["b"]
    return {"content": [{"type": "text", "text": f"{args['a']} + {args['b']} = {result}"}]}


@tool("multiply", "Multiply two numbers", {"a": float, "b": float})
async def multiply_numbers(args: dict[str, Any]) -> dict[str, Any]:
    CALLS.append({"tool": "multiply", "args": args, "pid": os.getpid()})
    result = args["a"] * args["b"]
    return {"content": [{"type": "text", "text": f"{args['a']} * {args['b']} = {result}"}]}


@tool("divide", "Divide one number by another", {"a": float, "b": float})
async def divide_numbers(args: dict[str, Any]) -> dict[str, Any]:
    CALLS.append({"tool": "divide", "args": args, "pid": os.getpid()})
    if args["b"] == 0:
        return {"content": [{"type": "text", "text": "Error: Division by zero is not allowed"}],
                "is_error": True}
    return {"content": [{"type": "text", "text": f"{args['a']} / {args['b']} = "
                                                 f"{args['a'] / args['b']}"}]}


def show(message: Any) -> None:
    out: dict[str, Any] = {"type": type(message).__name__}
    if isinstance(message, AssistantMessage):
        out["blocks"] = [{"text": b.text} if isinstance(b, TextBlock) else
                         {"tool_use": b.name, "input": b.input}
                         for b in message.content if isinstance(b, TextBlock | ToolUseBlock)]
    elif isinstance(message, UserMessage) and not isinstance(message.content, str):
        out["results"] = [{"content": b.content, "is_error": b.is_error}
                          for b in message.content if isinstance(b, ToolResultBlock)]
    elif isinstance(message, SystemMessage):
        out["mcp_servers"] = message.data.get("mcp_servers")
    elif isinstance(message, ResultMessage):
        out["result"] = message.result
    print(json.dumps(out), flush=True)


async def main() -> None:
    calculator = create_sdk_mcp_server(name="calculator", version="2.0.0",
                                       tools=[add_numbers, multiply_numbers, divide_numbers])
    options = ClaudeAgentOptions(
        mcp_servers={"calc": calculator},
        allowed_tools=["mcp__calc__add", "mcp__calc__multiply", "mcp__calc__divide"],
        cwd=sys.argv[1],
    )
    async for message in query(prompt="What is 15 + 27?", options=options):
        show(message)
    async with ClaudeSDKClient(options=options) as client:
        await client.query("Now divide 100 by 0, then multiply 6 by 7")
        async for message in client.receive_response():
            show(message)
        status = await client.get_mcp_status()
        print(json.dumps({"type": "status", "servers": status["mcpServers"]}), flush=True)
    print(json.dumps({"type": "calls", "calls": CALLS, "pid": os.getpid()}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
