"""Plugin agents written for Claude Code: their ``tools:`` in Claude's names run with this
host's tools; a name without a counterpart is dropped with a warning."""

from __future__ import annotations

import pytest
from helpers.claude_folders import claude_settings, load_host

from zpi_host.providers.messages import ToolResultMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import FunctionModel

pytestmark = pytest.mark.anyio


def calls(*pairs) -> dict:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in pairs]}


async def test_a_plugin_agent_naming_claude_tools_runs_with_this_hosts(zpi_env, tmp_path):
    """feature-dev's code-explorer names Claude Code's tools; the agent runs with the CLI's
    counterparts, and a name without one is dropped with a warning (not a refused agent)."""
    plugin = tmp_path / "plugins" / "feature-dev"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "feature-dev"}')
    (plugin / "agents").mkdir()
    (plugin / "agents" / "code-explorer.md").write_text(
        "---\nname: code-explorer\ndescription: traces code\n"
        "tools: Glob, Grep, LS, Read, NotebookRead, WebFetch, TodoWrite, WebSearch, "
        "KillShell, BashOutput, SlashCommand\nmodel: inherit\n---\nYou trace code.\n")
    workspace = tmp_path / "work"
    workspace.mkdir()
    host = load_host(claude_settings([plugin]), workspace)
    seen = []

    def answer(request):
        seen.append(request)
        if request.system_prompt.startswith("You trace code"):
            return "traced"
        if len(seen) == 1:
            return calls(("task", {"agent_type": "feature-dev:code-explorer",
                                   "description": "trace", "prompt": "trace main"}))
        return "done"

    session = await create_session(model="t:m", provider=FunctionModel(answer),
                                   cwd=workspace, host=host)
    warnings = []
    session.subscribe(lambda e: warnings.append(e.message), types={"warning"})
    try:
        await session.run("explore")
    finally:
        await session.dispose()
    (result,) = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    assert not result.is_error and result.content[0].text == "traced"
    assert {t.name for t in seen[1].tools} == {
        "glob", "grep", "ls", "read", "notebook_read", "web_fetch", "todo_write",
        "web_search", "task_stop", "task_output"}
    assert any("SlashCommand" in w and "code-explorer" in w for w in warnings)
