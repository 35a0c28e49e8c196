"""builtins:memory: the memory files, the memory tool and the index in the system prompt."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from helpers.builtins import builtins_settings, scripted_session

from zpi_builtins.memory import parse_arguments, render_index
from zpi_builtins.memory_store import Memory, MemoryDir, Update, render
from zpi_host.fs.files import FileFingerprint
from zpi_host.tools import ToolArgumentError

pytestmark = pytest.mark.anyio


def call(**arguments):
    return {"tool_calls": [{"name": "memory", "arguments": arguments}]}


def write_memory(folder: Path, name: str, description: str, content: str,
                 scope: str = "project") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_bytes(render(scope, name, description, content))
    return path


def results(session) -> list[tuple[bool, str]]:
    return [(m.is_error, m.content[0].text) for m in session.messages
            if type(m).__name__ == "ToolResultMessage"]


async def test_add_view_replace_remove_in_both_scopes(zpi_env, tmp_path):
    session = await scripted_session(tmp_path, [
        call(action="add", scope="project", name="build", description="how to build",
             content="Run `make -j8`."),
        call(action="add", scope="user", name="style", description="the user's style",
             content="Short functions."),
        call(action="view"),
        call(action="view", name="build"),
        call(action="replace", scope="project", name="build", content="Run `make -j16`."),
        call(action="replace", scope="user", name="style", description="coding style"),
        call(action="remove", scope="user", name="style"),
        call(action="add", scope="project", name="build", description="again", content="x"),
        "done"])
    await session.run("remember things")
    await session.dispose()
    outcome = results(session)
    assert [error for error, _ in outcome] == [False] * 7 + [True]
    assert outcome[2][1] == "- [project] build: how to build\n- [user] style: the user's style"
    assert "Run `make -j8`." in outcome[3][1] and "[project] build: how to build" in outcome[3][1]
    assert "already exists; view it, then replace it" in outcome[7][1]
    build = (tmp_path / ".zpi" / "memory" / "build.md").read_text()
    assert build == ('---\nname: build\ndescription: "how to build"\nscope: project\n---\n\n'
                     "Run `make -j16`.\n")
    assert not (zpi_env.agent_dir / "memory" / "style.md").exists()
    assert stat.S_IMODE((zpi_env.agent_dir / "memory").stat().st_mode) == 0o700  # private


@pytest.mark.parametrize("mode", ["plan", "ask"])
async def test_a_view_only_reads_so_plan_and_ask_modes_run_it(zpi_env, tmp_path, mode):
    write_memory(tmp_path / ".zpi" / "memory", "build", "how to build", "Run `make`.")
    session = await scripted_session(tmp_path, [
        call(action="view", name="build"),
        call(action="add", scope="project", name="test", description="how to test",
             content="Run `pytest`."),
        "done"], permission_mode=mode)
    await session.run("look, then remember")
    await session.dispose()
    (view_error, view), (add_error, add) = results(session)
    assert not view_error and "Run `make`." in view
    assert add_error and "permission denied for memory" in add
    assert ("plan mode runs only read-only tools" if mode == "plan" else "needs approval") in add
    assert not (tmp_path / ".zpi" / "memory" / "test.md").exists()


def test_a_failing_read_only_predicate_counts_as_a_change():
    from zpi_host.tools import Tool, ToolMetadata, ToolResult

    def broken(arguments):
        raise KeyError("action")

    tool = Tool("t", "t", {"type": "object"}, lambda a, c: ToolResult.text("x"),
                ToolMetadata(read_only=False), read_only_when=broken)
    assert not tool.reads_only({})
    assert Tool("r", "r", {"type": "object"}, lambda a, c: ToolResult.text("x"),
                ToolMetadata(read_only=True)).reads_only({})


@pytest.mark.parametrize("name", ["../evil", "a/b", "..", ".hidden", "Build", "", "x" * 65,
                                  "a.md", "-lead", "sp ace", 7])
def test_bad_names_are_refused_before_anything_is_touched(name):
    with pytest.raises(ToolArgumentError, match="is not allowed"):
        parse_arguments({"action": "add", "scope": "user", "name": name,
                         "description": "d", "content": "c"})
    with pytest.raises(ToolArgumentError, match="is not allowed"):
        parse_arguments({"action": "view", "name": name})


@pytest.mark.parametrize(("arguments", "problem"), [
    ({"action": "add", "scope": "team", "name": "a", "description": "d", "content": "c"},
     "scope must be 'user' or 'project'"),
    ({"action": "add", "scope": "user", "name": "a", "content": "c"}, "description must be"),
    ({"action": "add", "scope": "user", "name": "a", "description": "d", "content": " "},
     "content must be"),
    ({"action": "add", "scope": "user", "name": "a", "description": "d",
      "content": "x" * 20000}, "at most 16384 bytes"),
    ({"action": "replace", "scope": "user", "name": "a"}, "replace needs"),
    ({"action": "forget", "scope": "user", "name": "a"}, "action must be one of"),
    ({"action": "view", "path": "/etc"}, "unknown argument"),
])
def test_bad_arguments_name_the_problem(arguments, problem):
    with pytest.raises(ToolArgumentError, match=problem):
        parse_arguments(arguments)


async def test_a_change_over_a_user_edit_is_refused_until_viewed_again(zpi_env, tmp_path):
    folder = tmp_path / ".zpi" / "memory"
    path = write_memory(folder, "build", "how to build", "make")
    session = await scripted_session(tmp_path, [
        "first",
        call(action="replace", scope="project", name="build", content="ninja"), "refused",
        call(action="view", scope="project", name="build"),
        call(action="replace", scope="project", name="build", content="ninja"), "done"])
    await session.run("one")  # the session starts from "make"
    path.write_bytes(render("project", "build", "how to build", "make -j8 (the user's)"))
    await session.run("two")
    assert "make -j8 (the user's)" in path.read_text()
    await session.run("three")
    await session.dispose()
    outcome = results(session)
    assert outcome[0][0] and "was changed on disk since it was last read" in outcome[0][1]
    assert "the change on disk is kept" in outcome[0][1]
    assert not outcome[2][0] and "ninja" in path.read_text()


async def test_symlinks_are_never_followed(zpi_env, tmp_path):
    outside = tmp_path / "outside"
    secret = write_memory(outside, "secret", "not a memory", "keep me")
    folder = tmp_path / ".zpi" / "memory"
    folder.mkdir(parents=True)
    (folder / "linked.md").symlink_to(secret)
    user_target = tmp_path / "elsewhere"
    user_target.mkdir()
    os.symlink(user_target, zpi_env.agent_dir / "memory")
    session = await scripted_session(tmp_path, [
        call(action="view", scope="project", name="linked"),
        call(action="replace", scope="project", name="linked", content="overwritten"),
        call(action="remove", scope="project", name="linked"),
        call(action="add", scope="user", name="style", description="d", content="c"),
        call(action="view"),
        "done"])
    await session.run("go")
    await session.dispose()
    outcome = results(session)
    assert all(error for error, _ in outcome[:4])
    assert "is a symbolic link, not a regular file" in outcome[0][1]
    assert "symbolic link" in outcome[1][1] and "symbolic link" in outcome[2][1]
    assert "is not a plain directory" in outcome[3][1]
    assert "(not used: project linked.md" in outcome[4][1]
    assert secret.read_text().endswith("keep me\n") and (folder / "linked.md").is_symlink()
    assert list(user_target.iterdir()) == []
    prompt = session.test_model.requests[0].system_prompt
    assert "2 memory files could not be read" in prompt


async def test_a_zpi_folder_that_leads_out_of_the_workspace_is_not_used(zpi_env, tmp_path):
    """A repository can ship ``.zpi`` as a symlink (git keeps them): project memories were then
    read from, and written (``memory/``, its lock, the file) into, wherever it pointed."""
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    write_memory(outside / "memory", "secret", "a file outside", "not for the model")
    (ws / ".zpi").symlink_to(outside)
    session = await scripted_session(ws, [
        call(action="view", scope="project", name="secret"),
        call(action="add", scope="project", name="planted", description="d", content="c"),
        call(action="add", scope="user", name="style", description="d", content="c"),
        "done"])
    await session.run("go")
    await session.dispose()
    (view_error, view), (add_error, add), (user_error, _) = results(session)
    assert view_error and add_error and not user_error
    for text in (view, add):
        assert f"leads to {outside / 'memory'}, outside the workspace {ws}" in text
        assert "Make .zpi a plain folder" in text
    assert "not for the model" not in view
    assert sorted(p.name for p in (outside / "memory").iterdir()) == ["secret.md"]
    prompt = session.test_model.requests[0].system_prompt
    assert "secret" not in prompt and "a file outside" not in prompt
    assert "(1 memory file could not be read" in prompt
    assert (zpi_env.agent_dir / "memory" / "style.md").is_file()


def _memory(i: int) -> Memory:
    return Memory("project", f"m{i:03d}", f"memory number {i}", "x", Path(f"/m{i}.md"),
                  FileFingerprint(1, 0, "0"))


def test_the_index_is_capped_in_entries_and_bytes():
    memories = [_memory(i) for i in range(100)]
    by_entries = render_index(memories, [], max_entries=10, max_bytes=100_000)
    assert by_entries is not None
    assert by_entries.count("\n- [project]") == 10 and "- [project] m009:" in by_entries
    assert "90 more memories are not listed here" in by_entries
    by_bytes = render_index(memories, [], max_entries=100, max_bytes=1024)
    assert by_bytes is not None and len(by_bytes.encode()) <= 1024
    listed = by_bytes.count("\n- [project]")
    assert 0 < listed < 100 and f"{100 - listed} more memories" in by_bytes
    assert render_index([], [], max_entries=10, max_bytes=1024) is None


async def test_the_index_in_the_system_prompt_follows_the_settings(zpi_env, tmp_path):
    write_memory(tmp_path / ".zpi" / "memory", "build", "how to build", "make")
    write_memory(tmp_path / ".zpi" / "memory", "tests", "how to test", "pytest")
    write_memory(zpi_env.agent_dir / "memory", "style", "short functions", "...", "user")
    (tmp_path / ".zpi" / "memory" / "notes.txt").write_text("not a memory")
    session = await scripted_session(tmp_path, ["ok"], settings=builtins_settings(
        memory={"index_max_entries": 2}))
    await session.run("hi")
    await session.dispose()
    prompt = session.test_model.requests[0].system_prompt
    assert "- [project] build: how to build\n- [project] tests: how to test\n" in prompt
    assert "(1 more memory is not listed here" in prompt and "notes" not in prompt
    off = await scripted_session(tmp_path, ["ok"], settings=builtins_settings(
        memory={"enabled": False}))
    await off.run("hi")
    await off.dispose()
    request = off.test_model.requests[0]
    assert "# Memories" not in request.system_prompt
    assert "memory" not in [t.name for t in request.tools]


def test_a_hand_written_memory_without_frontmatter_is_described_by_its_first_line(tmp_path):
    folder = tmp_path / "agent" / "memory"
    folder.mkdir(parents=True)
    (folder / "deploy.md").write_text("# Deploying with fly\n\nfly deploy --remote-only\n")
    memory_dir = MemoryDir.of("user", tmp_path / "agent", tmp_path)
    (memory,), skipped = memory_dir.load()
    assert (memory.name, memory.description, skipped) == ("deploy", "Deploying with fly", [])
    assert memory.content.endswith("fly deploy --remote-only")
    assert Update.parse({"action": "remove", "scope": "user", "name": "deploy"}).key == (
        "user", "deploy")
    assert json.loads(json.dumps(memory.description)) == "Deploying with fly"


def test_a_session_start_without_memory_folders_reads_nothing(tmp_path):
    """Neither memory folder: nothing to read, so the store is not needed at session start;
    a folder (even a link to nowhere, which the store then reports) means reading."""
    from zpi_builtins.memory import no_memory_folder

    agent, project = tmp_path / "agent", tmp_path / "project"
    project.mkdir()
    assert no_memory_folder(agent, project)
    (project / ".zpi").mkdir()
    assert no_memory_folder(agent, project)
    (project / ".zpi" / "memory").symlink_to(tmp_path / "nowhere")
    assert not no_memory_folder(agent, project)
    (project / ".zpi" / "memory").unlink()
    (agent / "memory").mkdir(parents=True)
    assert not no_memory_folder(agent, project)
