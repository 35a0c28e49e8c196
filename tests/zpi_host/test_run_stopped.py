"""RunStopped: any hook may end the run now, whatever its error policy; the history stays
valid and the session can run again."""

from __future__ import annotations

import pytest

from zpi_host import hookimpl
from zpi_host.errors import RunStopped
from zpi_host.providers.messages import ToolResultMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class StopsOnBash:
    @hookimpl
    def zpi_before_tool(self, call):
        if call.name == "bash":
            raise RunStopped("no shell today")


async def test_a_hook_stops_the_run_in_the_middle_of_a_batch(zpi_env, zpi_plugins, tmp_path):
    zpi_plugins.register(StopsOnBash(), "stops")
    (tmp_path / "a.txt").write_text("alpha\n")
    model = ScriptedModel([
        {"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}},
                        {"name": "bash", "arguments": {"command": "echo hi"}}]},
        "after the stop",
    ])
    session = await create_session(model="t:m", provider=model, cwd=tmp_path)
    events = []
    session.subscribe(events.append)
    stopped = await session.run("go")
    assert (stopped.stop_reason, stopped.is_error) == ("hook_stopped", False)
    assert stopped.result == "stopped by a hook: no shell today"
    results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_name for r in results] == ["read", "bash"]  # every call has a result
    assert results[1].is_error and "interrupted" in results[1].content[0].text
    again = await session.run("go on")
    await session.dispose()
    assert again.result == "after the stop"
    assert any("a hook stopped the run: no shell today" in e.message
               for e in events if e.type == "warning")
