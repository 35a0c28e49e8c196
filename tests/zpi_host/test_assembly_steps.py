"""create_session, step by step (DESIGN 4.3): options, cwd, agent dir, injected managers,
model choice, resources, prepared tools, selection rules, prompt, reasoning level."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zpi_host import hookimpl
from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.errors import UsageError
from zpi_host.providers.catalog import ModelEntry
from zpi_host.session.assembly import create_session
from zpi_host.session.tool_selection import AssemblyError
from zpi_host.settings.manager import SettingsManager
from zpi_host.testing import ScriptedModel
from zpi_host.tools.base import Tool, ToolResult
from zpi_host.transcript import SessionManager

pytestmark = pytest.mark.anyio


def bare_host() -> PluginHost:
    return PluginHost(PluginConfig(autoload=False)).load()


def make_tool(name: str) -> Tool:
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    return Tool(name, f"the {name} tool", schema, lambda args, ctx: ToolResult.text(name))


def sessions_in(agent_dir: Path) -> list[Path]:
    return sorted((agent_dir / "sessions").glob("*/*.jsonl"))


async def make(tmp_path: Path, **options):
    options.setdefault("host", bare_host())
    if "model" not in options:
        options.update(model="t:m", provider=ScriptedModel(["ok"]))
    options.setdefault("cwd", tmp_path)
    return await create_session(**options)


# ------------------------------------------------------------------------------ options


async def test_unknown_options_fail_before_anything_is_created(zpi_env, tmp_path):
    with pytest.raises(UsageError, match=r"unknown option\(s\) modle, toolz for create_session"):
        await create_session(modle="x", toolz=[])
    assert not (zpi_env.agent_dir / "sessions").exists()


@pytest.mark.parametrize(("options", "problem"), [
    ({"resume": "a", "continue_recent": True}, "resume and continue_recent each choose"),
    ({"resume": "a", "persist": False}, "cannot be combined with resume"),
    ({"continue_recent": True, "session_id": "x"}, "session_id names a new session"),
    ({"no_tools": True, "tools": ["read"]}, "no_tools and tools both choose"),
    ({"tools": ["read"], "exclude_tools": ["read"]}, "read are both in tools and exclude"),
    ({"tools": "read"}, "tools must be a list of tool names"),
    ({"reasoning_level": "maximum"}, "reasoning_level must be one of off, minimal"),
    ({"max_turns": 0}, "max_turns must be at least 1"),
    ({"provider": ScriptedModel([])}, "a provider object needs a model name"),
])
async def test_conflicting_options_are_one_clear_error(zpi_env, tmp_path, options, problem):
    with pytest.raises(UsageError, match="invalid session options") as info:
        await create_session(cwd=tmp_path, **options)
    assert problem in str(info.value)
    assert not (zpi_env.agent_dir / "sessions").exists()


# ------------------------------------------------------------------- cwd and agent dir


async def test_cwd_explicit_then_the_process_never_the_resumed_record(
        zpi_env, tmp_path, monkeypatch):
    """A transcript's header is data: resuming from another directory works there (the
    user's choice) and says where the session was recorded."""
    project, other = tmp_path / "project", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    first = await make(project)
    await first.run("hi")
    await first.dispose()
    monkeypatch.chdir(other)
    resumed = await make(tmp_path, cwd=None, resume=first.session_id,
                         model="t:m", provider=ScriptedModel(["again"]))
    assert resumed.cwd == other.resolve()
    assert any(f"was recorded in {project.resolve()}; this run works in {other.resolve()}"
               in w for w in resumed.warnings), resumed.warnings
    await resumed.dispose()
    same = await make(project, resume=first.session_id, model="t:m",
                      provider=ScriptedModel(["again"]))
    assert same.cwd == project.resolve()
    assert not any("was recorded in" in w for w in same.warnings)
    await same.dispose()
    fresh = await make(tmp_path, cwd=None)
    assert fresh.cwd == other.resolve()
    await fresh.dispose()
    with pytest.raises(UsageError, match="does not exist"):
        await make(tmp_path, cwd=tmp_path / "missing")


async def test_agent_dir_from_option_then_environment(zpi_env, tmp_path):
    session = await make(tmp_path)
    await session.run("hi")
    await session.dispose()
    assert len(sessions_in(zpi_env.agent_dir)) == 1
    elsewhere = tmp_path / "agent2"
    session = await make(tmp_path, agent_dir=elsewhere)
    await session.run("hi")
    await session.dispose()
    assert session.agent_dir == elsewhere.resolve()
    assert len(sessions_in(elsewhere)) == 1


