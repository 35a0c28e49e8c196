"""A loaded plugin's skills are usable in every mode: the ``skill`` tool loads one by name,
and the files of the plugin's frozen copy may be read (not written) without approval."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.claude_folders import claude_settings, copy_plugin, load_host

from zpi_host.providers.messages import ToolResultMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import FunctionModel

pytestmark = pytest.mark.anyio


def calls(*pairs) -> dict:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in pairs]}


async def run_with_skills(tmp_path: Path, turns: list, mode: str = "default"):
    plugin = copy_plugin("skills-kit", tmp_path / "plugins")
    workspace = tmp_path / "work"
    workspace.mkdir()
    host = load_host(claude_settings([plugin]), workspace)
    def answer(request):  # the next turn; a callable one sees the request
        turn = turns[len(answered)]
        answered.append(request)
        return turn(request) if callable(turn) else turn

    answered: list = []
    model = FunctionModel(answer)
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host,
                                   permission_mode=mode)
    try:
        await session.run("review app.py")
    finally:
        await session.dispose()
    results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    return session, model, results


def referenced(result: ToolResultMessage) -> str:
    """The file the review skill's instructions name (in the plugin's frozen copy)."""
    return result.content[0].text.split("item of ", 1)[1].split(" and report")[0]


def base_directory(result: ToolResultMessage) -> Path:
    first = result.content[0].text.splitlines()[0]
    return Path(first.removeprefix("Base directory for this skill: "))


async def test_the_skill_tool_loads_instructions_and_their_files_are_readable(
        zpi_env, tmp_path):
    session, _, results = await run_with_skills(tmp_path, [
        calls(("skill", {"skill": "skills-kit:review", "args": "app.py"})),
        lambda request: calls(("read", {"path": referenced(request.messages[-1])})),
        lambda request: calls(("write", {"path": str(
            base_directory(request.messages[-3]) / "references" / "checklist.md"),
            "content": "changed"})),
        {"text": "done"}])
    loaded, read, write = results
    assert not loaded.is_error
    text = loaded.content[0].text
    skill_dir = base_directory(loaded)
    assert text.startswith(f"Base directory for this skill: {skill_dir}\n\nReview app.py.\n\n"
                           "Go through every item of ")
    assert text.endswith("/skills/review/references/checklist.md and report each.")
    assert skill_dir in {s.root for s in session.view.skills}
    assert "skill" in {t.name for t in session.tools.values()}
    # the file the skill names is in the frozen copy, outside the workspace and outside the
    # folder of listed skills: reading it needs no approver ...
    assert not read.is_error and "no print statements" in read.content[0].text
    # ... writing it still does (and there is none)
    assert write.is_error and "permission denied" in write.content[0].text


async def test_the_system_prompt_lists_a_skill_md_that_can_be_read(zpi_env, tmp_path):
    def read_listed(request):
        prompt = request.system_prompt
        start = prompt.index("<location>") + len("<location>")
        return calls(("read", {"path": prompt[start:prompt.index("</location>")]}))

    _, _, (read,) = await run_with_skills(tmp_path, [read_listed, {"text": "done"}])
    assert not read.is_error and "Review $ARGUMENTS." in read.content[0].text


async def test_unknown_and_user_only_skills_are_errors_the_model_reads(zpi_env, tmp_path):
    _, _, (unknown, manual) = await run_with_skills(tmp_path, [
        calls(("skill", {"skill": "nope"})),
        calls(("skill", {"skill": "skills-kit:manual-only"})), {"text": "done"}])
    assert unknown.is_error and "available skills: skills-kit:review" in unknown.content[0].text
    assert manual.is_error and "for the user only" in manual.content[0].text


def test_only_reads_inside_a_frozen_copy_are_allowed(tmp_path):
    from types import SimpleNamespace

    from zpi_compat_claude.skills import PluginFilesAccess

    root = tmp_path / "frozen"
    (root / "refs").mkdir(parents=True)
    (tmp_path / "frozen-sibling").mkdir()
    access = PluginFilesAccess([root])
    session = SimpleNamespace(cwd=tmp_path)
    reader = SimpleNamespace(metadata=SimpleNamespace(read_only=True))
    writer = SimpleNamespace(metadata=SimpleNamespace(read_only=False))

    def ask(tool, name, path):
        call = SimpleNamespace(name=name, arguments={"path": path})
        return access.zpi_permission_request(session, call, tool, "outside the workspace")

    assert ask(reader, "read", str(root / "refs" / "a.md")).behavior == "allow"
    assert ask(reader, "read", "frozen/refs/a.md").behavior == "allow"  # relative to cwd
    assert ask(reader, "read", str(tmp_path / "frozen-sibling" / "a.md")) is None
    assert ask(reader, "read", str(root / ".." / "elsewhere.md")) is None
    assert ask(writer, "write", str(root / "refs" / "a.md")) is None


async def test_sdk_sessions_call_it_skill_and_read_its_files_in_default_mode(
        zpi_env, tmp_path):
    """Through the SDK layer the model sees Claude's name ``Skill`` (not ``skill``) next to
    ``Read``; in ``default`` mode with no approver the skill loads and the file it names in
    the plugin's frozen copy is read."""
    from zpi_host.sdk import AgentOptions, UserMessage, query

    plugin = copy_plugin("skills-kit", tmp_path / "plugins")
    workspace = tmp_path / "work"
    workspace.mkdir()
    seen: list = []

    def answer(request):
        seen.append({t.name for t in request.tools})
        done = [m for m in request.messages if m.role == "tool"]
        if not done:
            return calls(("Skill", {"skill": "skills-kit:review", "args": "app.py"}))
        if len(done) == 1:
            return calls(("Read", {"file_path": referenced(done[0])}))
        return {"text": "done"}

    options = AgentOptions(provider=FunctionModel(answer), model="function:fn", cwd=workspace,
                           agent_dir=tmp_path / "agent", permission_mode="default",
                           plugins=[{"type": "local", "path": str(plugin)}])
    messages = [m async for m in query("review app.py", options)]
    loaded, read = [b for m in messages if isinstance(m, UserMessage) for b in m.content]
    assert {"Skill", "Read"} <= seen[0] and "skill" not in seen[0] and "read" not in seen[0]
    assert not loaded.is_error and "Review app.py." in str(loaded.content)
    assert not read.is_error and "no print statements" in str(read.content)


