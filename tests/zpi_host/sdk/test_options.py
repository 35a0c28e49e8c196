"""AgentOptions: claude-agent-sdk's names mapped onto the session, refusals named."""

from __future__ import annotations

import json

import pytest

from zpi_host.errors import UsageError
from zpi_host.sdk import (
    AgentOptions,
    ClaudeAgentOptions,
    ResultMessage,
    SystemMessage,
    UnsupportedOptionError,
    UserMessage,
    query,
)
from zpi_host.sdk.options import UNSUPPORTED

from .conftest import collect

pytestmark = pytest.mark.anyio

UNSUPPORTED_VALUES = {
    "betas": ["x"],
    "permission_prompt_tool_name": "mcp__ask", "cli_path": "/usr/bin/claude",
    "max_buffer_size": 10, "user": "bob",
    "verbatim_prompts": True,
    "skills": "all",
    "sandbox": {"enabled": True},
    "task_budget": {"total": 1},
    "client_app": "me",
}


def test_the_alias_is_the_same_class():
    assert ClaudeAgentOptions is AgentOptions


def test_every_refusal_is_tested():
    assert set(UNSUPPORTED) == set(UNSUPPORTED_VALUES)


async def test_extra_args_understands_only_replay_user_messages(scripted):
    options = scripted.turns("x").options(extra_args={"--x": None,
                                                      "replay-user-messages": None})
    with pytest.raises(UnsupportedOptionError, match=r"option 'extra_args'.*--x"):
        await collect(query("hi", options))


@pytest.mark.parametrize("name", sorted(UNSUPPORTED_VALUES))
async def test_an_option_this_host_cannot_honour_is_refused_by_name(scripted, name):
    options = scripted.turns("x").options(**{name: UNSUPPORTED_VALUES[name]})
    with pytest.raises(UnsupportedOptionError, match=f"option '{name}'") as info:
        await collect(query("hi", options))
    assert info.value.option == name
    assert isinstance(info.value, UsageError)


@pytest.mark.parametrize(("field", "value", "match"), [
    ("permission_mode", "auto", "permission_mode"),
    ("effort", "maximum", "effort"),
    ("thinking", {"type": "enabled"}, "thinking budget_tokens must be a whole number"),
    ("thinking", {"type": "enabled", "budget_tokens": 100}, ">= 1024"),
    ("thinking", {"type": "on"}, "option 'thinking'"),
    ("thinking", "adaptive", "option 'thinking'"),
    ("thinking", {"type": "adaptive", "display": "omitted"}, "display 'omitted'"),
    ("max_thinking_tokens", 100, "max_thinking_tokens must be a whole number"),
    ("max_thinking_tokens", -1, "max_thinking_tokens"),
    ("max_budget_usd", 0, "max_budget_usd"),
    ("setting_sources", ["global"], "setting_sources"),
    ("setting_sources", "user", "setting_sources"),
    ("plugins", [{"type": "remote", "url": "x"}], "plugins"),
    ("system_prompt", {"type": "unknown"}, "system_prompt"),
    ("tools", "Read", "tools"),
])
def test_bad_values_are_refused_with_the_option_name(field, value, match):
    with pytest.raises(UsageError, match=match):
        AgentOptions(**{field: value}).session_kwargs()


@pytest.mark.parametrize(("options", "expected"), [
    ({}, {}),
    ({"effort": "low"}, {"reasoning_level": "low"}),
    ({"effort": "xhigh"}, {"reasoning_level": "max"}),
    ({"effort": "max"}, {"reasoning_level": "max"}),
    ({"thinking": {"type": "disabled"}, "effort": "high"}, {"reasoning_level": "off"}),
    ({"thinking": {"type": "adaptive"}}, {"reasoning_level": "high"}),
    ({"thinking": {"type": "adaptive", "display": "summarized"}, "effort": "medium"},
     {"reasoning_level": "medium"}),
    ({"thinking": {"type": "enabled", "budget_tokens": 5000}},
     {"reasoning_level": "medium", "thinking_budget": 5000}),
    ({"thinking": {"type": "enabled", "budget_tokens": 5000}, "effort": "high"},
     {"reasoning_level": "high", "thinking_budget": 5000}),
    ({"max_thinking_tokens": 20_000}, {"reasoning_level": "max", "thinking_budget": 20_000}),
    ({"max_thinking_tokens": 0}, {"reasoning_level": "off"}),
    ({"max_thinking_tokens": 4000, "thinking": {"type": "disabled"}},  # thinking wins
     {"reasoning_level": "off"}),
])
def test_thinking_options_map_onto_the_reasoning_level_and_budget(options, expected):
    kwargs = AgentOptions(**options).session_kwargs()
    got = {k: kwargs[k] for k in ("reasoning_level", "thinking_budget") if k in kwargs}
    assert got == expected


