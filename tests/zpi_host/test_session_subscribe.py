"""session.subscribe(callback, types): only the wanted events, and no work for unwanted ones."""

from __future__ import annotations

import pytest

from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel
from zpi_host.tools.base import Tool, ToolMetadata, ToolResult

pytestmark = pytest.mark.anyio


def progress_tool(contexts: list) -> Tool:
    def run(args, ctx):
        contexts.append(ctx)
        ctx.update("half way")
        return ToolResult.text("done")

    schema = {"type": "object", "properties": {}}
    return Tool("work", "reports progress", schema, run, ToolMetadata(read_only=True))


async def test_typed_subscribers_get_only_their_events(zpi_env, tmp_path):
    zpi_env.set("ZPI_DISABLE_PLUGIN_AUTOLOAD", "1")
    contexts: list = []
    turns = [{"tool_calls": [{"name": "work", "arguments": {}}]}, "ok"]
    session = await create_session(model="scripted:x", provider=ScriptedModel(turns),
                                   cwd=tmp_path, persist=False, no_tools=True,
                                   custom_tools=[progress_tool(contexts)])
    typed: list[str] = []
    session.subscribe(lambda e: typed.append(e.type), types={"tool_end", "run_end"})
    try:
        await session.run("go")
        assert typed == ["tool_end", "run_end"]
        everything: list[str] = []
        unsubscribe = session.subscribe(lambda e: everything.append(e.type))
        session.provider = ScriptedModel(turns)
        await session.run("again")
        unsubscribe()
    finally:
        await session.dispose()
    assert "tool_update" in everything and "tool_start" in everything
    assert typed.count("tool_end") == 2
    assert session.wants_event("tool_update") is False
