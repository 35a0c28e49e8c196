"""builtins:subagents: the task tool, child transcripts on disk, parallel children, usage."""

from __future__ import annotations

import json

import anyio
import pytest
from helpers.builtins import builtins_settings

from zpi_builtins.subagents import parse_request
from zpi_host import hookimpl
from zpi_host.providers.messages import ContextMessage
from zpi_host.session.assembly import create_session
from zpi_host.session.subagents import NAMESPACE, subagent_file
from zpi_host.testing import FunctionModel
from zpi_host.tools import ToolArgumentError

pytestmark = pytest.mark.anyio

REVIEWER = ("---\nname: reviewer\ndescription: reviews code\ntools: read\n---\n"
            "You review code. Be brief.\n")


def write_agent(root, name, text):
    folder = root / ".zpi" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(text)


def task_call(agent_type, prompt, description="a task"):
    return {"name": "task", "arguments": {"agent_type": agent_type, "description": description,
                                          "prompt": prompt}}


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def tool_results(session):
    return {m.call_id: (m.is_error, "".join(c.text for c in m.content))
            for m in session.messages if m.role == "tool"}


def test_arguments_are_checked_naming_the_field():
    assert parse_request({"agent_type": "a", "description": "d", "prompt": "p"}).prompt == "p"
    for arguments, field in [({"agent_type": "", "description": "d", "prompt": "p"},
                              "agent_type"),
                             ({"agent_type": "a", "description": "d"}, "prompt"),
                             ({"agent_type": "a", "description": "d", "prompt": "p", "x": 1},
                              "x")]:
        with pytest.raises(ToolArgumentError) as caught:
            parse_request(arguments)
        assert caught.value.field == field


async def test_a_task_runs_a_child_whose_transcript_is_saved_and_linked(zpi_env, tmp_path):
    write_agent(tmp_path, "reviewer", REVIEWER)
    seen = []

    def answer(request):
        seen.append(request)
        if request.system_prompt.startswith("You review code"):
            return {"text": "looks fine", "usage": {"input_tokens": 100, "output_tokens": 7}}
        if len(seen) == 1:
            return {"tool_calls": [task_call("reviewer", "review a.py")],
                    "usage": {"input_tokens": 10, "output_tokens": 1}}
        return {"text": "parent done", "usage": {"input_tokens": 20, "output_tokens": 2}}

    session = await create_session(model="t:m", provider=FunctionModel(answer), cwd=tmp_path)
    assert "- reviewer: reviews code (tools: read)" in session.system_prompt
    result = await session.run("review please")
    await session.dispose()
    assert result.result == "parent done" and not result.is_error
    ((call_id, (is_error, text)),) = tool_results(session).items()
    assert (is_error, text) == (False, "looks fine")
    assert [t.name for t in seen[1].tools] == ["read"]  # limited by its definition
    assert session.usage.input_tokens == 130  # the child's usage counted once, live

    parent = records(session.store.path)
    links = [r["data"] for r in parent if r["type"] == "custom" and r["namespace"] == NAMESPACE]
    assert [link["event"] for link in links] == ["start", "stop"]
    agent_id = links[0]["agent_id"]
    assert links[0]["tool_call_id"] == call_id and links[0]["agent_type"] == "reviewer"
    assert links[1]["usage"] == {"function/function": {
        "input_tokens": 100, "output_tokens": 7, "cache_read_tokens": 0,
        "cache_write_tokens": 0}}
    child_path = subagent_file(session.store.path, agent_id)
    assert child_path == (session.store.path.parent / session.session_id / "subagents"
                          / f"agent-{agent_id}.jsonl")
    child = records(child_path)
    assert child[0]["type"] == "header" and child[0]["sessionId"] == agent_id
    assert child[1]["data"] == {"event": "link", "parent_session_id": session.session_id,
                                "agent_id": agent_id, "agent_type": "reviewer",
                                "tool_call_id": call_id, "description": "a task",
                                "parent_agent_id": None}  # started by the main session
    assert [r["type"] for r in child[2:]] == ["user", "assistant"]
    assert not child_path.with_name(child_path.name + ".lock").exists()  # closed with the child


