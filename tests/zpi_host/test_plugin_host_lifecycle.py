"""A plugin host's lifecycle: sealed once a session it serves has started, released (plugins
unregistered, the last registered first) when that session is disposed; plugin state closed
in reverse order of its making."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from zpi_host import hookimpl
from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.errors import PluginHostSealedError, UsageError
from zpi_host.session.assembly import create_session

pytestmark = pytest.mark.anyio


def plugin(name: str) -> SimpleNamespace:
    @hookimpl
    def zpi_instructions(cwd, settings, resources):
        return None

    return SimpleNamespace(__name__=name, zpi_instructions=zpi_instructions)


def script(tmp_path, text="done"):
    path = tmp_path / "s.jsonl"
    path.write_text(f'{{"text": "{text}"}}\n')
    return f"scripted:{path}"


async def test_a_started_session_seals_its_host(zpi_env, tmp_path):
    session = await create_session(model=script(tmp_path), cwd=tmp_path,
                                   plugins={"first": plugin("first")})
    host = session.host
    host.register_plugin(plugin("before"), "before")  # not started yet: still open
    assert host.get("before").status == "ok"
    await session.run("hi")
    with pytest.raises(PluginHostSealedError) as caught:
        host.register_plugin(plugin("late"), "late")
    message = str(caught.value)
    assert "'late'" in message and "sealed" in message and "has started" in message
    assert isinstance(caught.value, UsageError)
    assert host.get("late") is None
    with pytest.raises(PluginHostSealedError):
        host.unregister("first")
    with pytest.raises(PluginHostSealedError):
        host.report_failed_plugin("broken", "no manifest")
    assert host.get("first").status == "ok"
    await session.dispose()


async def test_dispose_releases_plugins_last_registered_first(zpi_env, tmp_path):
    session = await create_session(
        model=script(tmp_path), cwd=tmp_path,
        plugins={"alpha": plugin("alpha"), "beta": plugin("beta"), "gamma": plugin("gamma")})
    host = session.host
    registered = [r.name for r in host.records]
    assert registered.index("alpha") < registered.index("beta") < registered.index("gamma")
    await session.run("hi")
    await session.dispose()
    assert host.released == list(reversed(registered))
    assert host.records == [] and host.pm.get_plugins() == set()
    with pytest.raises(PluginHostSealedError, match=r"disposed|started"):
        host.register_plugin(plugin("after"), "after")


async def test_a_host_the_caller_gave_is_theirs_to_release(zpi_env, tmp_path):
    host = PluginHost(PluginConfig(autoload=False)).load()
    session = await create_session(model=script(tmp_path), cwd=tmp_path, host=host)
    await session.run("hi")
    await session.dispose()
    assert host.released == [] and host.records  # still registered
    assert host.sealed_because is not None  # but sealed: a session of it started
    host.release()
    assert host.records == [] and host.released


async def test_plugin_state_closes_in_reverse_order(zpi_env, tmp_path):
    closed: list[str] = []

    class State:
        def __init__(self, name: str) -> None:
            self.name = name

        async def aclose(self) -> None:
            closed.append(self.name)

    session = await create_session(model=script(tmp_path), cwd=tmp_path)
    for name in ("made-first", "made-second", "made-third"):
        session.plugin_state[name] = State(name)
    await session.dispose()
    assert closed == ["made-third", "made-second", "made-first"]
