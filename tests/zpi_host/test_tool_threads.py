"""Synchronous read-only tools run in worker threads: parallel calls really run together, the
event loop stays free, progress reaches the loop, results keep the model's order, and an abort
does not wait for a blocked thread."""

from __future__ import annotations

import threading

import anyio
import pytest

from zpi_host import hookimpl
from zpi_host.agent.events import ToolUpdateEvent
from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.providers.messages import ToolResultMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel
from zpi_host.tools.base import Tool, ToolMetadata, ToolResult
from zpi_host.tools.decorator import tool
from zpi_host.tools.threads import runs_in_thread

pytestmark = pytest.mark.anyio

SAFE = ToolMetadata(read_only=True, concurrency_safe=True, side_effects=False)
SCHEMA = {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"],
          "additionalProperties": False}


class ThreadTools:
    """``meet``: a sync tool that waits at a barrier for its partner call (only calls that
    run at the same time get through); ``where``: sync, reports its thread; ``where_unsafe``:
    the same, not read-only; ``block``: sync, blocks until released."""

    def __init__(self, parties: int = 2) -> None:
        self.barrier = threading.Barrier(parties, timeout=10)
        self.threads: dict[str, int] = {}
        self.release = threading.Event()
        self.blocked = threading.Event()

    def meet(self, args, ctx):
        ctx.update(f"{args['tag']} waiting")
        self.barrier.wait()
        self.threads[args["tag"]] = threading.get_ident()
        return ToolResult.text(f"met {args['tag']}")

    def where(self, args, ctx):
        self.threads[args["tag"]] = threading.get_ident()
        return ToolResult.text("here")

    def block(self, args, ctx):
        self.blocked.set()
        self.release.wait(10)
        return ToolResult.text("released")

    @hookimpl
    def zpi_register_tools(self):
        return [Tool("meet", "meet", SCHEMA, self.meet, SAFE),
                Tool("where", "where", SCHEMA, self.where, SAFE),
                Tool("where_unsafe", "where", SCHEMA, self.where, ToolMetadata()),
                Tool("block", "block", SCHEMA, self.block, SAFE)]


async def session_for(zpi_plugins, tmp_path, model, plugin):
    zpi_plugins.register(plugin, "thread-tools")
    host = PluginHost(PluginConfig(autoload=False)).load()
    return await create_session(model="test:model", provider=model, cwd=tmp_path, host=host)


def calls(*pairs):
    return {"tool_calls": [{"name": n, "arguments": {"tag": t}} for n, t in pairs]}


async def test_parallel_sync_calls_run_together_in_worker_threads(zpi_env, zpi_plugins,
                                                                  tmp_path):
    tools = ThreadTools(parties=3)
    model = ScriptedModel([calls(("meet", "a"), ("meet", "b"), ("meet", "c")),
                           {"text": "done"}])
    session = await session_for(zpi_plugins, tmp_path, model, tools)
    updates: list[str] = []
    session.subscribe(lambda e: updates.append(e.text) if isinstance(e, ToolUpdateEvent)
                      else None)
    result = await session.run("go")
    assert (result.result, result.is_error) == ("done", False)
    results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    assert [r.content[0].text for r in results] == ["met a", "met b", "met c"]  # model order
    loop_thread = threading.get_ident()
    assert loop_thread not in tools.threads.values()
    assert len(set(tools.threads.values())) == 3
    assert sorted(updates) == ["a waiting", "b waiting", "c waiting"]


async def test_only_sync_read_only_tools_leave_the_loop(zpi_env, zpi_plugins, tmp_path):
    tools = ThreadTools()
    model = ScriptedModel([calls(("where", "safe")), calls(("where_unsafe", "unsafe")),
                           {"text": "done"}])
    session = await session_for(zpi_plugins, tmp_path, model, tools)
    await session.run("go")
    assert tools.threads["safe"] != threading.get_ident()
    assert tools.threads["unsafe"] == threading.get_ident()


async def test_threaded_calls_nobody_listens_to_still_report_progress_harmlessly(
        zpi_env, zpi_plugins, tmp_path):
    """Without a ``tool_update`` receiver the threaded call keeps the no-op ``on_update``
    (no hand-over to the loop is built); its ``update`` calls from the thread do nothing."""
    tools = ThreadTools(parties=2)
    model = ScriptedModel([calls(("meet", "a"), ("meet", "b")), {"text": "done"}])
    session = await session_for(zpi_plugins, tmp_path, model, tools)
    seen: list[object] = []
    session.subscribe(seen.append, types=["tool_end"])
    result = await session.run("go")
    assert (result.result, result.is_error) == ("done", False)
    results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    assert [r.content[0].text for r in results] == ["met a", "met b"]
    assert threading.get_ident() not in tools.threads.values()
    assert len(set(tools.threads.values())) == 2
    assert len(seen) == 2 and not any(isinstance(e, ToolUpdateEvent) for e in seen)


def test_which_tools_run_in_threads() -> None:
    @tool(read_only=True, concurrency_safe=True)
    def sync_tool(tag: str) -> str:
        """A sync tool."""
        return tag

    @tool(read_only=True, concurrency_safe=True)
    async def async_tool(tag: str) -> str:
        """An async tool."""
        return tag

    @tool(read_only=True)
    def not_concurrent(tag: str) -> str:
        """Read-only, not concurrency-safe."""
        return tag

    assert runs_in_thread(sync_tool)
    assert not runs_in_thread(async_tool)
    assert not runs_in_thread(not_concurrent)


async def test_abort_does_not_wait_for_a_blocked_thread(zpi_env, zpi_plugins, tmp_path):
    tools = ThreadTools()
    model = ScriptedModel([calls(("block", "a"), ("block", "b")), {"text": "after"}])
    session = await session_for(zpi_plugins, tmp_path, model, tools)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run, "go")
            await anyio.to_thread.run_sync(tools.blocked.wait, 10)
            session.abort()
        results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
        assert [r.details.get("interrupted") for r in results] == [True, True]
        assert not tools.release.is_set()  # the run ended while the threads still block
    finally:
        tools.release.set()
