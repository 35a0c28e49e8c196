"""Claude Code's memory files beyond the project's ``CLAUDE.md``: ``~/.claude/CLAUDE.md`` (the
user's, which may import anything) and the project's ``.claude/CLAUDE.md`` (confined to the
project), each with its ``@path`` imports, in the system prompt."""

from __future__ import annotations

import pytest

from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


async def test_user_and_project_claude_memory_reach_the_prompt(zpi_env, tmp_path):
    claude_home = zpi_env.home / ".claude"
    claude_home.mkdir()
    (claude_home / "CLAUDE.md").write_text("User memory. @~/style.md\n")
    (zpi_env.home / "style.md").write_text("Prefer short functions.\n")
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude/CLAUDE.md").write_text("Project memory. @../docs/rules.md @~/style.md\n")
    (project / "docs").mkdir()
    (project / "docs/rules.md").write_text("Run the tests.\n")
    model = ScriptedModel(["ok"])
    session = await create_session(model="t:m", provider=model, cwd=project)
    try:
        await session.run("hi")
    finally:
        await session.dispose()
    system = model.requests[0].system_prompt
    for text in ("User memory.", "Prefer short functions.", "Project memory.",
                 "Run the tests."):
        assert text in system, text
    assert system.index("User memory.") < system.index("Prefer short functions.")
    assert system.count("Prefer short functions.") == 1  # read once, for the user's file
    problems = [d for d in session.resources.diagnostics if d.kind == "context"]
    assert [d.path for d in problems] == [zpi_env.home / "style.md"]  # the project's import