def test_resume_and_continue_exclude_each_other():
    with pytest.raises(UsageError, match="resume and continue_conversation"):
        AgentOptions(resume="x", continue_conversation=True).session_kwargs()
    with pytest.raises(UsageError, match="fork_session"):
        AgentOptions(fork_session=True).session_kwargs()


@pytest.mark.parametrize(("mode", "kernel"), [
    (None, "ask"), ("default", "ask"), ("acceptEdits", "ask"), ("plan", "plan"),
    ("bypassPermissions", "bypass"), ("dontAsk", "ask"),
])
def test_permission_modes_map_onto_the_kernel_modes(mode, kernel):
    kwargs = AgentOptions(permission_mode=mode, allowed_tools=["Bash(git status:*)"],
                          disallowed_tools=["Bash(rm:*)", "Write"]).session_kwargs()
    assert kwargs["permission_mode"] == kernel
    assert kwargs["allow"] == ["Bash(git status:*)", "agent:*"]  # sub-agents start freely
    assert kwargs["deny"] == ["Bash(rm:*)"]  # "Write" alone is removed, not denied
    assert kwargs["exclude_tools"] == ["read", "write", "edit", "bash", "Write"]


def test_settings_json_text_or_file(tmp_path):
    assert AgentOptions(settings='{"model": "a:b"}').session_kwargs()["settings"] == {
        "model": "a:b"}
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"reasoning_level": "low"}))
    assert AgentOptions(settings=str(path)).session_kwargs()["settings"] == {
        "reasoning_level": "low"}
    assert AgentOptions(setting_sources=[]).session_kwargs()["setting_sources"] == []
    assert AgentOptions(setting_sources=["local", "user"]).session_kwargs()[
        "setting_sources"] == ["local", "user"]
    assert "setting_sources" not in AgentOptions().session_kwargs()  # None: every file
    with pytest.raises(UsageError, match="cannot be read"):
        AgentOptions(settings=str(tmp_path / "missing.json")).session_kwargs()


async def test_a_string_system_prompt_replaces_the_prompt(scripted):
    scripted.turns("a", "b")
    await collect(query("hi", scripted.options(system_prompt="You are a pirate.")))
    assert scripted.scripted.requests[0].system_prompt == "You are a pirate."
    preset = {"type": "preset", "preset": "claude_code", "append": "Always answer in French."}
    await collect(query("hi", scripted.options(system_prompt=preset)))
    prompt = scripted.scripted.requests[0].system_prompt
    assert prompt.startswith("You are a coding agent") and prompt.endswith(
        "Always answer in French.")


async def test_no_system_prompt_sends_none_of_the_hosts(backend):
    """``system_prompt=None`` (the default): no coding prompt, as claude-agent-sdk sends
    none; with no context file nor skill, the request has no system prompt at all."""
    backend.turns("a")
    await collect(query("hi", backend.options()))
    request = backend.requests()[0]
    if backend.kind == "scripted":
        assert request.system_prompt == ""
    elif backend.kind == "anthropic":
        assert "system" not in request
    else:
        assert [m["role"] for m in request["messages"]] == ["user"]


async def test_no_system_prompt_keeps_the_context_files(scripted):
    (scripted.cwd / "AGENTS.md").write_text("project rule")
    scripted.turns("a")
    await collect(query("hi", scripted.options()))
    prompt = scripted.scripted.requests[0].system_prompt
    assert "project rule" in prompt and "coding agent" not in prompt