async def test_several_tasks_run_in_parallel(zpi_env, tmp_path):
    arrived = 0
    both = anyio.Event()

    async def answer(request):
        nonlocal arrived
        first = request.messages[0].content[0].text
        if first.startswith("child"):
            arrived += 1
            if arrived == 2:
                both.set()
            with anyio.fail_after(10):  # each child waits for the other: only in parallel
                await both.wait()
            return f"{first} done"
        if len(request.messages) == 1:
            return {"tool_calls": [task_call("general-purpose", "child one"),
                                   task_call("general-purpose", "child two")]}
        return "both done"

    session = await create_session(model="t:m", provider=FunctionModel(answer), cwd=tmp_path)
    result = await session.run("go")
    await session.dispose()
    assert result.result == "both done"
    assert sorted(text for _, text in tool_results(session).values()) == [
        "child one done", "child two done"]
    folder = session.store.path.parent / session.session_id / "subagents"
    assert len(list(folder.glob("agent-*.jsonl"))) == 2


async def test_a_child_never_gets_the_task_tool(zpi_env, tmp_path):
    seen = []

    def answer(request):
        seen.append([t.name for t in request.tools])
        if len(seen) == 1:
            return {"tool_calls": [task_call("general-purpose", "child")]}
        return "done"

    session = await create_session(model="t:m", provider=FunctionModel(answer), cwd=tmp_path)
    await session.run("go")
    await session.dispose()
    assert "task" in seen[0] and "task" not in seen[1]
    assert set(seen[1]) == set(seen[0]) - {"task"}


async def test_an_in_memory_parent_leaves_no_child_files(zpi_env, tmp_path):
    def answer(request):
        if len(request.messages) == 1 and request.messages[0].content[0].text == "go":
            return {"tool_calls": [task_call("general-purpose", "child")]}
        return "done"

    session = await create_session(model="t:m", provider=FunctionModel(answer), cwd=tmp_path,
                                   persist=False)
    result = await session.run("go")
    await session.dispose()
    assert result.result == "done"
    assert not list(zpi_env.agent_dir.rglob("*.jsonl")) and not list(tmp_path.rglob("agent-*"))


async def test_unknown_and_denied_agent_types_are_error_results(zpi_env, tmp_path):
    write_agent(tmp_path, "reviewer", REVIEWER)

    def answer(request):
        if len(request.messages) == 1:
            return {"tool_calls": [task_call("nope", "x"), task_call("reviewer", "y")]}
        return "done"

    session = await create_session(model="t:m", provider=FunctionModel(answer), cwd=tmp_path,
                                   deny=["agent:reviewer"])
    await session.run("go")
    await session.dispose()
    denied, unknown = sorted(tool_results(session).values())
    # a denied type is not disclosed, not even in the list of known ones
    assert unknown[0] and "unknown agent type 'nope' (agents: general-purpose);" in unknown[1]
    assert denied[0] and "starting the 'reviewer' sub-agent was denied: denied by rule " \
        "'agent:reviewer'" in denied[1]
    assert not (session.store.path.parent / session.session_id).exists()


async def test_switched_off_there_is_no_task_tool(zpi_env, tmp_path):
    session = await create_session(
        model="t:m", provider=FunctionModel(lambda r: "x"), cwd=tmp_path,
        settings=builtins_settings(subagents={"enabled": False}))
    await session.dispose()
    assert "task" not in session.tools and "# Sub-agents" not in session.system_prompt


class SubagentHooks:
    def __init__(self) -> None:
        self.calls = []

    @hookimpl
    def zpi_subagent_start(self, agent_type, agent_id, prompt):
        self.calls.append(("start", agent_type, prompt))
        return "from the start hook"

    @hookimpl
    def zpi_subagent_stop(self, agent_type, agent_id, message):
        self.calls.append(("stop", agent_type, message.text))


async def test_the_hooks_run_and_max_turns_bounds_a_child(zpi_env, zpi_plugins, tmp_path):
    hooks = SubagentHooks()
    zpi_plugins.register(hooks, "hooks")
    child_requests = []

    def answer(request):
        if isinstance(request.messages[0], ContextMessage):  # the child's first message
            child_requests.append(request)
            return {"tool_calls": [{"name": "read", "arguments": {"path": "missing.txt"}}]}
        return ({"tool_calls": [task_call("general-purpose", "loop")]}
                if len(request.messages) == 1 else "parent done")

    session = await create_session(
        model="t:m", provider=FunctionModel(answer), cwd=tmp_path,
        settings=builtins_settings(subagents={"max_turns": 2}))
    result = await session.run("go")
    await session.dispose()
    assert result.result == "parent done"
    (is_error, text), = tool_results(session).values()
    assert is_error and text.startswith("the general-purpose sub-agent failed:")
    assert len(child_requests) == 2
    assert child_requests[0].messages[0].text == "from the start hook"
    assert hooks.calls == [("start", "general-purpose", "loop")]  # max turns: no stop check
