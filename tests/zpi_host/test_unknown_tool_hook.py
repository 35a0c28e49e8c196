"""zpi_unknown_tool: plugins add to the error result of a call to a tool the session lacks."""

from __future__ import annotations

import pytest
from helpers.builtins import scripted_session

from zpi_host import hookimpl

pytestmark = pytest.mark.anyio

TURNS = [{"tool_calls": [{"name": "raed", "arguments": {"path": "a.txt"}}]}, "done"]


def result_text(session) -> str:
    (result,) = [m for m in session.messages if m.role == "tool"]
    assert result.is_error
    return "".join(c.text for c in result.content)


class Explains:
    def __init__(self) -> None:
        self.seen: list[tuple[str, tuple[str, ...]]] = []

    @hookimpl
    def zpi_unknown_tool(self, session, call, available):
        self.seen.append((call.name, tuple(available)))
        return [f"{call.name} is not a tool", "try read"]


class Broken:
    @hookimpl
    def zpi_unknown_tool(self, call):
        raise RuntimeError("boom")


async def test_answers_follow_the_hosts_line_and_see_the_sorted_tool_names(
        zpi_env, zpi_plugins, tmp_path):
    explains = Explains()
    zpi_plugins.register(explains, "explains")
    session = await scripted_session(tmp_path, TURNS, settings={"plugins": {"disabled": [
        "zpi-builtins"]}})
    assert not session.host.hooks.tool_hooks_registered  # it does not stop early starts
    await session.run("read it")
    await session.dispose()
    text = result_text(session)
    ((name, available),) = explains.seen
    assert name == "raed" and list(available) == sorted(available) and "read" in available
    assert text == (f"unknown tool 'raed'; available tools: {', '.join(available)}\n\n"
                    "raed is not a tool\n\ntry read")


async def test_a_failing_plugin_is_a_diagnostic_and_the_call_still_gets_its_result(
        zpi_env, zpi_plugins, tmp_path):
    zpi_plugins.register(Broken(), "broken")
    session = await scripted_session(tmp_path, TURNS, settings={"plugins": {"disabled": [
        "zpi-builtins"]}})
    result = await session.run("read it")
    await session.dispose()
    assert not result.is_error and result.result == "done"
    assert result_text(session).startswith("unknown tool 'raed'; available tools: ")
    assert "boom" not in result_text(session)
    assert any("zpi_unknown_tool" in d.hook and "boom" in d.message
               for d in session.host.hooks.diagnostics)
