"""Plugin failures handled by their policy reach the user once as warning events;
notifications before an approver is asked."""

from __future__ import annotations

import pytest

from zpi_host import hookimpl
from zpi_host.permissions import PermissionAllow
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class FailsEveryTurn:
    @hookimpl
    def zpi_turn_start(self, turn):
        raise RuntimeError(f"broken counter at turn {turn > 0}")


async def test_a_fail_open_failure_is_a_warning_event_once(zpi_env, zpi_plugins, tmp_path):
    zpi_plugins.register(FailsEveryTurn(), "fails")
    model = ScriptedModel([{"tool_calls": [{"name": "read", "arguments": {"path": "x"}}]},
                           "one", "two"])
    session = await create_session(model="t:m", provider=model, cwd=tmp_path)
    events = []
    session.subscribe(events.append)
    first = await session.run("a")
    second = await session.run("b")
    await session.dispose()
    assert not first.is_error and not second.is_error  # fail-open: the run goes on
    warnings = [e.message for e in events if e.type == "warning"]
    assert len(warnings) == 1
    assert "plugin 'fails' in zpi_turn_start" in warnings[0]
    assert "broken counter" in warnings[0] and "fail-open" in warnings[0]


class Notified:
    def __init__(self) -> None:
        self.seen = []

    @hookimpl
    def zpi_notification(self, message, title, kind):
        self.seen.append((message, title, kind))


async def test_a_notification_goes_out_before_the_approver_is_asked(zpi_env, zpi_plugins,
                                                                    tmp_path):
    plugin = Notified()
    zpi_plugins.register(plugin, "notified")
    order = []

    def approver(name, arguments, context):
        order.append(("asked", len(plugin.seen)))
        return PermissionAllow()

    model = ScriptedModel([{"tool_calls": [{"name": "write", "arguments": {
        "path": "a.txt", "content": "x"}}]}, "done"])
    session = await create_session(model="t:m", provider=model, cwd=tmp_path,
                                   permission_mode="ask", can_use_tool=approver)
    await session.run("write it")
    await session.notify("all done", "Finished", "idle_prompt")
    await session.dispose()
    assert order == [("asked", 1)]
    message, title, kind = plugin.seen[0]
    assert (title, kind) == ("Permission needed", "permission_prompt")
    assert message.startswith("write needs your approval")
    assert plugin.seen[1] == ("all done", "Finished", "idle_prompt")
