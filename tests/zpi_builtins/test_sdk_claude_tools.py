"""Claude Code's TodoWrite, LS, NotebookRead, NotebookEdit and MultiEdit through the
Claude-style SDK, against the loopback model server: the model sees Claude's names and
schemas, the messages show the calls as Claude Code does, and an agent definition's
``tools`` in any spelling (``Read``, ``read``, ``BashOutput``) gets the session's tools."""

from __future__ import annotations

import json

import pytest
from helpers.builtins import loopback_sdk_options

from zpi_host.sdk import (
    AgentDefinition,
    AssistantMessage,
    ResultMessage,
    SystemMessage,
    ToolUseBlock,
    UserMessage,
    query,
)

pytestmark = pytest.mark.anyio

TODOS = [{"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
         {"content": "Add a test", "status": "pending", "activeForm": "Adding a test"}]


def tool_results(messages):
    return [b for m in messages if isinstance(m, UserMessage) for b in m.content
            if hasattr(b, "tool_use_id")]


async def test_claude_codes_tools_under_their_names(zpi_env, zpi_model_server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("alpha = 1\nbeta = 2\n")
    (ws / "n.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": 1,
         "source": "print(1)", "outputs": []}], "metadata": {}, "nbformat": 4,
        "nbformat_minor": 5}))
    server = zpi_model_server
    server.add_turns(
        {"tool_calls": [{"name": "TodoWrite", "arguments": {"todos": TODOS}}]},
        {"tool_calls": [{"name": "LS", "arguments": {"path": str(ws)}},
                        {"name": "Read", "arguments": {"file_path": "a.py"}},
                        {"name": "NotebookRead", "arguments": {"notebook_path": "n.ipynb"}}]},
        {"tool_calls": [{"name": "MultiEdit", "arguments": {"file_path": "a.py", "edits": [
            {"old_string": "alpha", "new_string": "ALPHA"},
            {"old_string": "missing", "new_string": "x"}]}}]},
        {"tool_calls": [{"name": "MultiEdit", "arguments": {"file_path": "a.py", "edits": [
            {"old_string": "alpha", "new_string": "ALPHA"},
            {"old_string": "beta = 2", "new_string": "beta = 3"}]}}]},
        {"tool_calls": [{"name": "NotebookEdit", "arguments": {
            "notebook_path": "n.ipynb", "cell_id": "c1", "new_source": "print(2)"}}]},
        {"text": "done"})
    messages = [m async for m in query(prompt="work", options=loopback_sdk_options(
        server, ws, permission_mode="acceptEdits",
        tools=["TodoWrite", "LS", "Read", "NotebookRead", "NotebookEdit", "MultiEdit"]))]
    assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error
    init = next(m for m in messages if isinstance(m, SystemMessage))
    tools = set(init.data["tools"])
    assert {"TodoWrite", "LS", "NotebookRead", "NotebookEdit", "MultiEdit"} <= tools
    assert not {"todo_write", "ls", "notebook_read", "notebook_edit"} & tools
    uses = [b for m in messages if isinstance(m, AssistantMessage) for b in m.content
            if isinstance(b, ToolUseBlock)]
    assert uses[0].name == "TodoWrite" and uses[0].input == {"todos": TODOS}
    todo, listed, read_a, shown, failed, edited, notebook = tool_results(messages)
    assert not todo.is_error and "Todos have been modified" in todo.content
    assert not read_a.is_error and "alpha = 1" in read_a.content
    assert listed.content.splitlines() == [f"- {ws}/", "  - a.py", "  - n.ipynb"]
    assert '<cell id="c1">print(1)' in shown.content
    # MultiEdit: all or none (the second edit does not apply, so nothing is written)
    assert failed.is_error and "edit 2 of 2" in failed.content
    assert not edited.is_error and (ws / "a.py").read_text() == "ALPHA = 1\nbeta = 3\n"
    assert not notebook.is_error
    assert json.loads((ws / "n.ipynb").read_text())["cells"][0]["source"] == "print(2)"
    sent = {t["name"]: t["input_schema"] for t in server.requests[0].json["tools"]}
    assert sent["TodoWrite"]["properties"]["todos"]["items"]["required"] == [
        "content", "status", "activeForm"]
    assert set(sent["MultiEdit"]["properties"]["edits"]["items"]["properties"]) == {
        "old_string", "new_string", "replace_all"}
    assert set(sent["NotebookEdit"]["properties"]) == {
        "notebook_path", "cell_id", "new_source", "cell_type", "edit_mode"}