def test_the_skill_tool_is_what_tool_makes_of_its_function():
    """``--list-plugins`` builds the ``skill`` tool without ``@tool`` (its schema written
    out): the same name, description, parameters and metadata as the decorator gives
    ``load_skill``, and the same argument checks (the decorator's, used on first call)."""
    from zpi_compat_claude.skills import decorated_skill_tool, skill_tool
    from zpi_host.tools import ToolArgumentError

    plain, decorated = skill_tool(), decorated_skill_tool()
    for name in ("name", "description", "parameters", "metadata", "output_schema"):
        assert getattr(plain, name) == getattr(decorated, name), name
    assert plain.prepare_arguments({"skill": "x"}) == decorated.prepare_arguments({"skill": "x"})
    for bad in ({}, {"skill": "x", "other": 1}, {"skill": ["x"]}, []):
        with pytest.raises(ToolArgumentError) as plain_error:
            plain.prepare_arguments(bad)
        with pytest.raises(ToolArgumentError) as decorated_error:
            decorated.prepare_arguments(bad)
        assert str(plain_error.value) == str(decorated_error.value)


def _skill(folder: Path, name: str | None, description: str = "does things") -> None:
    folder.mkdir(parents=True)
    head = f"name: {name}\n" if name else ""
    (folder / "SKILL.md").write_text(f"---\n{head}description: {description}\n---\nBody.\n")


async def test_skills_are_found_by_folder_and_named_by_their_frontmatter(zpi_env, tmp_path):
    """Claude Code's rule: a skill's ``name`` names it, whatever its folder is called; the
    listing and the session agree (the issue: listed, then dropped from the session)."""
    from helpers.claude_folders import rows

    plugin = tmp_path / "plugins" / "kit"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "kit"}')
    _skill(plugin / "skills" / "folder-one", "writing-rules")
    _skill(plugin / "skills" / "plain", None)
    _skill(plugin / "skills" / "bad-name", "Not A Valid Name")
    workspace = tmp_path / "work"
    _skill(workspace / ".claude" / "skills" / "dir-two", "project-skill")
    settings = claude_settings([plugin])
    host = load_host(settings, workspace)
    listed = rows(host, workspace, settings)
    assert sorted(listed["claude:kit"]["contributes"]["skills"]) == [
        "kit:bad-name", "kit:plain", "kit:writing-rules"]
    assert listed["claude:project"]["contributes"]["skills"] == ["project-skill"]
    session = await create_session(model="t:m", provider=FunctionModel(lambda r: "x"),
                                   cwd=workspace, host=host, trust_project=True)
    try:
        names = {s.name for s in session.view.skills}
    finally:
        await session.dispose()
    assert {"kit:writing-rules", "kit:plain", "kit:bad-name", "project-skill"} <= names
    assert "writing-rules" in session.system_prompt and "project-skill" in session.system_prompt

