"""Answer validation and the ``hooks`` settings of the hook runtime: wrong answers are diagnostics
naming plugin and hook; settings are validated and the most specific wins."""

from __future__ import annotations

import pytest
from helpers.hook_plugins import Broken, Kind, hooks_settings, make_host

from zpi_host import hookimpl
from zpi_host.contract.decisions import (
    CompactDecision,
    Instruction,
    PromptDecision,
    ToolDecision,
    ToolResultPatch,
)
from zpi_host.contract.hookcalls import MAX_DIAGNOSTICS
from zpi_host.contract.hookrunner import (
    DEFAULT_POLICIES,
    HookPolicies,
    HookPolicy,
    HookSettingsError,
    policy_for,
)
from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.errors import HookAnswerError, UsageError

pytestmark = pytest.mark.anyio


# ------------------------------------------------------------------------------ answers


class WrongAnswers:
    @hookimpl
    def zpi_before_tool(self):
        return {"behavior": "deny", "why": "nope"}

    @hookimpl
    def zpi_permission_request(self):
        return ToolDecision("maybe")

    @hookimpl
    def zpi_user_prompt(self):
        return PromptDecision(block="yes")

    @hookimpl
    def zpi_after_tool(self):
        return 42

    @hookimpl
    def zpi_stop(self):
        return "please continue"

    @hookimpl
    def zpi_request_options(self):
        return {1: "x"}

    @hookimpl
    def zpi_session_start(self):
        return [b"bytes"]

    @hookimpl
    def zpi_turn_end(self):
        return False

    @hookimpl
    def zpi_before_request(self):
        return "block"

    @hookimpl
    def zpi_before_compact(self):
        return CompactDecision(summary=42)

    @hookimpl
    def zpi_instructions(self):
        return [Instruction("fine"), Instruction("bad title", title=3)]


class GoodAnswers:
    @hookimpl
    def zpi_after_tool(self):
        return ToolResultPatch(content="replaced")

    @hookimpl
    def zpi_request_options(self):
        return {"temperature": 0}


async def test_wrong_answers_are_diagnostics_naming_plugin_and_hook(zpi_env, zpi_plugins,
                                                                    tmp_path):
    host = make_host(zpi_plugins, good=GoodAnswers(), wrong=WrongAnswers())
    hooks = host.hooks

    denied = await hooks.before_tool(None, "c", "t")
    assert denied.behavior == "deny"
    assert "'wrong' gave an invalid answer to zpi_before_tool" in denied.reason
    assert "dictionaries are not answers, build a ToolDecision" in denied.reason
    assert "no field 'why'" in denied.reason

    denied = await hooks.permission_request(None, "c", "t", "why")
    assert "unknown behavior 'maybe'" in denied.reason

    blocked = await hooks.user_prompt(None, "hi")
    assert blocked.blocked and "PromptDecision.block must be bool, got str" in (
        blocked.reasons[0].value)

    patch = await hooks.after_tool(None, "c", "r")  # fail-open: the good patch applies
    assert patch.content == "replaced"
    assert (await hooks.stop(None, "m", 0)).continue_with is None
    assert await hooks.request_options(None, "r") == {"temperature": 0}
    assert await hooks.session_start(None, "startup") == ()
    await hooks.turn_end(None, 1, "m")
    compact = await hooks.before_compact(None, "auto")
    assert compact.summary is None
    fragments = await hooks.instructions(tmp_path, {}, None)
    assert [f.text for f in fragments] == ["fine"]

    found = {(d.plugin, d.hook) for d in hooks.diagnostics}
    assert {("wrong", h) for h in (
        "zpi_before_tool", "zpi_permission_request", "zpi_user_prompt", "zpi_after_tool",
        "zpi_stop", "zpi_request_options", "zpi_session_start", "zpi_turn_end",
        "zpi_before_compact", "zpi_instructions")} <= found
    messages = {d.hook: d.message for d in hooks.diagnostics}
    assert "option names must be non-empty strings, got 1" in messages["zpi_request_options"]
    assert "this hook returns nothing, got bool" in messages["zpi_turn_end"]
    assert "CompactDecision.summary must be str or None" in messages["zpi_before_compact"]
    assert "Instruction.title must be str or None" in messages["zpi_instructions"]

    with pytest.raises(HookAnswerError, match="raise a typed error to stop the request"):
        await hooks.before_request(None, "r")  # raise by default


async def test_bad_instruction_fragment_raises_under_raise(zpi_env, zpi_plugins, tmp_path):
    host = make_host(zpi_plugins, hooks_settings(policies={"zpi_instructions": "raise"}),
                     wrong=WrongAnswers())
    with pytest.raises(HookAnswerError, match="'wrong' gave an invalid answer to zpi_instr"):
        await host.hooks.instructions(tmp_path, {}, None)


async def test_diagnostics_are_capped(zpi_env, zpi_plugins):
    host = make_host(zpi_plugins, broken=Broken())
    for index in range(MAX_DIAGNOSTICS + 5):
        await host.hooks.event(None, index)
    assert len(host.hooks.diagnostics) == MAX_DIAGNOSTICS
    assert host.hooks.diagnostics[-1].message.endswith(f"on {MAX_DIAGNOSTICS + 4}")


