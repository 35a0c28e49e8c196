"""builtins:tool_hint: the closest names and the disabled plugin behind an unknown tool."""

from __future__ import annotations

import pytest
from helpers.builtins import builtins_settings, scripted_session

from zpi_builtins.tool_hint import DisabledTool, closest_names, hint

pytestmark = pytest.mark.anyio


def calling(name: str) -> list:
    return [{"tool_calls": [{"name": name, "arguments": {}}]}, "done"]


async def unknown_tool_result(tmp_path, name: str, settings=None) -> str:
    session = await scripted_session(tmp_path, calling(name), settings=settings)
    result = await session.run("go")
    await session.dispose()
    assert not result.is_error and result.result == "done"
    (message,) = [m for m in session.messages if m.role == "tool"]
    assert message.is_error
    return "".join(c.text for c in message.content)


def test_closest_names_fold_case_and_camel_case():
    tools = ["read", "write", "edit", "bash", "task_output", "task_stop"]
    assert closest_names("Read", tools)[0] == "read"
    assert closest_names("TaskOutput", tools)[0] == "task_output"
    assert closest_names("task-stop", tools)[0] == "task_stop"
    assert closest_names("raed", tools)[0] == "read"
    assert closest_names("kubernetes", tools) == []


def test_hint_names_suggestions_and_the_plugin_to_enable():
    off = [DisabledTool("web_fetch", "builtins:web", "switched off in settings",
                        "set plugins.builtins.web.enabled to true")]
    text = hint("WebFetch", ["read", "write"], off)
    assert text is not None and "Did you mean" not in text
    assert "'web_fetch' is provided by the plugin builtins:web" in text
    assert "set plugins.builtins.web.enabled to true" in text
    assert hint("writ", ["read", "write"], off) == "Did you mean 'write'?"
    assert hint("kubernetes", ["read"], off) is None
    # a tool the session has is not offered as a disabled one
    assert hint("web_fetc", ["web_fetch"], off) == "Did you mean 'web_fetch'?"


async def test_a_misspelt_tool_gets_the_closest_names(zpi_env, tmp_path):
    text = await unknown_tool_result(tmp_path, "raed")
    first, rest = text.split("\n\n", 1)
    assert first.startswith("unknown tool 'raed'; available tools: ")
    assert rest.startswith("Did you mean 'read'")


async def test_a_service_switched_off_in_settings_is_named_with_its_setting(zpi_env, tmp_path):
    text = await unknown_tool_result(tmp_path, "ask_user",
                                     builtins_settings(ask={"enabled": False}))
    assert ("The tool 'ask_user' is provided by the plugin builtins:ask, which is switched "
            "off in settings") in text
    assert "ask the user to set plugins.builtins.ask.enabled to true" in text


async def test_a_blocked_service_is_named_with_how_to_unblock_it(zpi_env, tmp_path):
    text = await unknown_tool_result(tmp_path, "AskUser",
                                     {"plugins": {"disabled": ["builtins:ask"]}})
    assert "'ask_user' is provided by the plugin builtins:ask, which is blocked" in text
    assert "remove builtins:ask from plugins.disabled" in text


async def test_switched_off_the_hint_adds_nothing(zpi_env, tmp_path):
    text = await unknown_tool_result(tmp_path, "raed",
                                     builtins_settings(tool_hint={"enabled": False}))
    assert "\n\n" not in text and "Did you mean" not in text


@pytest.mark.parametrize("settings", [builtins_settings(web={"enabled": False}),
                                      {"plugins": {"disabled": ["builtins:web"]}}],
                         ids=["switched-off", "blocked"])
async def test_a_disabled_web_service_is_named_for_web_fetch(zpi_env, tmp_path, settings):
    text = await unknown_tool_result(tmp_path, "web_fetch", settings)
    assert "The tool 'web_fetch' is provided by the plugin builtins:web, which is " in text
    assert ("set plugins.builtins.web.enabled to true" in text
            or "remove builtins:web from plugins.disabled" in text)


def test_every_builtin_service_declares_the_tools_it_registers(zpi_env, tmp_path):
    """What a switched-off or blocked service would provide is what it declares: a service
    that registers tools it does not declare leaves the hint with nothing to say."""
    from zpi_host.contract.diagnostics import plugin_contributes, plugin_rows
    from zpi_host.contract.plugins import PluginConfig, PluginHost

    host = PluginHost(PluginConfig()).load()
    rows = plugin_rows(host, tmp_path, {})
    registering = {r["name"]: r["contributes"]["tools"] for r in rows
                   if r["distribution"] == "zpi-builtins" and r["contributes"].get("tools")}
    assert {"builtins:web", "builtins:ask", "builtins:search"} <= set(registering)
    for name, tools in registering.items():
        declared = plugin_contributes(host.get(name).plugin).get("tools", [])
        assert set(tools) <= set(declared), (name, tools, declared)
