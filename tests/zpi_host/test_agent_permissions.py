"""Agent definitions with their own permissions, and permission as disclosure: what is denied
outright never reaches the model (checked on the request body the loopback server receives)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from zpi_host.errors import UsageError
from zpi_host.permissions.agent_permissions import AgentPermissionsError, parse_agent_permissions
from zpi_host.session.assembly import create_session
from zpi_host.session.subagents import SubagentError, _child_tools, run_subagent
from zpi_host.tools import Tool, ToolMetadata, ToolResult

pytestmark = pytest.mark.anyio


def write_skill(root, name, description):
    folder = root / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n"
                                     "Do the thing.\n")


def write_agent(root, name, frontmatter, body="You are a focused agent."):
    folder = root / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(f"---\nname: {name}\n{frontmatter}---\n{body}\n")


async def _noop(arguments, ctx):
    return ToolResult.text("ok")


def mcp_tool(name):
    return Tool(name=name, description="an MCP-style tool", execute=_noop,
                parameters={"type": "object", "properties": {}},
                metadata=ToolMetadata(read_only=True))


async def ask_model(server, tmp_path, **options):
    """One run against the loopback server; the tool names and the system prompt it got."""
    server.add_turns({"text": "done"})
    settings = {"providers": {"openai": {"base_url": server.base_url}},
                **options.pop("settings", {})}
    session = await create_session(model="openai:gpt-test", cwd=tmp_path, settings=settings,
                                   persist=False, **options)
    try:
        await session.run("hello")
    finally:
        await session.dispose()
    body = server.requests[-1].json
    names = [t.get("function", t).get("name") for t in body.get("tools", [])]
    system = "\n".join(m["content"] for m in body["messages"] if m["role"] in ("system",
                                                                                "developer"))
    return names, system


def scripted(tmp_path):
    script = tmp_path / "script.jsonl"
    script.write_text('{"text": "done"}\n')
    return f"scripted:{script}"


@pytest.fixture
def server(zpi_env, zpi_model_server):
    zpi_env.set("OPENAI_API_KEY", "sk-test")
    return zpi_model_server


# -- permission is disclosure ----------------------------------------------------------------

async def test_a_bare_deny_rule_keeps_the_tool_out_of_the_request(server, tmp_path):
    names, _ = await ask_model(server, tmp_path,
                               settings={"permissions": {"deny": ["bash"]}})
    assert "bash" not in names and "read" in names


async def test_a_claude_spelled_deny_option_hides_the_tool_too(server, tmp_path):
    names, _ = await ask_model(server, tmp_path, deny=["Bash"])
    assert "bash" not in names and "write" in names


async def test_a_rule_with_a_pattern_leaves_the_tool_visible(server, tmp_path):
    names, _ = await ask_model(server, tmp_path,
                               settings={"permissions": {"deny": ["bash(rm:*)"]}})
    assert "bash" in names


async def test_disallowed_tools_are_absent_from_the_request(server, tmp_path):
    names, _ = await ask_model(server, tmp_path, exclude_tools=["edit"])
    assert "edit" not in names and "read" in names


async def test_a_denied_skill_leaves_the_skill_list(server, zpi_env, tmp_path):
    write_skill(zpi_env.agent_dir, "review", "review a change")
    write_skill(zpi_env.agent_dir, "deploy", "ship a release")
    _, system = await ask_model(server, tmp_path, deny=["skill:deploy"])
    assert "<name>review</name>" in system and "deploy" not in system


async def test_a_denied_agent_type_leaves_the_agent_list(server, zpi_env, tmp_path):
    write_agent(zpi_env.agent_dir, "explorer", "description: explores the code\n")
    write_agent(zpi_env.agent_dir, "writer", "description: writes prose\n")
    _, system = await ask_model(server, tmp_path, deny=["agent:explorer"])
    assert "- writer:" in system and "explorer" not in system
    _, system = await ask_model(server, tmp_path, deny=["agent:general-purpose"])
    assert "- general-purpose" not in system and "- explorer:" in system


# -- a definition's permissions ---------------------------------------------------------------

async def test_the_main_agent_gets_only_what_its_permissions_allow(server, zpi_env, tmp_path):
    write_skill(zpi_env.agent_dir, "review", "review a change")
    write_skill(zpi_env.agent_dir, "deploy", "ship a release")
    write_agent(zpi_env.agent_dir, "helper", "description: a helper\n")
    write_agent(zpi_env.agent_dir, "reviewer", "description: reviews\npermissions:\n"
                "  tools: {allow: [read, \"gr*\"]}\n  skills: {allow: [\"rev*\"]}\n",
                body="You review code and never change it.")
    names, system = await ask_model(server, tmp_path, agent="reviewer")
    assert set(names) == {"read", "grep"} & set(names) and "read" in names
    assert "bash" not in names and "task" not in names and "write" not in names
    assert system.startswith("You review code and never change it.")
    assert "<name>review</name>" in system and "deploy" not in system
    # subagents left out: no agent type is listed (the dimension denies all)
    assert "- helper:" not in system and "- general-purpose" not in system


async def test_a_deny_dimension_takes_away_only_what_it_names(server, zpi_env, tmp_path):
    write_agent(zpi_env.agent_dir, "builder", "description: builds\npermissions:\n"
                "  tools: {deny: [bash]}\n  subagents: {allow: [\"*\"]}\n")
    names, system = await ask_model(server, tmp_path, agent="builder")
    assert "bash" not in names and {"read", "write", "edit"} <= set(names)
    assert "- general-purpose" in system and "- builder:" in system


async def test_mcp_tools_follow_the_mcps_dimension(server, zpi_env, tmp_path):
    tools = [mcp_tool("mcp__docs__search"), mcp_tool("mcp__shell__run")]
    write_agent(zpi_env.agent_dir, "docs", "description: d\npermissions:\n"
                "  tools: {allow: [read]}\n  mcps: {allow: [docs]}\n")
    write_agent(zpi_env.agent_dir, "nomcp", "description: n\npermissions:\n"
                "  tools: {allow: [\"*\"]}\n")
    names, _ = await ask_model(server, tmp_path, agent="docs", custom_tools=tools)
    assert sorted(names) == ["mcp__docs__search", "read"]
    names, _ = await ask_model(server, tmp_path, agent="nomcp", custom_tools=tools)
    assert "read" in names and not [n for n in names if n.startswith("mcp__")]


async def test_a_definition_without_permissions_keeps_todays_behaviour(server, zpi_env,
                                                                      tmp_path):
    write_agent(zpi_env.agent_dir, "plain", "description: plain\n")
    before, _ = await ask_model(server, tmp_path)
    after, system = await ask_model(server, tmp_path, agent="plain")
    assert after == before and "You are a focused agent." in system


def test_allow_and_deny_in_one_dimension_is_an_error_naming_the_definition():
    with pytest.raises(AgentPermissionsError, match=r"agent 'x'.*permissions.tools.*both"):
        parse_agent_permissions({"tools": {"allow": ["read"], "deny": ["bash"]}}, "agent 'x'")
    with pytest.raises(AgentPermissionsError, match="unknown permissions dimension"):
        parse_agent_permissions({"tool": {"allow": ["read"]}}, "agent 'x'")
    with pytest.raises(AgentPermissionsError, match="list of names"):
        parse_agent_permissions({"skills": {"allow": "review"}}, "agent 'x'")


def test_names_match_exactly_or_with_a_star_and_no_match_denies():
    granted = parse_agent_permissions({"tools": {"allow": ["read", "web_*"]},
                                       "skills": {"deny": ["secret"]}}, "agent 'x'")
    assert granted is not None
    assert granted.admits("tools", "read") and granted.admits("tools", "Read")
    assert granted.admits("tools", "web_fetch") and not granted.admits("tools", "reader")
    assert granted.admits("skills", "review") and not granted.admits("skills", "secret")
    assert not granted.admits("mcps", "docs") and not granted.admits("subagents", "x")


async def test_a_main_agent_with_both_forms_is_refused(zpi_env, tmp_path):
    write_agent(zpi_env.agent_dir, "bad", "description: b\npermissions:\n"
                "  tools: {allow: [read], deny: [bash]}\n")
    with pytest.raises(UsageError, match=r"agent 'bad' \(.*bad\.md\).*both allow and deny"):
        await create_session(model=scripted(tmp_path), cwd=tmp_path, persist=False, agent="bad")


async def test_an_unknown_main_agent_is_refused(zpi_env, tmp_path):
    with pytest.raises(UsageError, match="agent 'ghost' is not defined"):
        await create_session(model=scripted(tmp_path), cwd=tmp_path, persist=False,
                             agent="ghost")


async def test_a_subagents_permissions_are_its_own_not_its_parents(zpi_env, tmp_path):
    write_agent(zpi_env.agent_dir, "lead", "description: l\npermissions:\n"
                "  tools: {allow: [read, task]}\n  subagents: {allow: [worker, plain]}\n")
    write_agent(zpi_env.agent_dir, "worker", "description: w\npermissions:\n"
                "  tools: {allow: [bash]}\n")
    write_agent(zpi_env.agent_dir, "plain", "description: p\n")
    write_agent(zpi_env.agent_dir, "bad", "description: b\npermissions:\n"
                "  mcps: {deny: []}\n  tools: {allow: [read], deny: [x]}\n")
    session = await create_session(model=scripted(tmp_path), cwd=tmp_path, persist=False,
                                   agent="lead")
    try:
        assert sorted(session.tools) == ["read", "task"]
        worker = session.resources.agent("worker")
        # the worker gets bash, which its parent lacks, and nothing its parent has
        assert [t.name for t in _child_tools(session, "worker", worker, ())] == ["bash"]
        # a definition without permissions: its parent's tools, as before (never task)
        plain = session.resources.agent("plain")
        assert [t.name for t in _child_tools(session, "plain", plain, ())] == ["read"]
        assert session.resources.agent("bad") is None  # not granted to the lead
        with pytest.raises(SubagentError, match=r"'bad' sub-agent was denied: agent 'lead' "
                           r"\(.*lead\.md\) does not grant it \(permissions\.subagents\)"):
            await run_subagent(session, "bad", "go")
        assert any("agent 'bad'" in w for w in session.take_warnings())
    finally:
        await session.dispose()


async def test_a_subagent_with_unusable_permissions_is_refused(zpi_env, tmp_path):
    write_agent(zpi_env.agent_dir, "bad", "description: b\npermissions:\n"
                "  tools: {allow: [read], deny: [x]}\n")
    session = await create_session(model=scripted(tmp_path), cwd=tmp_path, persist=False)
    try:
        with pytest.raises(SubagentError, match=r"agent 'bad'.*both allow and deny"):
            _child_tools(session, "bad", session.resources.agent("bad"), ())
    finally:
        await session.dispose()


def test_zpi_host_prompt_shows_the_main_agents_view(zpi_env, tmp_path):
    write_agent(zpi_env.agent_dir, "reader", "description: r\npermissions:\n"
                "  tools: {allow: [read]}\n", body="Only read.")
    done = subprocess.run([sys.executable, "-m", "zpi_host", "prompt", "--json", "--agent",
                           "reader", "--model", scripted(tmp_path), "--cwd", str(tmp_path)],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert [t["name"] for t in shown["tools"]] == ["read"]
    assert shown["system_prompt"].startswith("Only read.")
    (zpi_env.agent_dir / "settings.json").write_text(json.dumps(
        {"permissions": {"deny": ["bash", "edit(src/**)"]}}))
    done = subprocess.run([sys.executable, "-m", "zpi_host", "prompt", "--json", "--model",
                           scripted(tmp_path), "--cwd", str(tmp_path)],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    names = [t["name"] for t in json.loads(done.stdout)["tools"]]
    assert "bash" not in names and {"read", "write", "edit"} <= set(names)


async def test_the_main_agents_model_is_used_unless_one_is_chosen(zpi_env, monkeypatch,
                                                                   tmp_path):
    script = tmp_path / "agent-script.jsonl"
    script.write_text('{"text": "from the agent model"}\n')
    write_agent(zpi_env.agent_dir, "scripted", f"description: s\nmodel: scripted:{script}\n")
    other = tmp_path / "other.jsonl"
    other.write_text('{"text": "from the chosen model"}\n')
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    # no other model anywhere, then ZPI_MODEL (not an explicit choice): the agent's wins
    for environ in ({}, {"ZPI_MODEL": f"scripted:{other}"}):
        for name, value in environ.items():
            zpi_env.set(name, value)
        session = await create_session(cwd=tmp_path, persist=False, agent="scripted")
        try:
            assert (await session.run("hi")).result == "from the agent model"
        finally:
            await session.dispose()
    monkeypatch.delenv("ZPI_MODEL")
    write_agent(zpi_env.agent_dir, "modelless", "description: m\n")
    with pytest.raises(UsageError, match="no model chosen"):
        await create_session(cwd=tmp_path, persist=False, agent="modelless")
    session = await create_session(model=f"scripted:{other}", cwd=tmp_path, persist=False,
                                   agent="scripted")
    try:
        assert (await session.run("hi")).result == "from the chosen model"
    finally:
        await session.dispose()


async def test_a_json_definition_runs_as_the_main_agent(server, zpi_env, tmp_path):
    folder = zpi_env.agent_dir / "agents"
    folder.mkdir(parents=True)
    (folder / "lister.json").write_text(json.dumps({
        "name": "lister", "description": "lists files", "prompt": "You only read.",
        "permissions": {"tools": {"allow": ["read"]}}}))
    (folder / "broken.json").write_text("{not json")
    (folder / "listy.json").write_text(json.dumps(["not", "an", "object"]))
    names, system = await ask_model(server, tmp_path, agent="lister")
    assert names == ["read"] and system.startswith("You only read.")
    session = await create_session(model=scripted(tmp_path), cwd=tmp_path, persist=False)
    try:
        problems = [str(d) for d in session.resources.diagnostics]
        assert any("broken.json" in p and "not valid JSON" in p for p in problems)
        assert any("listy.json" in p and "must be an object" in p for p in problems)
        assert session.resources.agent("lister").permissions == {
            "tools": {"allow": ["read"]}}
    finally:
        await session.dispose()


async def test_a_subagents_mcp_tools_follow_its_own_mcps_dimension(zpi_env, tmp_path):
    from zpi_host.testing import FunctionModel

    write_agent(zpi_env.agent_dir, "docs", "description: d\npermissions:\n"
                "  tools: {allow: [read]}\n  mcps: {allow: [docs]}\n")
    seen = []

    def answer(request):
        seen.append(sorted(t.name for t in request.tools))
        return "done"

    session = await create_session(model="t:m", provider=FunctionModel(answer), cwd=tmp_path,
                                   persist=False, deny=["mcp__docs__drop"])
    try:
        extra = [mcp_tool("mcp__docs__search"), mcp_tool("mcp__docs__drop"),
                 mcp_tool("mcp__other__run")]
        await run_subagent(session, "docs", "go", extra_tools=extra)
    finally:
        await session.dispose()
    assert seen == [["mcp__docs__search", "read"]]