async def test_diagnostics_are_traced(zpi_env, zpi_plugins, capsys):
    zpi_plugins.register(Broken(), "broken")
    host = PluginHost(PluginConfig(autoload=False, trace=True,
                                   disabled=["zpi.tools", "zpi.models"])).load()
    await host.hooks.event(None, "tick")
    err = capsys.readouterr().err
    assert "zpi trace: zpi_event <- broken: raised RuntimeError: observer broke on tick" in err
    assert "zpi trace: zpi_event <- broken: diagnostic (fail-open): plugin 'broken'" in err


# ------------------------------------------------------------------------------ settings


def test_policy_lookup_most_specific_wins():
    settings = hooks_settings(
        timeout=30, on_error="raise",
        timeouts={"zpi_event": 2, "p": {"zpi_event": 1, "*": 9}, "q": {"zpi_stop": None}},
        policies={"zpi_event": "fail-closed", "p": {"zpi_event": "fail-open", "*": "raise"}},
    )
    assert policy_for("zpi_event", "p", settings) == HookPolicy(1.0, "fail-open")
    assert policy_for("zpi_stop", "p", settings) == HookPolicy(9.0, "raise")
    assert policy_for("zpi_event", "other", settings) == HookPolicy(2.0, "fail-closed")
    assert policy_for("zpi_stop", "other", settings) == HookPolicy(30.0, "raise")
    assert policy_for("zpi_stop", "q", settings) == HookPolicy(None, "raise")
    assert policy_for("zpi_before_tool", "x") == HookPolicy(60.0, "fail-closed")
    assert policy_for("zpi_before_tool", "x", {}) == DEFAULT_POLICIES["zpi_before_tool"]
    assert policy_for("zpi_event", "x", {"hooks": None}) == DEFAULT_POLICIES["zpi_event"]


@pytest.mark.parametrize(("hooks", "key", "fragment"), [
    ("strict", "hooks", "must be an object, got str"),
    ({"timout": 5}, "hooks.timout", "did you mean timeout?"),
    ({"timeout": 0}, "hooks.timeout", "greater than 0, or null"),
    ({"timeout": "5"}, "hooks.timeout", "got '5'"),
    ({"timeout": True}, "hooks.timeout", "got True"),
    ({"on_error": "open"}, "hooks.on_error", "must be one of 'fail-open', 'fail-closed'"),
    ({"policies": []}, "hooks.policies", "must be an object, got list"),
    ({"policies": {"zpi_before_tool": "deny"}}, "hooks.policies.zpi_before_tool",
     "must be one of"),
    ({"policies": {"zpi_befor_tool": "raise"}}, "hooks.policies.zpi_befor_tool",
     "did you mean zpi_before_tool?"),
    ({"policies": {"*": "raise"}}, 'hooks.policies["*"]', "use the setting hooks.on_error"),
    ({"timeouts": {"*": 5}}, 'hooks.timeouts["*"]', "use the setting hooks.timeout"),
    ({"policies": {"myplugin": "raise"}}, "hooks.policies.myplugin",
     "to configure the plugin 'myplugin' give an object"),
    ({"policies": {"zpi_event": {"*": "raise"}}}, "hooks.policies.zpi_event",
     "a hook takes a single value"),
    ({"policies": {"my.plugin": {"zpi_evnt": "raise"}}},
     'hooks.policies["my.plugin"].zpi_evnt', "did you mean zpi_event?"),
    ({"timeouts": {"p": {"zpi_event": -1}}}, "hooks.timeouts.p.zpi_event", "greater than 0"),
    ({"policies": {"zpi_load_plugins": "raise"}}, "hooks.policies.zpi_load_plugins",
     "runs while plugins load"),
    ({"max_stop_continuations": -1}, "hooks.max_stop_continuations", "0 or more"),
])
def test_bad_settings_name_the_key(hooks, key, fragment):
    with pytest.raises(HookSettingsError) as info:
        HookPolicies({"hooks": hooks})
    assert info.value.key == key
    assert fragment in str(info.value)
    assert str(info.value).startswith(f"setting {key}: ")
    assert isinstance(info.value, UsageError)


async def test_configure_validates_and_warns_about_unknown_plugins(zpi_env, zpi_plugins):
    host = make_host(zpi_plugins, kind=Kind())
    warnings = host.hooks.configure(hooks_settings(
        policies={"kind": {"*": "raise"}, "ghost": {"zpi_event": "raise"}}))
    assert len(warnings) == 1 and "'ghost', which is not installed" in warnings[0]
    assert host.hooks.policy_for("zpi_event", "kind").on_error == "raise"
    with pytest.raises(HookSettingsError, match=r"hooks\.timeout"):
        host.hooks.configure(hooks_settings(timeout=-5))
    assert host.hooks.policy_for("zpi_event", "kind").on_error == "raise"  # unchanged
    host.hooks.configure(None)
    assert host.hooks.policy_for("zpi_event", "kind") == DEFAULT_POLICIES["zpi_event"]


def test_max_stop_continuations_is_still_accepted():
    assert HookPolicies(hooks_settings(max_stop_continuations=3)).policy_for(
        "zpi_stop", "p") == DEFAULT_POLICIES["zpi_stop"]