async def test_tools_picks_and_disallowed_tools_removes(scripted):
    scripted.turns("a", "b")
    messages = await collect(query("hi", scripted.options(tools=["Read", "Bash"])))
    assert messages[0].data["tools"] == ["Read", "Bash"]
    messages = await collect(query("hi", scripted.options(
        disallowed_tools=["Bash", "Write", "Grep", "WebSearch", "ExitPlanMode"])))
    assert messages[0].data["tools"] == ["Read", "Edit", "Glob"]
    warnings = [m.data["message"] for m in messages
                if isinstance(m, SystemMessage) and m.subtype == "warning"]
    # no noise about Bash, Write, nor WebSearch (builtins:web's, absent here, like TaskOutput)
    assert len(warnings) == 1 and "ExitPlanMode" in warnings[0]
    scripted.turns("c")
    messages = await collect(query("hi", scripted.options(tools=[])))
    assert messages[0].data["tools"] == []


async def test_claude_rule_syntax_in_allowed_and_disallowed_tools(backend):
    (backend.cwd / "src").mkdir()
    (backend.cwd / "src" / "a.py").write_text("x = 1\n")
    (backend.cwd / "b.py").write_text("y = 1\n")
    backend.turns(
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "git status --short"}},
                        {"name": "Bash", "arguments": {"command": "rm -rf src"}},
                        {"name": "Bash", "arguments": {"command": "echo hi"}}]},
        {"tool_calls": [{"name": "Read", "arguments": {"file_path": "src/a.py"}},
                        {"name": "Read", "arguments": {"file_path": "b.py"}}]},
        {"tool_calls": [{"name": "Edit", "arguments": {
            "file_path": "src/a.py", "old_string": "x = 1", "new_string": "x = 2"}},
                        {"name": "Edit", "arguments": {
            "file_path": "b.py", "old_string": "y = 1", "new_string": "y = 2"}}]},
        "done")
    options = backend.options(allowed_tools=["Bash(git status:*)", "Edit(src/**)"],
                              disallowed_tools=["Bash(rm:*)"])
    messages = await collect(query("work", options))
    results = [b for m in messages if isinstance(m, UserMessage) for b in m.content]
    git, rm, echo, read_a, read_b, edit_a, edit_b = results
    assert "permission denied" not in git.content  # allowed by rule (git itself may fail)
    assert rm.is_error and "Bash(rm:*)" in rm.content
    assert echo.is_error and "approv" in echo.content  # default mode asks; nobody to ask
    assert not read_a.is_error and not read_b.is_error  # reading is allowed
    assert not edit_a.is_error and edit_b.is_error
    assert (backend.cwd / "src" / "a.py").read_text() == "x = 2\n"
    assert (backend.cwd / "b.py").read_text() == "y = 1\n"
    assert (backend.cwd / "src").is_dir()
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert [d["tool_name"] for d in result.permission_denials] == ["Bash", "Bash", "Edit"]


async def test_accept_edits_allows_file_changes_but_asks_for_bash(scripted):
    scripted.turns("nothing yet")  # with tools=["Read"] the mode's rules are no warning
    messages = await collect(query("hi", scripted.options(permission_mode="acceptEdits",
                                                          tools=["Read"])))
    assert not [m for m in messages if isinstance(m, SystemMessage) and m.subtype == "warning"]
    scripted.turns({"tool_calls": [
        {"name": "Write", "arguments": {"file_path": "n.txt", "content": "1"}},
        {"name": "Bash", "arguments": {"command": "echo hi > m.txt"}}]}, "ok")
    messages = await collect(query("go", scripted.options(permission_mode="acceptEdits")))
    write, bash = [b for m in messages if isinstance(m, UserMessage) for b in m.content]
    assert not write.is_error and bash.is_error
    assert (scripted.cwd / "n.txt").exists() and not (scripted.cwd / "m.txt").exists()


async def test_env_reaches_bash(scripted):
    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {
        "command": "echo $GREETING"}}]}, "ok")
    options = scripted.options(env={"GREETING": "hello-from-env"},
                               permission_mode="bypassPermissions")
    messages = await collect(query("go", options))
    result = next(b for m in messages if isinstance(m, UserMessage) for b in m.content)
    assert "hello-from-env" in result.content


