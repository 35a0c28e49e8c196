"""Permissions inside a session: denials the model reads and the result counts, the approver,
interrupts, zpi_permission_request, settings (project bypass refused) and hook settings."""

from __future__ import annotations

import json

import pytest

from zpi_host import hookimpl
from zpi_host.contract.decisions import ToolDecision
from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.errors import UsageError
from zpi_host.permissions import PermissionAllow, PermissionDeny
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel
from zpi_host.transcript import read_transcript

pytestmark = pytest.mark.anyio


def host() -> PluginHost:
    return PluginHost(PluginConfig(autoload=False)).load()


def calls(*pairs) -> dict:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in pairs]}


@pytest.fixture
def workspace(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "inside.txt").write_text("inside\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    return work


async def test_a_path_outside_the_workspace_is_denied_and_the_run_goes_on(zpi_env, workspace):
    model = ScriptedModel([calls(("read", {"path": "../outside.txt"}),
                                 ("read", {"path": "inside.txt"})), "done"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host())
    result = await session.run("read both")
    await session.dispose()
    assert result.result == "done" and not result.is_error
    denied, allowed = model.requests[1].messages[-2:]
    assert denied.is_error and "permission denied for read" in denied.content[0].text
    assert "outside.txt" in denied.content[0].text and "--add-dir" in denied.content[0].text
    assert not allowed.is_error and "inside" in allowed.content[0].text
    (denial,) = result.denials
    assert (denial.tool, denial.source) == ("read", "path")
    records = read_transcript(session.store.path).records
    (custom,) = [r for r in records if r.type == "custom"]
    assert custom.namespace == "zpi.permission-denial" and custom.data["tool"] == "read"


async def test_add_dirs_and_allow_rules_open_the_way(zpi_env, workspace, tmp_path):
    model = ScriptedModel([calls(("read", {"path": str(tmp_path / "outside.txt")})), "ok"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host(),
                                   add_dirs=[tmp_path])
    result = await session.run("read it")
    await session.dispose()
    assert result.denials == () and "outside" in model.requests[1].messages[-1].content[0].text


async def test_plan_mode_denies_side_effects_and_deny_rules_apply_in_bypass(zpi_env,
                                                                           workspace):
    model = ScriptedModel([calls(("write", {"path": "new.txt", "content": "x"})), "ok"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host(),
                                   permission_mode="plan")
    result = await session.run("write")
    await session.dispose()
    assert not (workspace / "new.txt").exists()
    assert result.denials[0].source == "mode"
    model = ScriptedModel([calls(("bash", {"command": "rm -f inside.txt"}),
                                 ("bash", {"command": "echo hi"})), "ok"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host(),
                                   permission_mode="bypass", deny=["bash(rm:*)"])
    result = await session.run("clean")
    await session.dispose()
    assert (workspace / "inside.txt").exists()
    assert [d.source for d in result.denials] == ["rule"]
    assert "hi" in model.requests[1].messages[-1].content[0].text


async def test_the_approver_can_change_the_input_or_interrupt_the_run(zpi_env, workspace):
    asked = []

    async def approver(name, arguments, context):
        asked.append((name, context.mode, context.reason))
        if arguments.get("content") == "draft":
            return PermissionAllow(updated_input={**arguments, "content": "final"})
        return PermissionDeny("not that one", interrupt=True)

    model = ScriptedModel([
        calls(("write", {"path": "a.txt", "content": "draft"})),
        calls(("write", {"path": "b.txt", "content": "other"}),
              ("write", {"path": "c.txt", "content": "never"})),
        "unreachable",
    ])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host(),
                                   permission_mode="ask", can_use_tool=approver)
    result = await session.run("write files")
    await session.dispose()
    assert (workspace / "a.txt").read_text() == "final"
    assert not (workspace / "b.txt").exists() and not (workspace / "c.txt").exists()
    assert result.stop_reason == "interrupted" and "not that one" in result.result
    assert [a[0] for a in asked] == ["write", "write"] and asked[0][1] == "ask"
    last = session.messages[-1]
    assert last.call_id.endswith("_1") and "not run: the run was interrupted" in \
        last.content[0].text


async def test_without_an_approver_ask_means_deny_and_says_so(zpi_env, workspace):
    model = ScriptedModel([calls(("write", {"path": "a.txt", "content": "x"})), "ok"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host(),
                                   permission_mode="ask")
    result = await session.run("write")
    await session.dispose()
    assert "no approver is configured" in result.denials[0].reason


class Approves:
    def __init__(self) -> None:
        self.reasons = []

    @hookimpl
    def zpi_permission_request(self, call, tool, reason):
        self.reasons.append(reason)
        return ToolDecision.allow("approved by policy plugin") if tool.name == "write" else None


async def test_permission_request_hooks_answer_before_the_approver(zpi_env, zpi_plugins,
                                                                   workspace):
    plugin = Approves()
    zpi_plugins.register(plugin, "approves")
    model = ScriptedModel([calls(("write", {"path": "a.txt", "content": "x"})), "ok"])
    session = await create_session(model="t:m", provider=model, cwd=workspace,
                                   permission_mode="ask")
    result = await session.run("write")
    await session.dispose()
    assert result.denials == () and (workspace / "a.txt").read_text() == "x"
    assert plugin.reasons and "ask" in plugin.reasons[0]


class NotesAndRefuses:
    @hookimpl
    def zpi_before_tool(self, call):
        return ToolDecision.context_only(f"note about {call.arguments.get('path')}")

    @hookimpl
    def zpi_permission_request(self, call):
        return ToolDecision.deny("writes need a ticket number")


def tool_results(model) -> list:
    from zpi_host.providers.anthropic import messages_body

    last = messages_body(model.requests[-1].messages)
    return [b for m in last for b in m["content"] if b["type"] == "tool_result"]


async def test_context_without_a_verdict_survives_a_denial_worded_by_the_hook(
        zpi_env, zpi_plugins, workspace):
    """A before_tool context_only reaches the model although a rule denies the call; a
    permission-request deny is read in the hook's words; the record still says who denied."""
    zpi_plugins.register(NotesAndRefuses(), "notes")
    model = ScriptedModel([calls(("write", {"path": "denied.txt", "content": "x"}),
                                 ("write", {"path": "asked.txt", "content": "x"})), "ok"])
    session = await create_session(model="t:m", provider=model, cwd=workspace,
                                   permission_mode="ask", deny=["write(denied.txt)"])
    result = await session.run("write both")
    await session.dispose()
    ruled, asked = tool_results(model)
    assert ruled["content"][0]["text"].startswith("permission denied for write: denied by rule")
    assert ruled["content"][-1]["text"] == (
        "<system-reminder>\nnote about denied.txt\n</system-reminder>")
    assert asked["content"][0] == {"type": "text", "text": "writes need a ticket number"}
    assert [d.reason for d in result.denials][1] == "denied by a hook: writes need a ticket number"


def test_a_verdict_less_decision_carries_only_context():
    from zpi_host.contract.decisions import answer_problem

    assert answer_problem("zpi_before_tool", ToolDecision.context_only("c")) is None
    assert "only context" in answer_problem("zpi_before_tool", ToolDecision(None, "why"))


@pytest.mark.parametrize("name", ["settings.json", "settings.local.json"])
async def test_a_project_may_not_choose_bypass(zpi_env, workspace, name):
    (workspace / ".zpi").mkdir()
    (workspace / ".zpi" / name).write_text(json.dumps({"permissions": {"mode": "bypass"}}))
    model = ScriptedModel([calls(("read", {"path": "../outside.txt"})), "ok"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host())
    assert session.permissions.mode == "default"
    assert any("may not set permissions.mode to bypass" in w for w in session.warnings)
    result = await session.run("read")
    await session.dispose()
    assert len(result.denials) == 1


@pytest.mark.parametrize("name", ["settings.json", "settings.local.json"])
async def test_a_project_may_not_open_the_private_network(zpi_env, workspace, name):
    """``allow_private_addresses``/``allowed_networks`` of the web service come from the user
    only: a repository's file is ignored with a warning; the user's own value stays."""
    web = {"allow_private_addresses": True, "allowed_networks": ["10.0.0.0/8"]}
    (workspace / ".zpi").mkdir()
    (workspace / ".zpi" / name).write_text(json.dumps(
        {"plugins": {"builtins": {"web": {**web, "max_results": 3}}}}))
    (zpi_env.agent_dir / "settings.json").write_text(json.dumps(
        {"plugins": {"builtins": {"web": {"allowed_networks": ["192.168.7.0/24"]}}}}))
    session = await create_session(model="t:m", provider=ScriptedModel([]), cwd=workspace,
                                   host=host())
    await session.dispose()
    merged = session.settings["plugins"]["builtins"]["web"]
    assert "allow_private_addresses" not in merged
    assert merged["allowed_networks"] == ["192.168.7.0/24"]  # the user's, not added to
    assert merged["max_results"] == 3  # the rest of the project's settings apply
    said = " ".join(session.warnings)
    assert "may not set plugins.builtins.web.allow_private_addresses" in said
    assert "may not set plugins.builtins.web.allowed_networks" in said


async def test_bad_permission_and_hook_settings_fail_before_the_session_exists(
        zpi_env, workspace):
    with pytest.raises(UsageError, match="unknown permission mode 'yolo'"):
        await create_session(model="t:m", provider=ScriptedModel([]), cwd=workspace,
                             host=host(), permission_mode="yolo")
    with pytest.raises(UsageError, match=r"hooks\.policies\.zpi_befor_tool"):
        await create_session(model="t:m", provider=ScriptedModel([]), cwd=workspace,
                             host=host(),
                             settings={"hooks": {"policies": {"zpi_befor_tool": "raise"}}})
    assert not (zpi_env.agent_dir / "sessions").exists()


async def test_exported_variables_reach_later_bash_calls(zpi_env, workspace):
    model = ScriptedModel([calls(("bash", {"command": "echo value=$ZPI_TEST_VAR"})), "ok"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host())
    session.view.set_environment("ZPI_TEST_VAR", "from-a-hook")
    assert session.view.environment == {"ZPI_TEST_VAR": "from-a-hook"}
    with pytest.raises(UsageError, match="invalid environment variable name"):
        session.view.set_environment("A=B", "x")
    await session.run("echo")
    await session.dispose()
    assert "value=from-a-hook" in model.requests[1].messages[-1].content[0].text
    assert session.view.permission_mode == "default"
    assert session.view.transcript_path == session.store.path


async def test_a_loaded_skill_outside_the_workspace_may_be_read(zpi_env, workspace):
    skill = zpi_env.agent_dir / "skills" / "notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\ndescription: take notes\n---\nthe body\n")
    (skill / "reference.md").write_text("more detail\n")
    model = ScriptedModel([calls(("read", {"path": str(skill / "reference.md")}),
                                 ("read", {"path": str(zpi_env.agent_dir / "settings.json")})),
                           "ok"])
    (zpi_env.agent_dir / "settings.json").write_text("{}")
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host())
    result = await session.run("use the skill")
    await session.dispose()
    assert "more detail" in model.requests[1].messages[-2].content[0].text
    assert [d.tool for d in result.denials] == ["read"]  # the agent dir itself is not open
