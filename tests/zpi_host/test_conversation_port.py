"""ports.conversation: run, stop, work after the run, and a context rebuilt like a compaction."""

from __future__ import annotations

import pytest
from helpers.builtins import scripted_session

from zpi_host import hookimpl
from zpi_host.errors import UsageError
from zpi_host.transcript import read_transcript

pytestmark = pytest.mark.anyio


class AfterRun:
    def __init__(self) -> None:
        self.done: list[str] = []

    @hookimpl
    def zpi_run_end(self, session, result):
        conversation = session.ports.conversation
        assert conversation.is_running
        with pytest.raises(UsageError, match="while a run is in progress"):
            conversation.restart("s", "b", "test")

        async def first():
            assert not conversation.is_running
            self.done.append(f"after {result.result}")
            raise RuntimeError("broken job")

        async def second():
            self.done.append("second")

        conversation.after_run(first)
        conversation.after_run(second)


async def test_jobs_run_after_the_run_in_order_and_a_failure_is_a_warning(
        zpi_env, zpi_plugins, tmp_path):
    plugin = AfterRun()
    zpi_plugins.register(plugin, "after")
    session = await scripted_session(tmp_path, ["one"], settings={"plugins": {"disabled": [
        "zpi-builtins"]}})
    result = await session.run("go")
    assert result.result == "one" and not result.is_error
    assert plugin.done == ["after one", "second"]
    assert "work after the run failed: RuntimeError: broken job" in session.warnings
    with pytest.raises(UsageError, match="no run is in progress"):
        session.ports.conversation.after_run(plugin.done.clear)
    await session.ports.conversation.stop()  # nothing to stop
    await session.dispose()


async def test_restart_replaces_the_context_and_keeps_the_transcript(zpi_env, tmp_path):
    session = await scripted_session(tmp_path, ["one", "two"], settings={"plugins": {
        "disabled": ["zpi-builtins"]}})
    await session.run("read a.txt")
    uuid = session.ports.conversation.restart("all gone", "start from doc.md", "tester")
    summary, break_point = session.messages
    assert "all gone" in summary.text and break_point.text == "start from doc.md"
    assert session.message_ids[0] == uuid
    assert (await session.run("go on")).result == "two"
    await session.dispose()
    records = read_transcript(session.store.path).records
    assert [r.type for r in records if r.type in ("user", "compaction")] == [
        "user", "compaction", "user"]
