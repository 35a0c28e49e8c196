"""MCP: the host's cost of a tool call to a stdio server, and servers starting in parallel.

- call: ``--calls`` sequential calls of the test server's ``echo`` (tests/helpers/
  mcp_servers.py, a real subprocess over stdio), one model turn each (the scripted model),
  through the host's MCP service (``mcp__srv__echo``) against the same session work with a
  plain tool that makes the same call directly with the ``mcp`` SDK's ``ClientSession`` on a
  second instance of the same server and returns its text. Both sides run the same turns,
  permission checks, hooks and records: the ratio is the MCP service's own cost per call.
  Target: host / direct <= 1.2.
- call, whole turn (no target): the host's turns against the bare SDK calls alone, to show
  what a turn of the agent loop adds around a call.
- start: a session with three stdio servers that each take ``--delay`` seconds to initialise
  (create_session until it is ready, then disposed) against the same three started at once
  directly with the SDK (connect, initialize, list tools, close): the slowest server, with the
  same three processes competing for the machine. Target <= 1.2 (they start concurrently).
  Against one server started alone it is printed without a target. The servers are
  benchmarks/_waiting_mcp_server.py, which waits rather than computes (the tests' server
  spends over a second of CPU importing the ``mcp`` stack: three of them on two shared cores
  measure the machine).

    python benchmarks/mcp_servers.py [--rounds 7] [--calls 20] [--delay 0.3] [--quick]
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _measure import ainterleave, arguments, atimed, compare, emit

SERVER = Path(__file__).resolve().parents[1] / "tests" / "helpers" / "mcp_servers.py"
WAITING = Path(__file__).resolve().with_name("_waiting_mcp_server.py")
TARGET = 1.2


def server(**env: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVER)], "env": env}


def waiting(delay: float) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(WAITING), str(delay)]}


async def create(root: Path, servers: dict[str, Any], turns: list[Any], **options: Any) -> Any:
    from zpi_host.session.assembly import create_session
    from zpi_host.testing import ScriptedModel

    return await create_session(model="scripted:bench", provider=ScriptedModel(turns), cwd=root,
                                settings={"plugins": {"builtins": {"title": {"enabled": False}}}},
                                persist=False, mcp_servers=servers, permission_mode="bypass",
                                **options)


def direct_tool(client: Any) -> Any:
    """``direct_echo``: the SDK client's call of ``echo``, its text as the result (what the
    host's MCP tool does, without the host's MCP service)."""
    from zpi_host.tools import Tool, ToolMetadata, ToolResult

    async def execute(args: Any, ctx: Any) -> ToolResult:
        answer = await client.call_tool("echo", dict(args))
        text = answer.content[0].text
        return ToolResult.error(text) if answer.is_error else ToolResult.text(text)

    return Tool(name="direct_echo", description="echo through the SDK client",
                parameters={"type": "object", "properties": {"text": {"type": "string"}}},
                execute=execute, metadata=ToolMetadata(read_only=True, concurrency_safe=True,
                                                       side_effects=False))


@contextlib.asynccontextmanager
async def direct_client(env: dict[str, str] | None = None,
                        args: list[str] | None = None) -> Any:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=args or [str(SERVER)],
                                   env=env)
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as streams, \
                ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            await session.list_tools()
            yield session


async def measure_calls(root: Path, rounds: int, calls: int) -> list[Any]:
    def turns(tool: str) -> list[Any]:
        call = {"tool_calls": [{"name": tool, "arguments": {"text": "x"}}]}
        return ([call] * calls + ["done"]) * (rounds + 1)

    session = await create(root, {"srv": server()}, turns("mcp__srv__echo"))
    try:
        async with direct_client() as client:
            plain = await create(root, {}, turns("direct_echo"),
                                 custom_tools=[direct_tool(client)])

            async def host() -> None:
                result = await session.run("go")
                if result.is_error:
                    raise SystemExit(f"host run failed: {result.error}")

            async def through_tool() -> None:
                result = await plain.run("go")
                if result.is_error:
                    raise SystemExit(f"direct-tool run failed: {result.error}")

            async def bare() -> None:
                for _ in range(calls):
                    answer = await client.call_tool("echo", {"text": "x"})
                    if answer.content[0].text != "echo: x":
                        raise SystemExit(f"direct call answered {answer!r}")

            cpu: dict[str, list[float]] = {"host": [], "direct": []}

            def cpu_timed(name: str, fn: Any) -> Any:
                async def run() -> float:
                    started, wall = time.process_time(), time.perf_counter()
                    await fn()
                    wall = time.perf_counter() - wall
                    cpu[name].append(time.process_time() - started)
                    return wall
                return run

            try:
                samples = await ainterleave({"host": cpu_timed("host", host),
                                             "direct": cpu_timed("direct", through_tool),
                                             "bare": atimed(bare)}, rounds)
            finally:
                await plain.dispose()
        for done in (session, plain):
            results = [m for m in done.messages if m.role == "tool"]
            if len(results) != calls * (rounds + 1) or any(
                    m.is_error or m.content[0].text != "echo: x" for m in results):
                raise SystemExit("a call did not return the echo")
    finally:
        await session.dispose()
    return [compare(f"mcp_servers: {calls} stdio calls, host MCP tool vs SDK client in a tool",
                    samples["host"], samples["direct"], target=TARGET,
                    note="same turns either side; the direct side's tool calls the SDK client"),
            compare(f"mcp_servers: {calls} stdio calls, the same, this process's CPU time",
                    cpu["host"][1:], cpu["direct"][1:], op="", target=None,
                    note="process_time of the host process (the servers are other processes); "
                    "no target"),
            compare(f"mcp_servers: {calls} stdio calls, host turns vs bare SDK calls",
                    samples["host"], samples["bare"], op="", target=None,
                    note="one scripted model turn per host call; no target")]


async def measure_start(root: Path, rounds: int, delay: float) -> list[Any]:
    slow = {f"slow{i}": waiting(delay) for i in range(3)}

    async def host() -> None:
        session = await create(root, slow, ["done"])
        try:
            if not all(f"mcp__slow{i}__echo" in session.tools for i in range(3)):
                raise SystemExit(f"a server did not start: {session.warnings}")
        finally:
            await session.dispose()

    async def one() -> None:
        async with direct_client(args=[str(WAITING), str(delay)]):
            pass

    async def three() -> None:
        await asyncio.gather(one(), one(), one())

    samples = await ainterleave({"host": atimed(host), "three": atimed(three),
                                 "one": atimed(one)}, rounds)
    return [compare(f"mcp_servers: 3 servers of {delay:g} s start, session ready vs the 3 "
                    "started directly", samples["host"], samples["three"], target=TARGET,
                    note="create_session with 3 waiting servers / the same 3 started at once "
                    "with the SDK (the slowest of them)"),
            compare(f"mcp_servers: 3 servers of {delay:g} s start, session ready vs one alone",
                    samples["host"], samples["one"], op="", target=None,
                    note="create_session with 3 waiting servers / one started alone; no "
                    "target")]


async def amain(rounds: int, calls: int, delay: float) -> int:
    with tempfile.TemporaryDirectory(prefix="zpi-bench-") as tmp:
        root = Path(tmp).resolve()
        rows = [*await measure_calls(root, rounds, calls),
                *await measure_start(root, rounds, delay)]
    emit(rows, "mcp_servers")
    return 0


def main() -> int:
    args = arguments("mcp_servers", __doc__, rounds=7, quick={"rounds": 1, "calls": 3,
                                                             "delay": 0.05},
                     options=[("--calls", {"type": int, "default": 20,
                                           "help": "tool calls per round"}),
                              ("--delay", {"type": float, "default": 0.3,
                                           "help": "seconds each slow server takes to start"})],
                     minimum={"calls": 1})
    return asyncio.run(amain(args.rounds, args.calls, args.delay))


if __name__ == "__main__":
    raise SystemExit(main())
