"""The SDK's ``setting_sources`` decides which of the project's Claude files a session reads:
without ``project`` none of its ``.claude/commands``, skills or agents are loaded."""

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


@pytest.mark.parametrize("sources", [[], ["user"]])
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