async def test_injected_managers_are_used_as_they_are(zpi_env, tmp_path):
    store = SessionManager.in_memory(cwd=tmp_path)
    settings = SettingsManager.in_memory({"tools": {"output_limit_bytes": 4096}})
    session = await make(tmp_path, session_manager=store, settings=settings)
    assert session.store is store and session.settings_manager is settings
    assert session.settings["tools"]["output_limit_bytes"] == 4096
    await session.run("hi")
    await session.dispose()
    assert not (zpi_env.agent_dir / "sessions").exists()


async def test_no_session_writes_no_file(zpi_env, tmp_path):
    session = await make(tmp_path, persist=False)
    result = await session.run("hi")
    await session.dispose()
    assert result.result == "ok" and len(result.session_id) == 36
    assert not (zpi_env.agent_dir / "sessions").exists()


# ------------------------------------------------------------------------------ model


def write_settings(agent_dir: Path, data: dict) -> None:
    (agent_dir / "settings.json").write_text(json.dumps(data))


async def test_model_explicit_then_settings_then_first_with_credentials(zpi_env, tmp_path):
    script = tmp_path / "s.jsonl"
    script.write_text('{"text": "scripted"}\n' * 3)
    write_settings(zpi_env.agent_dir, {"models": {
        "nokey": {"provider": "openai", "model": "gpt-x"},
        "offline": {"provider": "scripted", "model": str(script)},
    }})
    host = bare_host()
    session = await create_session(cwd=tmp_path, host=host)  # first with credentials
    assert (session.provider.name, session.model_entry.name) == ("scripted", "offline")
    await session.dispose()
    write_settings(zpi_env.agent_dir, {"model": "offline", "models": {
        "offline": {"provider": "scripted", "model": str(script)}}})
    session = await create_session(cwd=tmp_path, host=host)
    assert session.model_entry.name == "offline"
    await session.dispose()
    session = await create_session(cwd=tmp_path, host=host, model=f"scripted:{script}")
    assert session.provider.model == str(script)
    await session.dispose()


async def test_a_model_without_credentials_cannot_be_chosen(zpi_env, tmp_path):
    write_settings(zpi_env.agent_dir, {"models": {"gpt": {"provider": "openai",
                                                          "model": "gpt-x"}}})
    with pytest.raises(UsageError, match=r"model 'gpt' \(chosen explicitly\) has no API key: "
                                         r"set environment variable OPENAI_API_KEY"):
        await create_session(cwd=tmp_path, host=bare_host(), model="gpt")
    with pytest.raises(UsageError, match=r"no credentials: gpt \(set environment variable "
                                         r"OPENAI_API_KEY\)"):
        await create_session(cwd=tmp_path, host=bare_host())
    assert not (zpi_env.agent_dir / "sessions").exists()
    zpi_env.set("OPENAI_API_KEY", "sk-test")
    session = await create_session(cwd=tmp_path, host=bare_host(), model="gpt")
    assert session.provider.name == "openai"
    await session.dispose()


async def test_resume_uses_the_sessions_last_model(zpi_env, tmp_path):
    script = tmp_path / "s.jsonl"
    script.write_text('{"text": "one"}\n')
    first = await create_session(cwd=tmp_path, host=bare_host(), model=f"scripted:{script}")
    await first.run("hi")
    await first.dispose()
    again = await create_session(cwd=tmp_path, host=bare_host(), resume=first.session_id)
    assert (again.provider.name, again.provider.model) == ("scripted", str(script))
    await again.dispose()


# ------------------------------------------------------------- resources and the prompt


async def test_skills_and_context_files_reach_the_prompt(zpi_env, tmp_path):
    skill = tmp_path / ".zpi" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: release-notes\ndescription: Write release "
                                    "notes from the changelog\n---\nSECRET BODY\n")
    (tmp_path / "AGENTS.md").write_text("Use tabs in this project.\n")
    model = ScriptedModel(["ok"])
    session = await make(tmp_path, model="t:m", provider=model)
    await session.run("hi")
    await session.dispose()
    prompt = model.requests[0].system_prompt
    assert "release-notes" in prompt and "Write release notes" in prompt
    assert str(skill / "SKILL.md") in prompt and "SECRET BODY" not in prompt
    assert "Use tabs in this project." in prompt


