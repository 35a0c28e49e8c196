"""The typed facade: every hook is reachable through it, awaited, attributed and combined as
``hookspecs.py`` documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from zpi_host import hookimpl
from zpi_host.contract.decisions import (
    CompactDecision,
    Instruction,
    PromptDecision,
    StopDecision,
    ToolDecision,
    ToolResultPatch,
)
from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.errors import ContextOverflowError, HookAnswerError, HookError

pytestmark = pytest.mark.anyio


def make_host(zpi_plugins, **plugins) -> PluginHost:
    for name, plugin in plugins.items():
        zpi_plugins.register(plugin, name)
    return PluginHost(PluginConfig(autoload=False, disabled=["zpi.tools", "zpi.models"])).load()


class Strict:
    @hookimpl
    def zpi_before_tool(self, call):
        return ToolDecision.deny(f"no {call}") if call == "rm" else ToolDecision.allow("fine")

    @hookimpl
    def zpi_permission_request(self, call, reason):
        return ToolDecision.ask("still unsure")

    @hookimpl
    def zpi_user_prompt(self, prompt):
        return PromptDecision(block="secret" in prompt, reason="contains a secret",
                              context="strict saw it")

    @hookimpl
    async def zpi_stop(self, message, continuation):
        return StopDecision("run the tests") if continuation == 0 else None

    @hookimpl
    def zpi_subagent_stop(self, agent_type, continuation):
        return StopDecision(f"{agent_type} keep going")

    @hookimpl
    def zpi_before_compact(self, preparation):
        return CompactDecision(summary="strict summary")

    @hookimpl
    def zpi_after_tool(self, call, result):
        return ToolResultPatch(content=f"{result} (checked)", context="strict checked")


class Lenient:
    @hookimpl(tryfirst=True)
    async def zpi_before_tool(self, call, tool):
        return ToolDecision.allow(updated_input={"path": tool}) if call != "bash" else \
            ToolDecision.ask("bash needs a human")

    @hookimpl
    def zpi_permission_request(self, session, call, tool, reason):
        return ToolDecision.allow(updated_input={"command": "ls"}) if call == "bash" else None

    @hookimpl
    def zpi_user_prompt(self, session, prompt):
        return "lenient context"

    @hookimpl
    def zpi_stop(self, session):
        return None

    @hookimpl
    def zpi_before_compact(self, session, preparation):
        return CompactDecision(cancel=preparation == "manual", reason="not now")

    @hookimpl
    def zpi_after_tool(self, session, call, result):
        return "lenient note"

    @hookimpl
    def zpi_tool_failed(self, session, call, result):
        return f"{call} failed with {result}"


async def test_before_tool_deny_beats_ask_beats_allow(zpi_env, zpi_plugins):
    host = make_host(zpi_plugins, strict=Strict(), lenient=Lenient())
    order = [i.plugin_name for i in host.hooks.implementations("zpi_before_tool")]
    assert order == ["lenient", "strict"]  # tryfirst
    allow = await host.hooks.before_tool(session=None, call="read", tool="a.txt")
    assert (allow.behavior, allow.reason, allow.updated_input) == ("allow", "fine",
                                                                   {"path": "a.txt"})
    ask = await host.hooks.before_tool(session=None, call="bash", tool="t")
    assert (ask.behavior, ask.reason) == ("ask", "bash needs a human")
    deny = await host.hooks.before_tool(session=None, call="rm", tool="t")
    assert (deny.behavior, deny.reason, deny.updated_input) == ("deny", "no rm", None)
    assert deny.reasons[0].plugin == "strict"


async def test_permission_request_ignores_ask_and_allows(zpi_env, zpi_plugins):
    host = make_host(zpi_plugins, strict=Strict(), lenient=Lenient())
    answer = await host.hooks.permission_request(None, "bash", None, "outside workspace")
    assert (answer.behavior, answer.updated_input) == ("allow", {"command": "ls"})
    only_ask = make_host(zpi_plugins, strict2=Strict())
    answer = await only_ask.hooks.permission_request(None, "edit", None, "why")
    assert answer.behavior is None  # ask does not settle a permission question


async def test_user_prompt_block_and_contexts(zpi_env, zpi_plugins):
    host = make_host(zpi_plugins, strict=Strict(), lenient=Lenient())
    fine = await host.hooks.user_prompt(None, "hello")
    assert not fine.blocked
    assert [(c.plugin, c.value) for c in fine.contexts] == [
        ("lenient", "lenient context"), ("strict", "strict saw it")]
    blocked = await host.hooks.user_prompt(None, "my secret")
    assert blocked.blocked and blocked.reasons[0].value == "contains a secret"


async def test_stop_and_subagent_stop_continue(zpi_env, zpi_plugins):
    host = make_host(zpi_plugins, strict=Strict(), lenient=Lenient())
    first = await host.hooks.stop(None, "done", 0)
    assert first.continue_with == "run the tests"
    second = await host.hooks.stop(None, "done", 1)
    assert second.continue_with is None
    sub = await host.hooks.subagent_stop(None, "reviewer", "a1", "done", 0)
    assert sub.continue_with == "reviewer keep going"


async def test_compaction_cancel_wins_over_summary(zpi_env, zpi_plugins):
    host = make_host(zpi_plugins, strict=Strict(), lenient=Lenient())
    cancelled = await host.hooks.before_compact(None, "manual")
    assert cancelled.cancel and cancelled.reason == "not now"
    summary = await host.hooks.before_compact(None, "auto")
    assert (summary.cancel, summary.summary, summary.summary_from) == (
        False, "strict summary", "strict")


async def test_after_tool_patches_and_failure_context(zpi_env, zpi_plugins):
    host = make_host(zpi_plugins, strict=Strict(), lenient=Lenient())
    patch = await host.hooks.after_tool(None, "read", "text")
    assert patch.content == "text (checked)"
    assert [c.value for c in patch.contexts] == ["lenient note", "strict checked"]
    failed = await host.hooks.tool_failed(None, "bash", "exit 1")
    assert [c.value for c in failed] == ["bash failed with exit 1"]


class Registrar:
    @hookimpl
    def zpi_register_tools(self, cwd, settings):
        return [f"tool-in-{cwd.name}"]

    @hookimpl
    def zpi_tool_overrides(self, settings):
        return ["read-override"]

    @hookimpl
    def zpi_register_providers(self, settings):
        return [settings["provider"]]

    @hookimpl
    async def zpi_register_commands(self, cwd):
        return ["review"]

    @hookimpl
    def zpi_register_resources(self, cwd):
        return [cwd / "extra"]

    @hookimpl
    def zpi_prepare_tools(self, tools, resources):
        return [f"skill-tool-for-{len(tools)}-{resources}"]

    @hookimpl
    def zpi_instructions(self, cwd, settings, resources):
        return ["Be brief.", Instruction("Use tests.", title="testing"), "  ", 42]

    @hookimpl
    def zpi_system_prompt(self, prompt, tools, instructions, resources):
        return prompt + f" [{len(tools)} tools, {len(instructions)} instructions]"


class PromptChain:
    @hookimpl(trylast=True)
    def zpi_system_prompt(self, prompt):
        return prompt.upper()


async def test_registration_hooks_flatten_and_attribute(zpi_env, zpi_plugins, tmp_path):
    host = make_host(zpi_plugins, registrar=Registrar(), chain=PromptChain())
    settings = {"provider": "scripted-x"}
    tools = await host.hooks.register_tools(tmp_path, settings)
    assert [(a.plugin, a.value) for a in tools] == [("registrar", f"tool-in-{tmp_path.name}")]
    assert [a.value for a in await host.hooks.tool_overrides(tmp_path, settings)] == [
        "read-override"]
    assert [a.value for a in await host.hooks.register_providers(settings)] == ["scripted-x"]
    assert [a.value for a in await host.hooks.register_commands(tmp_path, settings)] == [
        "review"]
    assert [a.value for a in await host.hooks.register_resources(tmp_path, settings)] == [
        tmp_path / "extra"]
    prepared = await host.hooks.prepare_tools(["a", "b"], "res", tmp_path, settings)
    assert [a.value for a in prepared] == ["skill-tool-for-2-res"]
    instructions = await host.hooks.instructions(tmp_path, settings, None)
    assert [(i.text, i.title, i.source) for i in instructions] == [
        ("Be brief.", None, "registrar"), ("Use tests.", "testing", "registrar")]
    assert len(host.hooks.diagnostics) == 2  # the blank and the non-text fragment, dropped
    assert all(d.plugin == "registrar" for d in host.hooks.diagnostics)
    prompt = await host.hooks.system_prompt("base", ["t"], instructions, None)
    assert prompt == "BASE [1 TOOLS, 2 INSTRUCTIONS]"


class Observer:
    def __init__(self) -> None:
        self.seen: list[tuple] = []

    @hookimpl
    def zpi_before_request(self, session, request):
        if request == "too big":
            raise OverflowError("context too large")
        if request == "guarded":
            raise ContextOverflowError("over the guard's threshold")
        self.seen.append(("before_request", request))

    @hookimpl
    def zpi_request_options(self, request):
        return {"temperature": 0.2, "seen": request}

    @hookimpl
    def zpi_after_compact(self, session, result):
        self.seen.append(("after_compact", result))

    @hookimpl
    def zpi_session_start(self, session, source):
        return [f"start:{source}", "second"]

    @hookimpl
    def zpi_turn_start(self, session, turn):
        self.seen.append(("turn_start", turn))

    @hookimpl
    def zpi_turn_end(self, session, turn, message):
        self.seen.append(("turn_end", turn, message))

    @hookimpl
    def zpi_subagent_start(self, session, agent_type, agent_id, prompt):
        return f"{agent_type}/{agent_id}: {prompt}"

    @hookimpl
    def zpi_notification(self, session, message, title, kind):
        self.seen.append(("notification", message, title, kind))

    @hookimpl
    def zpi_session_end(self, session, reason):
        self.seen.append(("session_end", reason))

    @hookimpl
    def zpi_event(self, session, event):
        if event == "boom":
            raise RuntimeError("observer broke")
        self.seen.append(("event", event))


class LateOptions:
    @hookimpl(trylast=True)
    def zpi_request_options(self):
        return {"temperature": 0.9}


class SecondObserver:
    def __init__(self) -> None:
        self.events: list[str] = []

    @hookimpl(trylast=True)
    def zpi_event(self, event):
        self.events.append(event)


async def test_observers_and_options(zpi_env, zpi_plugins):
    observer, second = Observer(), SecondObserver()
    host = make_host(zpi_plugins, observer=observer, late=LateOptions(), second=second)
    await host.hooks.before_request(None, "req")
    with pytest.raises(HookError, match="plugin 'observer' failed in zpi_before_request"):
        await host.hooks.before_request(None, "too big")
    with pytest.raises(ContextOverflowError, match="threshold"):  # typed errors pass through
        await host.hooks.before_request(None, "guarded")
    assert await host.hooks.request_options(None, "req") == {"temperature": 0.9, "seen": "req"}
    await host.hooks.after_compact(None, "compacted")
    starts = await host.hooks.session_start(None, "resume")
    assert [s.value for s in starts] == ["start:resume", "second"]
    await host.hooks.turn_start(None, 3)
    await host.hooks.turn_end(None, 3, "msg")
    sub = await host.hooks.subagent_start(None, "explorer", "id7", "find x")
    assert [s.value for s in sub] == ["explorer/id7: find x"]
    await host.hooks.notification(None, "needs approval", None, "permission_prompt")
    await host.hooks.session_end(None, "other")
    await host.hooks.event(None, "boom")  # logged, not raised; the next observer still runs
    await host.hooks.event(None, "tick")
    assert observer.seen == [
        ("before_request", "req"), ("after_compact", "compacted"), ("turn_start", 3),
        ("turn_end", 3, "msg"), ("notification", "needs approval", None, "permission_prompt"),
        ("session_end", "other"), ("event", "tick")]
    assert second.events == ["boom", "tick"]
    assert "observer broke" in host.hooks.diagnostics[-1].message


class WrongAnswers:
    @hookimpl
    def zpi_before_tool(self):
        return "allow"

    @hookimpl
    def zpi_request_options(self):
        return ["temperature"]

    @hookimpl
    def zpi_register_tools(self):
        return "read"

    @hookimpl
    def zpi_system_prompt(self):
        return 42


async def test_invalid_answers_name_plugin_and_hook(zpi_env, zpi_plugins, tmp_path):
    host = make_host(zpi_plugins, wrong=WrongAnswers())
    denied = await host.hooks.before_tool(None, "c", "t")  # fail-closed by default
    assert denied.behavior == "deny"
    assert "'wrong' gave an invalid answer to zpi_before_tool" in denied.reason
    assert host.hooks.diagnostics[-1].policy == "fail-closed"
    assert await host.hooks.request_options(None, "r") == {}  # reported and skipped
    assert "zpi_request_options" in host.hooks.diagnostics[-1].message
    with pytest.raises(HookAnswerError, match="expected a list, got str"):
        await host.hooks.register_tools(tmp_path, {})
    with pytest.raises(HookAnswerError, match="expected str or None, got int"):
        await host.hooks.system_prompt("p", [], [], None)


class Loader:
    @hookimpl
    async def zpi_load_plugins(self, host):
        host.register_plugin(Observer(), "loaded:child", source="zcode")


def test_async_load_plugins_and_sync_listing(zpi_env, zpi_plugins):
    from zpi_host.contract.diagnostics import plugin_rows

    host = make_host(zpi_plugins, loader=Loader(), registrar=Registrar())
    assert host.get("loaded:child").source == "zcode"
    rows = {r["name"]: r for r in plugin_rows(host, Path("/tmp/x"), {"provider": "p"})}
    assert rows["registrar"]["contributes"] == {
        "commands": ["review"], "providers": ["p"], "resources": ["extra"],
        "tool_overrides": ["read-override"], "tools": ["tool-in-x"]}
    assert rows["loaded:child"]["hooks"][0] == "zpi_after_compact"


class EventOnly:
    @hookimpl
    def zpi_event(self, session, event):
        return None


class ToolFailedOnly:
    @hookimpl
    def zpi_tool_failed(self, session, call, result):
        return None


def test_has_implementations_follows_registration_for_one_and_several_names(zpi_env,
                                                                            zpi_plugins):
    host = make_host(zpi_plugins)
    hooks = host.hooks
    assert not hooks.has_implementations("zpi_event")
    assert not hooks.has_implementations("zpi_event", "zpi_tool_failed")
    assert not hooks.tool_hooks_registered
    host.register_plugin(EventOnly(), "events")
    assert hooks.has_implementations("zpi_event")
    assert not hooks.has_implementations("zpi_tool_failed")
    assert hooks.has_implementations("zpi_tool_failed", "zpi_event")
    assert not hooks.tool_hooks_registered
    host.register_plugin(ToolFailedOnly(), "failures")
    assert hooks.has_implementations("zpi_tool_failed")
    assert hooks.tool_hooks_registered
    host.unregister("events")
    assert not hooks.has_implementations("zpi_event")
    assert hooks.has_implementations("zpi_event", "zpi_tool_failed")
    host.unregister("failures")
    assert not hooks.has_implementations("zpi_tool_failed")
    assert not hooks.has_implementations("zpi_event", "zpi_tool_failed")
    assert not hooks.tool_hooks_registered
