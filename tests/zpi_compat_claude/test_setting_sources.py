"""The SDK's ``setting_sources`` decides which of the project's Claude files a session reads:
without ``project`` none of its ``.claude/commands``, skills or agents are loaded; ``local``
is ``.claude/settings.local.json`` alone, as in claude-agent-sdk."""

from __future__ import annotations

import pytest

from zpi_host.sdk import AgentOptions, SystemMessage, query
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def project(tmp_path):
    root = tmp_path / "project"
    claude = root / ".claude"
    (claude / "commands").mkdir(parents=True)
    (claude / "commands" / "hello.md").write_text("---\ndescription: hi\n---\nsay hi\n")
    (claude / "skills" / "tidy").mkdir(parents=True)
    (claude / "skills" / "tidy" / "SKILL.md").write_text(
        "---\nname: tidy\ndescription: tidies\n---\nTidy up.\n")
    (claude / "agents").mkdir()
    (claude / "agents" / "rev.md").write_text("---\nname: rev\ndescription: reviews\n---\nR\n")
    return root


async def init_of(cwd, agent_dir, sources):
    options = AgentOptions(cwd=cwd, agent_dir=agent_dir, model="scripted:memory",
                           provider=ScriptedModel(["ok"]), setting_sources=sources)
    messages = [m async for m in query("hi", options)]
    return next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")


@pytest.mark.parametrize("sources", [[], ["user"], ["local"], ["user", "local"]])
async def test_without_the_project_source_its_claude_files_are_not_read(
        zpi_env, tmp_path, sources):
    init = await init_of(project(tmp_path), zpi_env.agent_dir, sources)
    assert "hello" not in init.data["slash_commands"]
    assert "tidy" not in init.data["skills"]
    assert "rev" not in init.data["agents"]
    assert "claude:project" not in [p["name"] for p in init.data["plugins"]]


@pytest.mark.parametrize(("sources", "seen"), [([], False), (["user"], True),
                                               (["project"], False), (None, True)])
async def test_the_users_claude_folder_comes_with_the_user_source(
        zpi_env, tmp_path, sources, seen):
    """``~/.claude/commands`` is the user's: ``[]`` (no source) reads none of it."""
    mine = zpi_env.home / ".claude" / "commands"
    mine.mkdir(parents=True)
    (mine / "mine.md").write_text("---\ndescription: mine\n---\nmine\n")
    init = await init_of(project(tmp_path), zpi_env.agent_dir, sources)
    assert ("mine" in init.data["slash_commands"]) is seen


@pytest.mark.parametrize("sources", [["project"], None])
async def test_with_the_project_source_they_are(zpi_env, tmp_path, sources):
    init = await init_of(project(tmp_path), zpi_env.agent_dir, sources)
    assert "hello" in init.data["slash_commands"]
    assert "tidy" in init.data["skills"]
    assert "rev" in init.data["agents"]
    folder = next(p for p in init.data["plugins"] if p["name"] == "claude:project")
    assert folder["path"] == str(tmp_path / "project" / ".claude")



def test_the_local_scope_loads_only_the_local_settings_files_hooks(zpi_env, tmp_path):
    """An adapter told the session reads only the ``local`` project scope (the SDK's
    ``setting_sources=["local"]``) loads the hooks of ``.claude/settings.local.json``, not
    those of ``.claude/settings.json``, nor the ``.claude/`` folder."""
    import json

    from zpi_host.contract.plugins import PluginConfig, PluginHost

    root = project(tmp_path)
    hooks = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
                                                          "command": "true"}]}]}}
    for name in ("settings.json", "settings.local.json"):
        (root / ".claude" / name).write_text(json.dumps(hooks))
    settings = {"compat": {"claude": {"settings_sources": ["project", "local"]}}}

    def names(scopes):
        host = PluginHost(PluginConfig(settings=settings, cwd=root,
                                       project_scopes=scopes)).load()
        return {r.name for r in host.records if r.name.startswith("claude:")}

    assert names(["local"]) == {"claude:settings-local"}
    assert names(["project"]) == {"claude:settings-project", "claude:project"}
    assert names(None) == {"claude:settings-project", "claude:settings-local",
                           "claude:project"}


async def test_the_local_source_reads_settings_local_json_and_nothing_else_of_the_project(
        zpi_env, tmp_path):
    """``["local"]``: the permissions of ``.claude/settings.local.json`` apply; the project's
    ``settings.json`` rules, ``CLAUDE.md``, ``.claude/`` folders and ``.zpi/`` folders are
    not read; ``CLAUDE.local.md`` is (Claude Code's local memory)."""
    import json

    from zpi_host.sdk import ResultMessage, UserMessage

    root = project(tmp_path)
    (root / "CLAUDE.md").write_text("team memory")
    (root / "CLAUDE.local.md").write_text("my local memory")
    (root / ".zpi" / "commands").mkdir(parents=True)
    (root / ".zpi" / "commands" / "zpicmd.md").write_text("---\ndescription: z\n---\nz\n")
    (root / ".claude" / "settings.json").write_text(json.dumps({
        "permissions": {"deny": ["Bash(echo local*)"]}}))
    (root / ".claude" / "settings.local.json").write_text(json.dumps({
        "permissions": {"deny": ["Bash(echo project*)"]}}))
    model = ScriptedModel([
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "echo local-ran"}},
                        {"name": "Bash", "arguments": {"command": "echo project-ran"}}]},
        "ok"])
    options = AgentOptions(cwd=root, agent_dir=zpi_env.agent_dir, model="scripted:memory",
                           provider=model, setting_sources=["local"],
                           permission_mode="bypassPermissions")
    messages = [m async for m in query("hi", options)]
    assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error
    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    assert "claude:project" not in [p["name"] for p in init.data["plugins"]]
    assert "zpicmd" not in init.data["slash_commands"] and "hello" not in \
        init.data["slash_commands"]
    ran, denied = [b for m in messages if isinstance(m, UserMessage) for b in m.content
                   if hasattr(b, "tool_use_id")]
    assert not ran.is_error and "local-ran" in ran.content  # the project file: unread
    assert denied.is_error and "project-ran" not in denied.content
    prompt = model.requests[0].system_prompt
    assert "my local memory" in prompt and "team memory" not in prompt