async def test_multiedit_only_when_named_and_disallowing_edit_removes_it(
        zpi_env, zpi_model_server, tmp_path):
    async def tools_of(**fields):
        server = zpi_model_server
        server.add_turns({"text": "ok"})
        messages = [m async for m in query(prompt="x", options=loopback_sdk_options(
            server, tmp_path, **fields))]
        return set(next(m for m in messages if isinstance(m, SystemMessage)).data["tools"])

    default = await tools_of()
    assert {"Edit", "TodoWrite", "LS", "NotebookEdit"} <= default  # Claude Code's set
    assert "MultiEdit" not in default
    assert "MultiEdit" in await tools_of(tools=["Edit", "MultiEdit"])
    removed = await tools_of(tools=["Edit", "MultiEdit", "Write", "TodoWrite"],
                             disallowed_tools=["Edit", "TodoWrite"])
    assert removed == {"Write"}


async def test_an_agent_in_claudes_spelling_gets_the_sdk_tools(zpi_env, zpi_model_server,
                                                                tmp_path):
    agent = AgentDefinition(description="reads", prompt="You read files.",
                            tools=["read", "Grep", "BashOutput", "NotebookRead", "Nope"])
    server = zpi_model_server
    server.add_turns(
        {"tool_calls": [{"name": "Agent", "arguments": {
            "subagent_type": "reader", "description": "read", "prompt": "read a.txt"}}]},
        {"text": "read it"}, {"text": "done"})
    messages = [m async for m in query(prompt="go", options=loopback_sdk_options(
        server, tmp_path, agents={"reader": agent}, permission_mode="bypassPermissions"))]
    assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error
    (result,) = tool_results(messages)
    assert not result.is_error
    child = server.requests[1].json
    assert [t["name"] for t in child["tools"]] == ["Read", "Grep", "TaskOutput",
                                                   "NotebookRead"]


async def test_read_of_a_notebook_returns_its_cells_as_claude_codes_read_does(
        zpi_env, zpi_model_server, tmp_path):
    """Claude Code's Read shows a ``.ipynb`` as its cells with their outputs (not the JSON),
    ignoring offset and limit, and counts as reading it: NotebookEdit may then change it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "nb.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Title\n"]},
        {"cell_type": "code", "id": "calc", "metadata": {}, "execution_count": 1,
         "source": "6 * 7", "outputs": [{"output_type": "execute_result", "metadata": {},
                                         "execution_count": 1,
                                         "data": {"text/plain": "42"}}]}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1))
    (ws / "plain.txt").write_text("one\ntwo\n")
    server = zpi_model_server
    server.add_turns(
        {"tool_calls": [{"name": "Read", "arguments": {"file_path": "nb.ipynb",
                                                       "offset": 3, "limit": 1}},
                        {"name": "Read", "arguments": {"file_path": "plain.txt"}}]},
        {"tool_calls": [{"name": "NotebookEdit", "arguments": {
            "notebook_path": "nb.ipynb", "cell_id": "calc", "new_source": "6 * 9"}}]},
        {"text": "done"})
    messages = [m async for m in query(prompt="look", options=loopback_sdk_options(
        server, ws, permission_mode="acceptEdits"))]
    assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error
    notebook, plain, edited = tool_results(messages)
    assert not notebook.is_error
    assert notebook.content.startswith(
        '<cell id="intro"><cell_type>markdown</cell_type># Title\n</cell id="intro">')
    assert '<cell id="calc">6 * 7\n<output>\n42\n</output></cell id="calc">' in \
        notebook.content
    assert '"nbformat"' not in notebook.content  # the cells, not the file's JSON
    assert not plain.is_error and "one" in plain.content and "two" in plain.content
    assert not edited.is_error
    assert json.loads((ws / "nb.ipynb").read_text())["cells"][1]["source"] == "6 * 9"