async def test_a_malformed_skill_is_a_warning_not_a_failure(zpi_env, tmp_path):
    skill = tmp_path / ".zpi" / "skills" / "Bad_Name"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\ndescription: x\n---\nbody\n")
    session = await make(tmp_path)
    events = []
    session.subscribe(events.append)
    await session.run("hi")
    await session.dispose()
    warnings = [e.message for e in events if e.type == "warning"]
    assert any("Bad_Name" in w for w in warnings)


class Preparer:
    @hookimpl
    def zpi_prepare_tools(self, tools, resources):
        names = [s.name for s in resources.skills]
        return [make_tool("skill")] if names or len(tools) == 4 else []


async def test_prepare_tools_adds_tools_that_depend_on_resources(zpi_env, zpi_plugins,
                                                                 tmp_path):
    zpi_plugins.register(Preparer(), "preparer")
    session = await make(tmp_path, host=bare_host())
    assert sorted(session.tools) == ["bash", "edit", "read", "skill", "write"]
    await session.dispose()


async def test_selection_rules(zpi_env, tmp_path):
    custom = make_tool("deploy")
    session = await make(tmp_path, custom_tools=[custom], exclude_tools=["bash"])
    assert sorted(session.tools) == ["deploy", "edit", "read", "write"]
    await session.dispose()
    session = await make(tmp_path, no_tools=True, custom_tools=[custom])
    assert sorted(session.tools) == ["deploy"]
    await session.dispose()
    session = await make(tmp_path, tools=["read", "deploy"], custom_tools=[custom])
    assert list(session.tools) == ["read", "deploy"]
    await session.dispose()
    override = make_tool("bash")
    session = await make(tmp_path, tool_overrides=[override])
    assert session.tools["bash"] is override
    await session.dispose()
    with pytest.raises(UsageError, match="custom_tools: 'read' collides with the tool of "
                                         r"'zpi\.tools'"):
        await make(tmp_path, custom_tools=[make_tool("read")])
    with pytest.raises(UsageError, match="tool_overrides: 'grep' is not a known tool"):
        await make(tmp_path, tool_overrides=[make_tool("grep")])
    with pytest.raises(UsageError, match=r"exclude_tools: unknown tool\(s\) grep"):
        await make(tmp_path, exclude_tools=["grep"])
    with pytest.raises(UsageError, match="custom_tools: 'deploy' is given twice"):
        await make(tmp_path, custom_tools=[custom, make_tool("deploy")])
    with pytest.raises(AssemblyError, match="given in custom_tools"):
        await make(tmp_path, custom_tools=["not a tool"])


async def test_hidden_tools_are_left_out_when_present_and_ignored_when_absent(
        zpi_env, tmp_path):
    """What the SDK uses for tools its standard ones stand in for (task_output exists only
    with the task service)."""
    custom = make_tool("task_output")
    session = await make(tmp_path, custom_tools=[custom],
                         hide_tools=["task_output", "task_stop"])
    assert sorted(session.tools) == ["bash", "edit", "read", "write"]
    await session.dispose()


async def test_reasoning_level_restored_and_clamped(zpi_env, tmp_path):
    reasoning = ModelEntry(name="r", provider="t", model="m", reasoning=True)
    model = ScriptedModel(["ok", "ok"])
    model.entry = reasoning  # type: ignore[attr-defined]
    session = await make(tmp_path, model="t:m", provider=model, reasoning_level="high")
    assert session.reasoning_level == "high"
    await session.run("hi")
    await session.dispose()
    assert model.requests[0].reasoning_level == "high"
    plain = ScriptedModel(["ok"])
    plain.entry = ModelEntry(name="p", provider="t", model="m")  # type: ignore[attr-defined]
    again = await make(tmp_path, model="t:m", provider=plain, resume=session.session_id)
    assert again.reasoning_level == "off"  # the model does not reason: clamped
    await again.run("hi")
    await again.dispose()
    thinking = ScriptedModel(["ok"])
    thinking.entry = reasoning  # type: ignore[attr-defined]
    third = await make(tmp_path, model="t:m", provider=thinking, resume=session.session_id)
    assert third.reasoning_level == "off"  # restored from the session's last record
    await third.dispose()