async def test_stderr_receives_warnings(scripted, tmp_path):
    agent_dir = scripted.agent_dir
    (agent_dir / "settings.json").write_text("{ not json")
    lines: list[str] = []
    scripted.turns("ok")
    messages = await collect(query("go", scripted.options(stderr=lines.append)))
    assert any("settings.json" in line for line in lines)
    assert any(m.subtype == "warning" for m in messages if hasattr(m, "subtype")
               and not isinstance(m, ResultMessage))


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
async def test_keys_and_base_urls_come_from_env(fmt, zpi_env, zpi_model_server, tmp_path,
                                                monkeypatch):
    zpi_env.set("ZPI_DISABLE_PLUGIN_AUTOLOAD", "1")
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL",
                 "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    zpi_model_server.add_turns("hello")
    key = f"sk-{fmt}-from-options"
    variables = {"openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
                 "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}[fmt]
    options = AgentOptions(model=f"{fmt}:test-model", cwd=tmp_path, setting_sources=[],
                           env={variables[0]: key, variables[1]: zpi_model_server.base_url})
    result = (await collect(query("hi", options)))[-1]
    assert result.result == "hello"
    headers = zpi_model_server.requests[0].headers
    if fmt == "openai":
        assert headers["authorization"] == f"Bearer {key}"
    else:
        assert headers["x-api-key"] == key


async def test_anthropic_auth_token_is_sent_as_a_bearer_token_and_kept_from_bash(
        zpi_env, zpi_model_server, tmp_path, monkeypatch):
    zpi_env.set("ZPI_DISABLE_PLUGIN_AUTOLOAD", "1")
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    zpi_model_server.add_turns(
        {"tool_calls": [{"name": "Bash", "arguments": {
            "command": "echo token=${ANTHROPIC_AUTH_TOKEN:-none}"}}]}, "done")
    options = AgentOptions(model="anthropic:test-model", cwd=tmp_path, setting_sources=[],
                           permission_mode="bypassPermissions",
                           env={"ANTHROPIC_AUTH_TOKEN": "tok-bearer",
                                "ANTHROPIC_BASE_URL": zpi_model_server.base_url})
    messages = await collect(query("hi", options))
    assert messages[-1].result == "done"
    headers = zpi_model_server.requests[0].headers
    assert headers["authorization"] == "Bearer tok-bearer" and "x-api-key" not in headers
    result = next(b for m in messages if isinstance(m, UserMessage) for b in m.content)
    assert "token=none" in result.content


async def test_the_model_comes_from_options_then_settings_then_zpi_model(
        zpi_env, zpi_model_server, tmp_path):
    zpi_env.set("ZPI_DISABLE_PLUGIN_AUTOLOAD", "1")
    zpi_model_server.add_turns("a", "b")
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": zpi_model_server.base_url,
           "ZPI_MODEL": "openai:from-variable"}
    first = await collect(query("hi", AgentOptions(cwd=tmp_path, setting_sources=[], env=env)))
    assert first[0].data["model"] == "openai:from-variable"
    settings = json.dumps({"model": "openai:from-settings"})
    second = await collect(query("hi", AgentOptions(cwd=tmp_path, settings=settings, env=env)))
    assert second[0].data["model"] == "openai:from-settings"
    assert [r.json["model"] for r in zpi_model_server.requests] == ["from-variable",
                                                                    "from-settings"]


@pytest.mark.parametrize(("sources", "model"), [
    (["user"], "from-user"), (["project"], "from-project"), (["local"], "from-local"),
    (["user", "project"], "from-project"), (None, "from-local"), ([], "from-variable"),
])
async def test_setting_sources_choose_the_settings_files(sources, model, zpi_env,
                                                         zpi_model_server, tmp_path):
    """claude-agent-sdk's setting_sources: each source alone reads only its file; None reads
    all (local over project over user); [] reads none."""
    zpi_env.set("ZPI_DISABLE_PLUGIN_AUTOLOAD", "1")
    agent_dir, cwd = tmp_path / "agent", tmp_path / "project"
    (cwd / ".zpi").mkdir(parents=True)
    agent_dir.mkdir()
    for path, name in ((agent_dir / "settings.json", "from-user"),
                       (cwd / ".zpi" / "settings.json", "from-project"),
                       (cwd / ".zpi" / "settings.local.json", "from-local")):
        path.write_text(json.dumps({"model": f"openai:{name}"}))
    zpi_model_server.add_turns("ok")
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": zpi_model_server.base_url,
           "ZPI_MODEL": "openai:from-variable"}
    options = AgentOptions(cwd=cwd, agent_dir=agent_dir, setting_sources=sources, env=env)
    messages = await collect(query("hi", options))
    assert messages[0].data["model"] == f"openai:{model}"
    assert messages[-1].result == "ok"


