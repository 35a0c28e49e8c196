"""The counterparts of Claude Code's tools that plugins' agents name: ``todo_write``
(``TodoWrite``), ``ls`` (``LS``), ``notebook_read``/``notebook_edit`` (``NotebookRead``/
``NotebookEdit``), in real sessions with real files; and an agent's ``tools:`` in Claude's
spelling resolved to this host's tools, a name with no counterpart left out with a warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.builtins import builtins_settings

from zpi_builtins.notebook_cells import decode_notebook, edit_notebook, render_cells
from zpi_builtins.notebooks import prepare_edit
from zpi_builtins.search_ls import execute_ls, prepare_ls
from zpi_builtins.todos import prepare_todos
from zpi_host.cli.live import todo_line
from zpi_host.providers.messages import ToolResultMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import FunctionModel
from zpi_host.tools import ToolArgumentError, ToolContext

pytestmark = pytest.mark.anyio


def calls(*pairs) -> dict:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in pairs]}


def scripted(*turns):
    seen = []

    def answer(request):
        seen.append(request)
        turn = turns[len(seen) - 1]
        return turn(request) if callable(turn) else turn

    return FunctionModel(answer), seen


def results(session) -> list[ToolResultMessage]:
    return [m for m in session.messages if isinstance(m, ToolResultMessage)]


async def run(session, prompt="go"):
    try:
        return await session.run(prompt)
    finally:
        await session.dispose()


# ------------------------------------------------------------------------------ todo_write

TODOS = [{"content": "Write the parser", "status": "completed", "activeForm": "Writing it"},
         {"content": "Run the tests", "status": "in_progress", "activeForm": "Running tests"},
         {"content": "Update docs", "status": "pending", "activeForm": "Updating docs"}]


def test_todo_arguments_follow_claudes_schema():
    assert prepare_todos({"todos": TODOS}) == TODOS
    for bad, field in [({"todos": [{**TODOS[0], "status": "done"}]}, "status"),
                       ({"todos": [{"content": "x", "status": "pending"}]}, "activeForm"),
                       ({"todos": [{**TODOS[0], "content": " "}]}, "todos[0].content"),
                       ({"todos": [{**TODOS[0], "priority": "high"}]}, "priority")]:
        with pytest.raises(ToolArgumentError) as caught:
            prepare_todos(bad)
        assert field in (caught.value.field or "") + caught.value.problem


async def test_todo_write_keeps_the_list_and_reports_old_and_new(zpi_env, tmp_path):
    done = [{**t, "status": "completed"} for t in TODOS]
    model, _ = scripted(calls(("todo_write", {"todos": TODOS[1:]})),
                        calls(("todo_write", {"todos": TODOS})),
                        calls(("todo_write", {"todos": done})),
                        calls(("todo_write", {"todos": TODOS[2:]})), "done")
    session = await create_session(model="t:m", provider=model, cwd=tmp_path)
    assert session.tools["todo_write"].metadata.read_only  # never asked about, in any mode
    await run(session)
    first, second, finished, after = results(session)
    assert not first.is_error and first.content[0].text.startswith(
        "Todos have been modified successfully")
    assert (first.details["oldTodos"], first.details["newTodos"]) == ([], TODOS[1:])
    assert second.details["oldTodos"] == TODOS[1:] and second.details["newTodos"] == TODOS
    assert finished.details["oldTodos"] == TODOS
    assert after.details["oldTodos"] == []  # a finished list is done, as in Claude Code
    assert todo_line(second) == ("todos 1/3: ✓ Write the parser · ▶ Running tests · "
                                 "○ Update docs")


async def test_a_resumed_session_goes_on_from_its_last_list(zpi_env, tmp_path):
    model, _ = scripted(calls(("todo_write", {"todos": TODOS})), "first done")
    session = await create_session(model="t:m", provider=model, cwd=tmp_path)
    await run(session)
    again, _ = scripted(calls(("todo_write", {"todos": TODOS[:1]})), "second done")
    resumed = await create_session(model="t:m", provider=again, cwd=tmp_path,
                                   resume=session.session_id)
    await run(resumed, "more")
    assert results(resumed)[-1].details["oldTodos"] == TODOS


async def test_switched_off_there_is_no_todo_tool(zpi_env, tmp_path):
    session = await create_session(model="t:m", provider=FunctionModel(lambda r: "x"),
                                   cwd=tmp_path, settings=builtins_settings(
                                       todos={"enabled": False}, notebooks={"enabled": False}))
    await session.dispose()
    assert not {"todo_write", "notebook_read", "notebook_edit"} & set(session.tools)


# ------------------------------------------------------------------------------ ls


def write(root: Path, rel: str, text: str = "x") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_ls_draws_the_tree_as_claude_code_does_following_ignore_rules(tmp_path):
    ws = tmp_path / "ws"
    for rel in ("src/app.py", "src/lib/util.py", "README.md", "build/out.o", ".env",
                ".git/config", "node_modules/x/index.js", "debug.log"):
        write(ws, rel)
    write(ws, ".gitignore", "build/\n*.log\n")
    (ws / "empty").mkdir()
    result = execute_ls(prepare_ls({"path": str(ws), "ignore": ["node_modules"]}),
                        ToolContext(cwd=ws))
    assert result.text_content.splitlines() == [
        f"- {ws}/", "  - README.md", "  - empty/", "  - src/", "    - app.py",
        "    - lib/", "      - util.py"]
    assert result.details["entries"] == 6 and not result.details["cut"]
    assert "src" in execute_ls(prepare_ls({"path": "."}), ToolContext(cwd=ws)).text_content
    with pytest.raises(ToolArgumentError, match="unclosed"):
        prepare_ls({"path": ".", "ignore": ["[a"]})


async def test_ls_is_read_only_and_judged_like_read(zpi_env, tmp_path):
    ws = tmp_path / "ws"
    write(ws, "a.txt")
    write(tmp_path / "outside", "secret.txt")
    model, _ = scripted(calls(("ls", {"path": "."}), ("ls", {"path": str(tmp_path / "outside")})),
                        "done")
    session = await create_session(model="t:m", provider=model, cwd=ws)
    await run(session)
    inside, outside = results(session)
    assert not inside.is_error and "a.txt" in inside.content[0].text
    assert outside.is_error and "secret.txt" not in outside.content[0].text


# ------------------------------------------------------------------------------ notebooks


def notebook(cells, minor=5) -> dict:
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": minor}


CELLS = [
    {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Title\n", "text"]},
    {"cell_type": "code", "id": "calc", "metadata": {}, "execution_count": 3,
     "source": ["x = 1\n", "print(x)"],
     "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1\n"]},
                 {"output_type": "display_data", "metadata": {},
                  "data": {"image/png": "AAAA", "text/plain": ["<Figure>"]}}]},
]


def test_cells_render_with_ids_types_and_outputs():
    text = render_cells(notebook(CELLS))
    assert text.startswith('<cell id="intro"><cell_type>markdown</cell_type># Title\ntext'
                           '</cell id="intro">')
    assert '<cell id="calc">x = 1\nprint(x)\n<output>\n1\n\n</output>' in text
    assert "[image/png output not shown]" in text
    old = render_cells(notebook([{k: v for k, v in c.items() if k != "id"} for c in CELLS], 4),
                       "cell-1")
    assert old.startswith('<cell id="cell-1">x = 1')


def test_edits_replace_insert_and_delete_as_claudes_notebook_edit():
    nb = notebook(CELLS)
    replaced, what = edit_notebook(nb, new_source="y = 2", cell_id="calc", cell_type=None,
                                   edit_mode="replace", shown="n.ipynb")
    cell = replaced["cells"][1]
    assert what == "Updated cell calc of n.ipynb"
    assert cell["source"] == ["y = 2"] and cell["outputs"] == [] and \
        cell["execution_count"] is None
    assert nb["cells"][1]["outputs"]  # the input is not changed
    inserted, what = edit_notebook(nb, new_source="## More", cell_id="intro",
                                   cell_type="markdown", edit_mode="insert", shown="n.ipynb")
    new = inserted["cells"][1]
    assert new["cell_type"] == "markdown" and new["source"] == ["## More"]
    assert new["id"] not in ("intro", "calc") and what == f"Inserted cell {new['id']} in n.ipynb"
    first, _ = edit_notebook(nb, new_source="import os", cell_id=None, cell_type="code",
                             edit_mode="insert", shown="n.ipynb")
    assert first["cells"][0]["source"] == ["import os"] and first["cells"][0]["outputs"] == []
    deleted, what = edit_notebook(nb, new_source="", cell_id="cell-0", cell_type=None,
                                  edit_mode="delete", shown="n.ipynb")
    assert [c["id"] for c in deleted["cells"]] == ["calc"] and what.startswith("Deleted cell")
    retyped, _ = edit_notebook(nb, new_source="text now", cell_id="calc",
                               cell_type="markdown", edit_mode="replace", shown="n.ipynb")
    assert "outputs" not in retyped["cells"][1] and retyped["cells"][1]["cell_type"] == \
        "markdown"
    with pytest.raises(ValueError, match="has no cell 'nope'"):
        edit_notebook(nb, new_source="", cell_id="nope", cell_type=None, edit_mode="delete",
                      shown="n.ipynb")
    with pytest.raises(ToolArgumentError, match="cell_type"):
        prepare_edit({"notebook_path": "n.ipynb", "new_source": "x", "edit_mode": "insert"})
    with pytest.raises(ToolArgumentError, match=r"\.ipynb"):
        prepare_edit({"notebook_path": "n.py", "new_source": "x", "cell_id": "a"})


async def test_a_notebook_is_read_then_edited_through_the_commit_engine(zpi_env, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    path = ws / "analysis.ipynb"
    path.write_text(json.dumps(notebook(CELLS), indent=1))
    edit = {"notebook_path": "analysis.ipynb", "cell_id": "calc", "new_source": "x = 42"}
    model, _ = scripted(calls(("notebook_edit", edit)),
                        calls(("notebook_read", {"notebook_path": "analysis.ipynb"})),
                        calls(("notebook_edit", edit)), "done")
    session = await create_session(model="t:m", provider=model, cwd=ws,
                                   permission_mode="ask", allow=["notebook_edit"])
    await run(session)
    unread, read, edited = results(session)
    assert unread.is_error and "read it first" in unread.content[0].text
    assert not read.is_error and '<cell id="calc">' in read.content[0].text
    assert not edited.is_error and edited.content[0].text == \
        "Updated cell calc of analysis.ipynb"
    saved = decode_notebook(path.read_bytes(), "analysis.ipynb")
    assert saved["cells"][1]["source"] == ["x = 42"] and saved["cells"][1]["outputs"] == []
    assert saved["cells"][0] == CELLS[0]
    assert not list(ws.glob(".*tmp*")) and sorted(p.name for p in ws.iterdir()) == [
        "analysis.ipynb"]


async def test_notebook_edit_is_an_edit_to_the_permission_modes(zpi_env, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "n.ipynb").write_text(json.dumps(notebook(CELLS)))
    edit = {"notebook_path": "n.ipynb", "cell_id": "calc", "new_source": "z"}
    model, _ = scripted(calls(("notebook_read", {"notebook_path": "n.ipynb"})),
                        calls(("notebook_edit", edit)), "done")
    session = await create_session(model="t:m", provider=model, cwd=ws, permission_mode="plan")
    await run(session)
    read, denied = results(session)
    assert not read.is_error and denied.is_error  # plan mode: no changes
    assert json.loads((ws / "n.ipynb").read_text())["cells"][1]["source"] == CELLS[1]["source"]


# ------------------------------------------------------------------------------ agents


AGENT = ("---\nname: explorer\ndescription: explores code\n"
         "tools: Glob, Grep, LS, Read, NotebookRead, WebFetch, TodoWrite, WebSearch, "
         "BashOutput, KillShell, ExitPlanMode\n---\nYou explore code.\n")


async def test_an_agent_naming_claudes_tools_gets_this_hosts_and_loses_the_rest(
        zpi_env, tmp_path):
    folder = tmp_path / ".zpi" / "agents"
    folder.mkdir(parents=True)
    (folder / "explorer.md").write_text(AGENT)
    seen = []

    def answer(request):
        seen.append(request)
        if request.system_prompt.startswith("You explore code"):
            return "explored"
        if len(seen) == 1:
            return calls(("task", {"agent_type": "explorer", "description": "look",
                                   "prompt": "look around"}))
        return "done"

    session = await create_session(model="t:m", provider=FunctionModel(answer), cwd=tmp_path)
    warnings = []
    session.subscribe(lambda e: warnings.append(e.message), types={"warning"})
    result = await run(session)
    assert result.result == "done"
    (task,) = results(session)
    assert not task.is_error and task.content[0].text == "explored"
    child_tools = [t.name for t in seen[1].tools]
    assert child_tools == ["glob", "grep", "ls", "read", "notebook_read", "web_fetch",
                           "todo_write", "web_search", "task_output", "task_stop"]
    warned = [w for w in warnings if "explorer" in w]
    assert warned and "ExitPlanMode" in warned[0] and "runs without them" in warned[0]
