"""BuiltinPluginRuntime: services once per session, background work drained at session end;
service settings with their documented defaults."""

from __future__ import annotations

import logging

import anyio
import pytest
from helpers.builtins import builtins_settings, scripted_session

from zpi_builtins.runtime import BuiltinPluginRuntime, runtime_for
from zpi_builtins.settings import drain_timeout, enabled, service_settings

pytestmark = pytest.mark.anyio


def test_service_settings_fill_in_the_schema_defaults():
    settings = builtins_settings(notify={"terminal": "osc9"})
    assert service_settings(settings, "notify") == {
        "enabled": True, "terminal": "osc9", "command": None, "min_run_seconds": 30.0}
    assert enabled({}, "ask") and enabled({}, "title") and enabled({}, "instructions")
    assert not enabled(builtins_settings(ask={"enabled": False}), "ask")
    assert drain_timeout({}) == 5.0
    assert drain_timeout(builtins_settings(drain_timeout=0.5)) == 0.5
    with pytest.raises(KeyError, match="not a built-in service"):
        service_settings({}, "nonsense")


async def test_each_service_is_made_once_per_session(zpi_env, tmp_path):
    first = await scripted_session(tmp_path, ["a"])
    second = await scripted_session(tmp_path, ["b"])
    made = []

    def factory(runtime):
        made.append(runtime)
        return object()

    runtime = runtime_for(first.view)
    assert runtime is runtime_for(first.view)
    assert runtime.service("x", factory) is runtime.service("x", factory)
    assert runtime_for(second.view) is not runtime
    runtime_for(second.view).service("x", factory)
    assert len(made) == 2 and made[0].session is first.view
    assert runtime.settings == first.view.settings
    await first.dispose()
    await second.dispose()


async def test_close_waits_for_work_and_cancels_what_overruns(zpi_env, tmp_path, caplog):
    session = await scripted_session(tmp_path, ["a"])
    runtime = BuiltinPluginRuntime(session.view)
    done = []

    async def quick():
        await anyio.sleep(0)
        done.append("quick")

    async def stuck():
        await anyio.Event().wait()

    async def broken():
        raise ValueError("no model today")

    runtime.spawn("quick work", quick())
    runtime.spawn("stuck work", stuck())
    with caplog.at_level(logging.INFO, logger="zpi_builtins"):
        runtime.spawn("broken work", broken())
        left = await runtime.close(timeout=0.2)
    assert done == ["quick"]
    assert left == ["stuck work"]
    assert runtime.pending == []
    assert "broken work failed: ValueError: no model today" in caplog.text
    assert "cancelled at session end" in caplog.text
    # work offered after close is not started
    runtime.spawn("late", quick())
    assert runtime.pending == [] and done == ["quick"]
    await session.dispose()


@pytest.mark.parametrize("ran", [True, False])
async def test_dispose_drains_and_warns_about_unfinished_work(zpi_env, tmp_path, ran):
    session = await scripted_session(tmp_path, ["a"], settings=builtins_settings(
        drain_timeout=0.1))
    if ran:
        await session.run("hi")
    runtime = runtime_for(session.view)

    async def stuck():
        await anyio.Event().wait()

    runtime.spawn("stuck work", stuck())
    await session.dispose()
    assert runtime.closed and runtime.pending == []
    assert any("did not finish at session end and were cancelled: stuck work" in w
               for w in session.take_warnings())


class BrokenState:
    async def aclose(self):
        raise RuntimeError("cannot close")


async def test_a_plugin_state_that_fails_to_close_is_a_warning(zpi_env, tmp_path):
    session = await scripted_session(tmp_path, ["a"])
    session.view.plugin_state("broken", BrokenState)
    await session.run("hi")
    await session.dispose()
    assert any("plugin state 'broken' failed to close: RuntimeError: cannot close" in w
               for w in session.take_warnings())
    assert session.store.closed  # the transcript is released all the same
