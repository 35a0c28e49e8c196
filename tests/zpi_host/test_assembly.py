"""create_session: providers, tool collisions and overrides, tool selection, prompt hooks."""

from __future__ import annotations

import pytest

from zpi_host import hookimpl
from zpi_host.contract.decisions import Instruction
from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.errors import UsageError
from zpi_host.session.assembly import AssemblyError, create_session
from zpi_host.testing import ScriptedModel
from zpi_host.tools.base import Tool, ToolResult

pytestmark = pytest.mark.anyio


def make_tool(name: str, text: str = "ok") -> Tool:
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    return Tool(name, f"the {name} tool", schema, lambda args, ctx: ToolResult.text(text))


def host_with(zpi_plugins, **plugins) -> PluginHost:
    for name, plugin in plugins.items():
        zpi_plugins.register(plugin, name)
    return PluginHost(PluginConfig(autoload=False)).load()


async def test_scripted_provider_through_the_kernel_plugin(zpi_env, tmp_path):
    script = tmp_path / "s.jsonl"
    script.write_text('{"text": "hello from the script"}\n')
    session = await create_session(model=f"scripted:{script}", cwd=tmp_path,
                                   host=PluginHost(PluginConfig(autoload=False)).load())
    assert sorted(session.tools) == ["bash", "edit", "read", "write"]
    assert (await session.run("hi")).result == "hello from the script"
    await session.dispose()


async def test_unknown_provider_and_bad_options(zpi_env, tmp_path):
    host = PluginHost(PluginConfig(autoload=False)).load()
    with pytest.raises(UsageError, match=r"unknown model provider 'nosuch' \(installed: "
                                         r"anthropic, openai, openai-responses, scripted\)"):
        await create_session(model="nosuch:gpt-x", cwd=tmp_path, host=host)
    with pytest.raises(UsageError, match="max_turns must be at least 1"):
        await create_session(model="scripted:x", cwd=tmp_path, host=host, max_turns=0)
    with pytest.raises(UsageError, match="unknown tool"):
        await create_session(model="t:m", provider=ScriptedModel([]), cwd=tmp_path,
                             host=host, tools=["read", "grep"])


async def test_tool_selection_keeps_only_named_tools(zpi_env, tmp_path):
    host = PluginHost(PluginConfig(autoload=False)).load()
    session = await create_session(model="t:m", provider=ScriptedModel([]), cwd=tmp_path,
                                   host=host, tools=["read", "bash"])
    assert sorted(session.tools) == ["bash", "read"]


class Duplicate:
    @hookimpl
    def zpi_register_tools(self):
        return [make_tool("read")]


async def test_a_tool_name_clash_fails_only_the_later_plugin(zpi_env, zpi_plugins, tmp_path):
    """A plugin registering a kernel tool's name fails alone, though it is called first; the
    session keeps the kernel's tool and says why the plugin failed."""
    host = host_with(zpi_plugins, dup=Duplicate())
    session = await create_session(model="t:m", provider=ScriptedModel([]), cwd=tmp_path,
                                   host=host)
    assert session.tools["read"].description != "the read tool"
    record = host.get("dup")
    assert record.status == "failed" and host.implemented_hooks("dup") == []
    assert "its tool 'read' is already registered by plugin 'zpi.tools'" in record.error
    assert any("plugin 'dup' failed" in w and "'read'" in w for w in session.warnings)
    await session.dispose()


class Override:
    @hookimpl
    def zpi_tool_overrides(self):
        return [make_tool("bash", "sandboxed bash")]


class BadOverride:
    @hookimpl
    def zpi_tool_overrides(self):
        return [make_tool("grep")]


async def test_overrides_replace_kernel_tools_only(zpi_env, zpi_plugins, tmp_path):
    host = host_with(zpi_plugins, sandbox=Override())
    session = await create_session(model="t:m", provider=ScriptedModel([]), cwd=tmp_path,
                                   host=host)
    assert session.tools["bash"].description == "the bash tool"
    bad = host_with(zpi_plugins, badover=BadOverride())
    with pytest.raises(AssemblyError, match="only the kernel tools read, write, edit, bash"):
        await create_session(model="t:m", provider=ScriptedModel([]), cwd=tmp_path, host=bad)


class Prompted:
    @hookimpl
    def zpi_instructions(self):
        return Instruction("Always run the tests.")

    @hookimpl
    def zpi_system_prompt(self, prompt, tools):
        return prompt + f"\nTools: {', '.join(sorted(t.name for t in tools))}"


async def test_system_prompt_through_instructions_and_hook(zpi_env, zpi_plugins, tmp_path):
    host = host_with(zpi_plugins, prompted=Prompted())
    model = ScriptedModel(["ok"])
    session = await create_session(model="t:m", provider=model, cwd=tmp_path, host=host,
                                   tools=["read"])
    await session.run("hi")
    prompt = model.requests[0].system_prompt
    assert str(tmp_path.resolve()) in prompt
    assert "Always run the tests." in prompt and prompt.endswith("Tools: read")
