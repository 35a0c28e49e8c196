"""``SessionView.add_context``: context a plugin adds beside the run reaches the model before
its next request (never between a call and its result), recorded in the transcript; a
deferred text is asked at delivery and dropped when it says None."""

from __future__ import annotations

import pytest

from zpi_host import hookimpl
from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.errors import UsageError
from zpi_host.providers.messages import ContextMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class Reporter:
    """Adds context while the first tool runs (as a service does when a task ends)."""

    def __init__(self) -> None:
        self.stale = True

    @hookimpl
    def zpi_before_tool(self, session, call, tool):
        session.add_context("the build finished", "reporter")
        session.add_context(lambda: None if self.stale else "never", "reporter")
        session.add_context(lambda: "asked at delivery", "reporter")


async def test_context_is_delivered_at_the_next_turn_and_recorded(zpi_env, tmp_path):
    host = PluginHost(PluginConfig(autoload=False)).load()
    host.register_plugin(Reporter(), "reporter")
    model = ScriptedModel([{"tool_calls": [{"name": "bash", "arguments": {
        "command": "true"}}]}, "done"])
    session = await create_session(model="t:m", provider=model, cwd=tmp_path, host=host)
    await session.run("go")
    first, second = model.requests
    assert not [m for m in first.messages if isinstance(m, ContextMessage)]
    roles = [m.role for m in second.messages]
    assert roles == ["user", "assistant", "tool", "context", "context"]
    assert [m.text for m in second.messages[3:]] == ["the build finished",
                                                     "asked at delivery"]
    assert second.messages[3].source == "reporter"
    path = session.store.path
    await session.dispose()
    assert path.read_text().count('"type":"context"') == 2
    with pytest.raises(UsageError, match="non-empty string or a callable"):
        session.view.add_context("  ", "reporter")