@pytest.mark.parametrize(("sources", "seen"), [
    (None, {"user rule", "project rule", "proj-skill"}), (["user"], {"user rule"}),
    (["project", "local"], {"project rule", "proj-skill"}), ([], set()),
])
async def test_setting_sources_choose_the_context_files_and_skills(scripted, sources, seen):
    """As in claude-agent-sdk, the project source brings the project's context file and
    skills, the user source the user's."""
    (scripted.agent_dir / "AGENTS.md").write_text("user rule")
    (scripted.cwd / "AGENTS.md").write_text("project rule")
    skill = scripted.cwd / ".zpi" / "skills" / "proj-skill" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: proj-skill\ndescription: does things\n---\nbody\n")
    scripted.turns("ok")
    await collect(query("hi", scripted.options(setting_sources=sources)))
    prompt = scripted.scripted.requests[0].system_prompt
    assert {s for s in ("user rule", "project rule", "proj-skill") if s in prompt} == seen


async def test_env_keys_stay_out_of_bash(scripted):
    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {
        "command": "echo key=${OPENAI_API_KEY:-none} other=$OTHER"}}]}, "ok")
    options = scripted.options(env={"OPENAI_API_KEY": "sk-secret", "OTHER": "visible"},
                               permission_mode="bypassPermissions")
    messages = await collect(query("go", options))
    result = next(b for m in messages if isinstance(m, UserMessage) for b in m.content)
    assert "key=none other=visible" in result.content


async def test_fallback_model_answers_when_the_main_model_fails(zpi_env, zpi_model_server,
                                                                 tmp_path):
    from zpi_host.sdk import AssistantMessage, ClaudeSDKClient, SystemMessage

    zpi_env.set("ZPI_DISABLE_PLUGIN_AUTOLOAD", "1")
    script = tmp_path / "fallback.jsonl"
    script.write_text('{"text": "from the fallback"}\n{"text": "still the fallback"}\n')
    zpi_model_server.fail_next(529, times=20)  # overloaded, through every retry
    settings = {"providers": {"openai": {"base_url": zpi_model_server.base_url}},
                "requests": {"retry_base_delay": 0.001, "retry_max_delay": 0.001},
                "models": {"main": {"provider": "openai", "model": "test-model"}}}
    (tmp_path / "p").mkdir()
    options = AgentOptions(cwd=tmp_path / "p", model="main", settings=json.dumps(settings),
                           env={"OPENAI_API_KEY": "sk-test-openai"},
                           fallback_model=f"scripted:{script}")
    async with ClaudeSDKClient(options) as client:
        await client.query("hello")
        first = [m async for m in client.receive_response()]
        served = len(zpi_model_server.requests)
        await client.query("again")
        second = [m async for m in client.receive_response()]
    assert served >= 1 and len(zpi_model_server.requests) == served  # the main model tried
    assert first[-1].result == "from the fallback" and not first[-1].is_error
    assert second[-1].result == "still the fallback"
    (answer,) = [m for m in first if isinstance(m, AssistantMessage)]
    assert answer.model.startswith("scripted:")
    warnings = [m.data["message"] for m in first + second
                if isinstance(m, SystemMessage) and m.subtype == "warning"]
    assert any("using the fallback model" in w for w in warnings)


async def test_fallback_model_must_be_another_known_model(scripted):
    from zpi_host.sdk import ClaudeSDKClient

    with pytest.raises(UsageError, match="is the main model"):
        async with ClaudeSDKClient(scripted.options(fallback_model="scripted:memory")):
            pass
