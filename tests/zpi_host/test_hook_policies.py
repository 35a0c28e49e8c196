"""Error policies and time budgets around hook calls (``hookrunner``): the default table, fail-open,
fail-closed and raise, async and sync budgets, and a run that goes on after a guard fails."""

from __future__ import annotations

import anyio
import pytest
from helpers.hook_plugins import Broken, Kind, Slow, SlowSync, hooks_settings, make_host

from zpi_host import hookimpl
from zpi_host.contract import hookspecs
from zpi_host.contract.hookrunner import (
    CLOSED_ANSWERS,
    DEFAULT_BUDGET_S,
    DEFAULT_POLICIES,
    NOT_GOVERNED,
    HookTimeoutError,
)
from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.errors import ContextOverflowError, HookError

pytestmark = pytest.mark.anyio


# ------------------------------------------------------------------------------ the table


def test_every_governed_hook_has_a_default_policy():
    hooks = {n for n in vars(hookspecs) if n.startswith("zpi_") and callable(vars(hookspecs)[n])
             and hasattr(vars(hookspecs)[n], "zpi_spec")}
    assert set(DEFAULT_POLICIES) | set(NOT_GOVERNED) == hooks
    assert not set(DEFAULT_POLICIES) & set(NOT_GOVERNED)
    assert set(CLOSED_ANSWERS) <= set(DEFAULT_POLICIES)
    assert all(p.budget_s == DEFAULT_BUDGET_S for p in DEFAULT_POLICIES.values())
    assert DEFAULT_POLICIES["zpi_before_tool"].on_error == "fail-closed"
    assert DEFAULT_POLICIES["zpi_user_prompt"].on_error == "fail-closed"
    assert DEFAULT_POLICIES["zpi_event"].on_error == "fail-open"
    assert DEFAULT_POLICIES["zpi_before_request"].on_error == "raise"
    assert DEFAULT_POLICIES["zpi_register_tools"].on_error == "raise"


# ------------------------------------------------------------------------------ policies


async def test_before_tool_failure_denies_by_default(zpi_env, zpi_plugins):
    kind = Kind()
    host = make_host(zpi_plugins, kind=kind, broken=Broken())  # broken is called first
    decision = await host.hooks.before_tool(None, "rm", None)
    assert decision.behavior == "deny"
    assert decision.reasons[0].plugin == "broken"
    assert decision.reason == ("plugin 'broken' failed in zpi_before_tool: ValueError: cannot "
                               "judge rm (policy fail-closed)")
    assert kind.calls == []  # a closed call runs no further plugin code
    (diagnostic,) = host.hooks.diagnostics
    assert (diagnostic.plugin, diagnostic.hook, diagnostic.policy) == (
        "broken", "zpi_before_tool", "fail-closed")


async def test_permission_request_failure_denies(zpi_env, zpi_plugins):
    host = make_host(zpi_plugins, broken=Broken())
    decision = await host.hooks.permission_request(None, "bash", None, "outside workspace")
    assert decision.behavior == "deny"
    assert "failed in zpi_permission_request: ValueError: no opinion" in decision.reason


async def test_user_prompt_failure_blocks_the_prompt(zpi_env, zpi_plugins):
    host = make_host(zpi_plugins, kind=Kind(), broken=Broken())
    decision = await host.hooks.user_prompt(None, "hello")
    assert decision.blocked
    assert decision.contexts == ()
    assert decision.reasons[0].value.startswith("plugin 'broken' failed in zpi_user_prompt")
    assert decision.reasons[0].value.endswith("(policy fail-closed)")


async def test_fail_open_skips_the_failing_plugin(zpi_env, zpi_plugins):
    settings = hooks_settings(policies={"zpi_before_tool": "fail-open"})
    kind = Kind()
    host = make_host(zpi_plugins, settings, kind=kind, broken=Broken())
    decision = await host.hooks.before_tool(None, "rm", None)
    assert (decision.behavior, decision.reason) == ("allow", "kind says yes")
    assert kind.calls == ["before_tool"]
    assert host.hooks.diagnostics[-1].policy == "fail-open"
    assert "cannot judge rm" in host.hooks.diagnostics[-1].message


async def test_raise_policy_raises_hook_error(zpi_env, zpi_plugins):
    settings = hooks_settings(policies={"broken": {"zpi_user_prompt": "raise"}})
    host = make_host(zpi_plugins, settings, broken=Broken())
    with pytest.raises(HookError, match="plugin 'broken' failed in zpi_user_prompt") as info:
        await host.hooks.user_prompt(None, "hello")
    assert isinstance(info.value.cause, KeyError)
    assert not host.hooks.diagnostics


