"""Sub-agents: a child session with an agent definition, its start/stop hooks, usage."""

from __future__ import annotations

import pytest

from zpi_host import hookimpl
from zpi_host.contract.decisions import StopDecision
from zpi_host.errors import UsageError
from zpi_host.providers.messages import ContextMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import FunctionModel

pytestmark = pytest.mark.anyio


class Watches:
    def __init__(self) -> None:
        self.calls = []

    @hookimpl
    def zpi_subagent_start(self, session, agent_type, agent_id, prompt):
        self.calls.append(("start", agent_type, prompt, session.session_id))
        return "child context"

    @hookimpl
    def zpi_subagent_stop(self, session, agent_type, agent_id, message, continuation):
        self.calls.append(("stop", agent_type, message.text, continuation))
        return StopDecision("check again") if continuation == 0 else None

    @hookimpl
    def zpi_stop(self, message):
        self.calls.append(("parent stop", message.text))

    @hookimpl
    def zpi_session_start(self, source):
        self.calls.append(("session start", source))


async def test_a_subagent_runs_with_its_definition_and_hooks(zpi_env, zpi_plugins, tmp_path):
    watch = Watches()
    zpi_plugins.register(watch, "watch")
    agents = tmp_path / ".zpi" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text("---\nname: reviewer\ndescription: reviews code\n"
                                        "tools: read\n---\nYou review code. Be brief.\n")
    seen = []

    def answer(request):
        seen.append(request)
        if request.system_prompt.startswith("You review code"):
            return {"text": f"review {len(seen)}", "usage": {"input_tokens": 100,
                                                             "output_tokens": 7}}
        return "parent done"

    session = await create_session(model="t:m", provider=FunctionModel(answer), cwd=tmp_path)
    await session.run("start")
    result = await session.run_subagent("reviewer", "review a.py")
    assert (result.agent_type, result.result, result.is_error) == ("reviewer", "review 3",
                                                                   False)
    child_request = seen[1]
    assert [t.name for t in child_request.tools] == ["read"]
    assert child_request.messages[0] == ContextMessage("child context", "watch")
    assert watch.calls == [
        ("session start", "startup"), ("parent stop", "parent done"),
        ("start", "reviewer", "review a.py", session.session_id),
        ("stop", "reviewer", "review 2", 0), ("stop", "reviewer", "review 3", 1),
    ]
    assert session.usage.input_tokens == 200  # the child's usage counts in the parent's
    with pytest.raises(UsageError, match=r"unknown agent type 'nope' \(agents: "
                                         r"general-purpose, reviewer\)"):
        await session.run_subagent("nope", "x")
    general = await session.run_subagent("general-purpose", "anything")
    assert general.result == "parent done"
    await session.dispose()


async def test_a_definition_with_its_own_model_uses_it_and_counts_it_apart(
        zpi_env, tmp_path):
    import json

    from zpi_host.session.subagents import SubagentError

    script = tmp_path / "other.jsonl"
    script.write_text(json.dumps({"text": "from the script",
                                  "usage": {"input_tokens": 3, "output_tokens": 1}}) + "\n")
    agents = tmp_path / ".zpi" / "agents"
    agents.mkdir(parents=True)
    (agents / "other.md").write_text(f"---\ndescription: d\nmodel: scripted:{script}\n---\nP\n")
    (agents / "broken.md").write_text("---\ndescription: d\nmodel: nosuchmodel\n---\nP\n")
    (agents / "same.md").write_text("---\ndescription: d\nmodel: inherit\n---\nP\n")
    session = await create_session(model="t:m", provider=FunctionModel(lambda r: "parent"),
                                   cwd=tmp_path)
    result = await session.run_subagent("other", "hi")
    assert result.result == "from the script"
    assert set(result.model_usage) == {f"scripted/{script}"}
    assert session.model_usage[f"scripted/{script}"].input_tokens == 3
    assert (await session.run_subagent("same", "hi")).result == "parent"
    with pytest.raises(SubagentError, match="agent 'broken' cannot use model 'nosuchmodel'"):
        await session.run_subagent("broken", "hi")
    await session.dispose()


async def test_definitions_given_in_code_win_over_files(zpi_env, tmp_path):
    from zpi_host.resources import AgentDefinition

    agents = tmp_path / ".zpi" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text("---\ndescription: from the file\n---\nFILE PROMPT\n")
    prompts = []

    def answer(request):
        prompts.append(request.system_prompt)
        return "ok"

    given = AgentDefinition("reviewer", "from code", "CODE PROMPT", tools=("read",))
    session = await create_session(model="t:m", provider=FunctionModel(answer), cwd=tmp_path,
                                   agents=[given])
    assert [(a.name, a.description) for a in session.resources.agents] == [
        ("reviewer", "from code")]
    await session.run_subagent("reviewer", "go")
    await session.dispose()
    assert prompts == ["CODE PROMPT"]
    with pytest.raises(UsageError, match="agents must be a list"):
        await create_session(model="t:m", provider=FunctionModel(answer), cwd=tmp_path,
                             agents={"reviewer": given})


async def test_agent_types_list_general_purpose_first_and_let_a_file_replace_it(zpi_env,
                                                                             tmp_path):
    from zpi_host.session.subagents import AgentType, agent_types

    agents = tmp_path / ".zpi" / "agents"
    agents.mkdir(parents=True)
    (agents / "b.md").write_text("---\ndescription: B\ntools: read\n---\nB\n")
    session = await create_session(model="t:m", provider=FunctionModel(lambda r: "x"),
                                   cwd=tmp_path)
    assert [t.name for t in session.ports.subagents.agent_types()] == ["general-purpose", "b"]
    (agents / "general-purpose.md").write_text("---\ndescription: mine\n---\nMINE\n")
    session.resources.refresh()
    assert agent_types(session.resources) == [AgentType("general-purpose", "mine"),
                                              AgentType("b", "B", ("read",))]
    await session.dispose()
