"""The standard tools may read what the host hands the model, like the kernel's read."""

from __future__ import annotations

import re

import pytest

from zpi_host.sdk import AgentOptions, UserMessage, query
from zpi_host.testing import FunctionModel

from .conftest import collect

pytestmark = pytest.mark.anyio


async def test_read_may_open_spilled_output_and_skills_outside_the_workspace(scripted):
    skill = scripted.agent_dir / "skills" / "demo" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: demo\ndescription: a demo skill\n---\nThe skill body.\n")

    def model(request):
        done = [m for m in request.messages if m.role == "tool"]
        if not done:
            return {"tool_calls": [{"name": "Bash", "arguments": {
                "command": "for i in $(seq 1 9000); do echo line-$i; done"}}]}
        if len(done) == 1:
            spilled = re.search(r"(/\S+\.log)", done[0].content[0].text)
            assert spilled, done[0].content[0].text
            return {"tool_calls": [
                {"name": "Read", "arguments": {"file_path": spilled.group(1), "limit": 2}},
                {"name": "Read", "arguments": {"file_path": str(skill)}}]}
        return "done"

    options = AgentOptions(provider=FunctionModel(model), model="function:fn",
                           cwd=scripted.cwd, agent_dir=scripted.agent_dir,
                           allowed_tools=["Bash"])  # default mode: nothing else is allowed
    messages = await collect(query("go", options))
    bash, spilled, skill_body = [b for m in messages if isinstance(m, UserMessage)
                                 for b in m.content]
    assert not bash.is_error
    assert not spilled.is_error and "line-1" in spilled.content
    assert not skill_body.is_error and "The skill body." in skill_body.content
    assert "skills" in messages[0].data and messages[0].data["skills"] == ["demo"]


async def test_search_tools_are_placeholders_without_a_search_plugin(backend):
    backend.turns({"tool_calls": [{"name": "Grep", "arguments": {
        "pattern": "TODO", "output_mode": "content", "-n": True}}]}, "ok")
    messages = await collect(query("find TODOs", backend.options()))
    grep, = [b for m in messages if isinstance(m, UserMessage) for b in m.content]
    assert grep.is_error and "Grep is not supported" in grep.content
    assert messages[-1].subtype == "success"
    from zpi_host.sdk.tools import PLACEHOLDER_SCHEMAS

    assert {"pattern", "path", "glob", "type", "output_mode", "-i", "-n", "-A", "-B", "-C",
            "head_limit", "multiline"} == set(PLACEHOLDER_SCHEMAS["Grep"]["properties"])


async def test_a_plugin_search_tool_replaces_the_placeholder(scripted, zpi_plugins):
    from zpi_host import hookimpl
    from zpi_host.tools.base import Tool, ToolResult

    class Search:
        @hookimpl
        def zpi_register_tools(self):
            schema = {"type": "object", "properties": {"pattern": {"type": "string"}}}
            return [Tool("grep", "search", schema, lambda args, ctx: ToolResult.text("found"))]

    zpi_plugins.register(Search(), "search")
    scripted.turns("ok")
    messages = await collect(query("hi", scripted.options()))
    assert messages[0].data["tools"] == ["Grep", "Read", "Write", "Edit", "Bash", "Glob"]


async def test_a_claude_plugins_skill_tool_is_claudes_skill(scripted, zpi_env, tmp_path):
    from helpers.claude_folders import copy_plugin

    from zpi_host.sdk import SystemMessage

    zpi_env.set("ZPI_DISABLE_PLUGIN_AUTOLOAD", "")
    zpi_env.set("ZPI_LOAD_PLUGINS", "claude")
    plugin = copy_plugin("skills-kit", tmp_path / "plugins")
    scripted.turns({"tool_calls": [{"name": "Skill", "arguments": {
        "skill": "skills-kit:review", "args": "app.py"}}]}, "reviewed")
    messages = await collect(query("review", scripted.options(
        plugins=[{"type": "local", "path": str(plugin)}])))
    init = next(m for m in messages if isinstance(m, SystemMessage))
    assert "Skill" in init.data["tools"] and "skill" not in init.data["tools"]
    (result,) = [b for m in messages if isinstance(m, UserMessage) for b in m.content]
    assert not result.is_error and result.content.startswith("Base directory for this skill")
    assert messages[-1].result == "reviewed"