async def test_per_plugin_override_beats_per_hook_setting(zpi_env, zpi_plugins):
    settings = hooks_settings(
        on_error="raise",
        policies={"zpi_before_tool": "raise", "broken": {"zpi_before_tool": "fail-open"}},
    )
    host = make_host(zpi_plugins, settings, kind=Kind(), broken=Broken())
    decision = await host.hooks.before_tool(None, "ls", None)  # broken is skipped
    assert decision.behavior == "allow"
    with pytest.raises(HookError):  # the global on_error applies to other hooks
        await host.hooks.user_prompt(None, "hi")


async def test_closed_answers_of_the_other_guarding_hooks(zpi_env, zpi_plugins):
    settings = hooks_settings(policies={"broken": {"*": "fail-closed"}})
    host = make_host(zpi_plugins, settings, kind=Kind(), broken=Broken())
    patch = await host.hooks.after_tool(None, "read", "secret output")
    assert patch.content.startswith("[the tool's output was withheld: plugin 'broken' failed")
    assert patch.contexts == ()
    stop = await host.hooks.stop(None, "done", 0)
    assert stop.continue_with is None  # kind wanted to continue; the run stops
    sub = await host.hooks.subagent_stop(None, "reviewer", "a1", "done", 0)
    assert sub.continue_with is None
    compact = await host.hooks.before_compact(None, "auto")
    assert compact.cancel and "summariser crashed" in compact.reason
    assert compact.summary is None


async def test_fail_open_defaults_for_stop_compact_and_after_tool(zpi_env, zpi_plugins):
    host = make_host(zpi_plugins, kind=Kind(), broken=Broken())
    assert (await host.hooks.stop(None, "done", 0)).continue_with == "keep going"
    compact = await host.hooks.before_compact(None, "auto")
    assert (compact.cancel, compact.summary) == (False, "kind summary")
    patch = await host.hooks.after_tool(None, "read", "out")
    assert (patch.content, [c.value for c in patch.contexts]) == (None, ["kind note"])
    assert [d.hook for d in host.hooks.diagnostics] == [
        "zpi_stop", "zpi_before_compact", "zpi_after_tool"]


async def test_fail_closed_without_a_guarded_action_raises(zpi_env, zpi_plugins):
    settings = hooks_settings(policies={"zpi_turn_start": "fail-closed"})
    host = make_host(zpi_plugins, settings, broken=Broken())
    with pytest.raises(HookError, match="turn counter crashed"):
        await host.hooks.turn_start(None, 1)


async def test_observer_failures_are_diagnostics_unless_raise(zpi_env, zpi_plugins):
    kind = Kind()
    host = make_host(zpi_plugins, kind=kind, broken=Broken())
    await host.hooks.turn_start(None, 1)
    await host.hooks.event(None, "tick")
    assert kind.calls == ["event:tick"]  # the other observer still ran
    assert [d.hook for d in host.hooks.diagnostics] == ["zpi_turn_start", "zpi_event"]
    strict = host.hooks.configured(hooks_settings(policies={"broken": {"zpi_event": "raise"}}))
    with pytest.raises(HookError, match="observer broke on tock"):
        await strict.event(None, "tock")
    assert len(strict.diagnostics) == 0  # a configured copy keeps its own diagnostics
    assert len(host.hooks.diagnostics) == 2


async def test_registration_and_prompt_hooks(zpi_env, zpi_plugins, tmp_path):
    host = make_host(zpi_plugins, kind=Kind(), broken=Broken())
    with pytest.raises(HookError, match="no tools today"):  # raise by default
        await host.hooks.register_tools(tmp_path, {})
    with pytest.raises(HookError, match="prompt rewriter crashed"):
        await host.hooks.system_prompt("base", [], [], None)
    host.hooks.configure(hooks_settings(policies={"broken": {"*": "fail-open"}}))
    assert [a.value for a in await host.hooks.register_tools(tmp_path, {})] == ["kind-tool"]
    assert await host.hooks.system_prompt("base", [], [], None) == "base (kind)"


class Guard:
    @hookimpl
    def zpi_before_request(self, request):
        if request == "big":
            raise ContextOverflowError("over the guard's threshold")
        if request == "bug":
            raise RuntimeError("guard bug")


async def test_typed_errors_from_before_request_pass_through_any_policy(zpi_env, zpi_plugins):
    host = make_host(zpi_plugins, hooks_settings(policies={"zpi_before_request": "fail-open"}),
                     guard=Guard())
    with pytest.raises(ContextOverflowError, match="threshold"):
        await host.hooks.before_request(None, "big")
    await host.hooks.before_request(None, "bug")  # fail-open: reported, request goes on
    assert "guard bug" in host.hooks.diagnostics[-1].message


# ------------------------------------------------------------------------------ budgets


