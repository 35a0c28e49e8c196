"""zpi_run_end: once per run, after every stop decision, with the run's result; not for
sub-agents; a failing observer does not change the result."""

from __future__ import annotations

import pytest

from zpi_host import hookimpl
from zpi_host.contract.decisions import StopDecision
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class Ends:
    def __init__(self) -> None:
        self.ends: list[tuple[str, str, int, bool]] = []
        self.stops = 0

    @hookimpl
    def zpi_stop(self, continuation):
        self.stops += 1
        return StopDecision("keep going") if continuation == 0 else None

    @hookimpl
    def zpi_run_end(self, session, result):
        self.ends.append((result.result, result.stop_reason, result.num_turns,
                          session.is_running))


class Broken:
    @hookimpl
    def zpi_run_end(self, result):
        raise RuntimeError("observer broke")


async def test_run_end_is_called_once_per_run_after_continuations(zpi_env, zpi_plugins,
                                                                   tmp_path):
    ends = Ends()
    zpi_plugins.register(ends, "ends")
    zpi_plugins.register(Broken(), "broken")
    model = ScriptedModel(["first", "second", "third", "fourth", "fifth"])
    session = await create_session(model="t:m", provider=model, cwd=tmp_path)
    one = await session.run("a")
    two = await session.run("b")
    await session.run_subagent("general-purpose", "look around")
    await session.dispose()
    assert ends.stops == 4  # two per run: the first continued
    assert ends.ends == [("second", "end_turn", 2, True), ("fourth", "end_turn", 2, True)]
    assert not one.is_error and not two.is_error
    assert any("observer broke" in w for w in session.take_warnings())