async def test_async_timeout_denies_under_fail_closed(zpi_env, zpi_plugins):
    slow = Slow()
    host = make_host(zpi_plugins, hooks_settings(timeouts={"zpi_before_tool": 0.05}), slow=slow)
    decision = await host.hooks.before_tool(None, "ls", None)
    assert decision.behavior == "deny"
    assert "did not answer zpi_before_tool within its budget of 0.05 s" in decision.reason
    assert slow.cancelled == ["zpi_before_tool"]


async def test_async_timeout_raises_hook_timeout_error(zpi_env, zpi_plugins):
    settings = hooks_settings(timeouts={"slow": {"*": 0.05}},
                              policies={"slow": {"zpi_user_prompt": "raise"}})
    host = make_host(zpi_plugins, settings, slow=Slow())
    with pytest.raises(HookTimeoutError) as info:
        await host.hooks.user_prompt(None, "hi")
    error = info.value
    assert isinstance(error, HookError)
    assert (error.plugin, error.hook, error.budget_s) == ("slow", "zpi_user_prompt", 0.05)
    assert isinstance(error.cause, TimeoutError)


async def test_async_timeout_under_fail_open_drops_the_answer(zpi_env, zpi_plugins):
    host = make_host(zpi_plugins, hooks_settings(timeout=0.05), slow=Slow())
    assert await host.hooks.request_options(None, "req") == {}
    assert "within its budget of 0.05 s" in host.hooks.diagnostics[-1].message


async def test_no_budget_means_no_timeout(zpi_env, zpi_plugins):
    class Quick:
        @hookimpl
        async def zpi_request_options(self):
            await anyio.sleep(0)
            return {"seed": 1}

    host = make_host(zpi_plugins, hooks_settings(timeout=None), quick=Quick())
    assert host.hooks.policy_for("zpi_request_options", "quick").budget_s is None
    assert await host.hooks.request_options(None, "req") == {"seed": 1}


async def test_sync_overrun_is_reported_and_its_answer_kept(zpi_env, zpi_plugins):
    host = make_host(zpi_plugins, hooks_settings(timeouts={"zpi_request_options": 0.001}),
                     slow=SlowSync())
    assert await host.hooks.request_options(None, "req") == {"temperature": 0.5}
    diagnostic = host.hooks.diagnostics[-1]
    assert (diagnostic.plugin, diagnostic.policy) == ("slow", None)
    assert "cannot be interrupted" in diagnostic.message
    assert "over its budget of 0.001 s" in diagnostic.message


def test_hook_timeout_error_message():
    error = HookTimeoutError("guard", "zpi_before_tool", 5)
    assert str(error) == (
        "plugin 'guard' did not answer zpi_before_tool within its budget of 5 s and was "
        "cancelled (make the hook faster, or raise the budget with the setting "
        "hooks.timeouts: {'guard': {'zpi_before_tool': SECONDS}})")


# ------------------------------------------------------------------------------ in a session


class CrashingGuard:
    @hookimpl
    async def zpi_before_tool(self, call):
        raise RuntimeError(f"guard crashed on {call.name}")

    @hookimpl
    def zpi_turn_end(self, turn):
        raise RuntimeError("turn log full")


async def test_a_run_denies_the_call_and_goes_on(zpi_env, zpi_plugins, tmp_path):
    from zpi_host.providers.messages import ToolResultMessage
    from zpi_host.session.assembly import create_session
    from zpi_host.testing import ScriptedModel

    (tmp_path / "a.txt").write_text("hello\n")
    model = ScriptedModel([
        {"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]},
        {"text": "could not read"},
    ])
    zpi_plugins.register(CrashingGuard(), "guard")
    host = PluginHost(PluginConfig(autoload=False)).load()
    session = await create_session(model="test:model", provider=model, cwd=tmp_path, host=host,
                                   persist=False)
    result = await session.run("read a.txt")
    assert (result.is_error, result.result) == (False, "could not read")
    (denied,) = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    assert denied.is_error
    assert "plugin 'guard' failed in zpi_before_tool: RuntimeError: guard crashed on read" in (
        denied.content[0].text)
    assert {d.hook for d in host.hooks.diagnostics} == {"zpi_before_tool", "zpi_turn_end"}

    settings = {"hooks": {"policies": {"guard": {"zpi_turn_end": "raise"}}}}
    host.hooks.configure(settings)  # what assembly does with the session's settings
    model = ScriptedModel([{"text": "hi"}])
    session = await create_session(model="test:model", provider=model, cwd=tmp_path, host=host,
                                   persist=False, settings=settings)
    result = await session.run("hello")
    assert result.is_error
    assert "plugin 'guard' failed in zpi_turn_end: RuntimeError: turn log full" in result.error
