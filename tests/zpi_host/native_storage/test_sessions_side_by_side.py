"""Sessions on one event loop do not block each other: while one session's commit, tool or hook
is held (on an Event the test controls), another session completes whole conversations.

Measured by order, never by the clock: the slow session is released only after the fast one
has finished; a gate that had to open by itself (its bound ran out: the loop was held) fails
the test.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.to_thread
import pytest

from zpi_host import create_session, hookimpl
from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.stores import transcript_helpers as helpers
from zpi_host.testing import FunctionModel
from zpi_host.tools.base import Tool, ToolMetadata, ToolResult

pytestmark = pytest.mark.anyio

#: how long a held gate waits before it opens by itself (only when the loop is held: a failure)
BOUND = 10.0
FAST_TURNS = 3
SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}


class Gate:
    """Held until the test opens it; ``entered`` says something waits at it."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()
        self.ran_out = False

    def hold(self) -> None:  # in a worker thread, or (the failure) on the loop itself
        self.entered.set()
        if not self.opened.wait(BOUND):
            self.ran_out = True

    async def entered_async(self) -> None:
        assert await anyio.to_thread.run_sync(self.entered.wait, BOUND)


class GatedStore:
    """A real store whose append of one session's assistant record waits at a gate."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.gate = Gate()
        self.held_session: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def append(self, session_id: str, records: Any, **kw: Any) -> Any:
        if session_id == self.held_session and any(r.TYPE == "assistant" for r, _ in records):
            self.held_session = None
            self.gate.hold()
        return self.inner.append(session_id, records, **kw)


def answer(request: Any) -> str:
    return f"seen {len(request.messages)}"


async def _session(tmp_path, store: Any, **kw: Any) -> Any:
    return await create_session(model="fn:m", provider=FunctionModel(answer), cwd=tmp_path,
                                settings={}, agent_dir=tmp_path / "agent",
                                storage={"transcript": store, "current_state": None}, **kw)


async def _fast_while_slow(slow_run: Any, gate: Gate, fast: Any) -> tuple[Any, list[str]]:
    """Start ``slow_run``; once it waits at ``gate``, run ``fast`` for FAST_TURNS turns, then
    open the gate. Returns the slow run's result and the order things happened in."""
    order: list[str] = []
    slow_result: list[Any] = []

    async def slow() -> None:
        slow_result.append(await slow_run())
        order.append("slow done")

    async with anyio.create_task_group() as tg:
        tg.start_soon(slow)
        await gate.entered_async()
        for n in range(FAST_TURNS):
            result = await fast.run(f"fast {n}")
            assert result.result == f"seen {2 * n + 1}"
        order.append("fast done")
        assert not gate.ran_out, "the held session held the whole loop"
        gate.opened.set()
    return slow_result[0], order


async def test_a_slow_commit_does_not_delay_another_session(make_store, tmp_path):
    gated = GatedStore(make_store())
    slow = await _session(tmp_path, gated)
    fast = await _session(tmp_path, make_store())
    try:
        gated.held_session = slow.session_id
        result, order = await _fast_while_slow(lambda: slow.run("slow"), gated.gate, fast)
        assert order == ["fast done", "slow done"]
        assert not gated.gate.ran_out
        assert result.result == "seen 1"
        # the held record was committed before the run went on: nothing was lost or reordered
        messages = helpers.get_session_messages(gated.inner, slow.session_id)
        assert [m.role for m in messages] == ["user", "assistant"]
    finally:
        await slow.dispose()
        await fast.dispose()


async def test_commits_keep_their_order_and_land_before_the_run_goes_on(
        make_store, tmp_path, zpi_env, zpi_plugins):
    """Parallel read-only calls journal from several tasks at once: every record is in the
    store, in one chain, and the model sees each result in its order."""
    store = make_store()

    def turn(request: Any) -> Any:
        if len(request.messages) == 1:
            return {"tool_calls": [{"name": "read_only", "arguments": {}} for _ in range(4)]}
        return f"seen {len(request.messages)}"

    zpi_plugins.register(ToolsAndHooks(), "side-by-side")
    host = _host()
    session = await create_session(model="fn:m", provider=FunctionModel(turn), cwd=tmp_path,
                                   settings={}, agent_dir=tmp_path / "agent", host=host,
                                   storage={"transcript": store, "current_state": None})
    try:
        result = await session.run("go")
        assert result.result == "seen 6"
        state = store.current_state(session.session_id)
        assert state.head_uuid == session.store.leaf_uuid  # acknowledged = committed
        rows = [r for r in session.store.all_records()]
        assert [r.TYPE for r in rows].count("tool_use") == 4
        assert [r.TYPE for r in rows].count("tool_result") == 4
    finally:
        await session.dispose()


class ToolsAndHooks:
    """``held``: an async tool, and ``read_only``: a sync read-only one (a worker thread),
    each waiting at a gate when the session is the held one; a ``zpi_turn_start`` hook that
    waits at a gate (async) for the held session."""

    def __init__(self) -> None:
        self.tool_gate = Gate()
        self.hook_gate = Gate()
        self.held: str | None = None
        self.hold_hook_of: str | None = None

    async def held_tool(self, args: Any, ctx: Any) -> ToolResult:
        if _held(ctx) == self.held:
            self.tool_gate.entered.set()
            with anyio.move_on_after(BOUND):
                await anyio.to_thread.run_sync(self.tool_gate.opened.wait, BOUND)
        return ToolResult.text("held tool done")

    def read_only(self, args: Any, ctx: Any) -> ToolResult:
        if _held(ctx) == self.held:
            self.tool_gate.hold()
        return ToolResult.text("read")

    @hookimpl
    def zpi_register_tools(self) -> list[Tool]:
        return [Tool("held", "waits when told to", SCHEMA, self.held_tool, ToolMetadata()),
                Tool("read_only", "reads", SCHEMA, self.read_only,
                     ToolMetadata(read_only=True, concurrency_safe=True, side_effects=False))]

    @hookimpl
    async def zpi_turn_start(self, session: Any, turn: int) -> None:
        if session.session_id == self.hold_hook_of:
            self.hold_hook_of = None
            self.hook_gate.entered.set()
            await anyio.to_thread.run_sync(self.hook_gate.opened.wait, BOUND)


def _host() -> Any:
    return PluginHost(PluginConfig(autoload=False)).load()


def _held(ctx: Any) -> str | None:
    return getattr(ctx.session, "session_id", None)


@pytest.mark.parametrize("tool", ["held", "read_only"])
async def test_a_slow_tool_does_not_delay_another_session(make_store, tmp_path, tool, zpi_env,
                                                          zpi_plugins):
    plugin = ToolsAndHooks()
    zpi_plugins.register(plugin, "side-by-side")
    calls = iter([{"tool_calls": [{"name": tool, "arguments": {}}]}, "slow done"])

    async def slow_turn(request: Any) -> Any:
        return next(calls)

    store = make_store()
    slow = await create_session(model="fn:m", provider=FunctionModel(slow_turn), cwd=tmp_path,
                                settings={}, agent_dir=tmp_path / "agent",
                                host=_host(),
                                storage={"transcript": store, "current_state": None})
    fast = await _session(tmp_path, make_store(), host=_host())
    try:
        plugin.held = slow.session_id
        result, order = await _fast_while_slow(lambda: slow.run("go"), plugin.tool_gate, fast)
        assert order == ["fast done", "slow done"]
        assert result.result == "slow done"
    finally:
        await slow.dispose()
        await fast.dispose()


async def test_a_slow_hook_does_not_delay_another_session(make_store, tmp_path, zpi_env,
                                                          zpi_plugins):
    plugin = ToolsAndHooks()
    zpi_plugins.register(plugin, "side-by-side")
    slow = await _session(tmp_path, make_store(), host=_host())
    fast = await _session(tmp_path, make_store(), host=_host())
    try:
        plugin.hold_hook_of = slow.session_id
        result, order = await _fast_while_slow(lambda: slow.run("go"), plugin.hook_gate, fast)
        assert order == ["fast done", "slow done"]
        assert result.result == "seen 1"
    finally:
        await slow.dispose()
        await fast.dispose()


async def test_a_jsonl_session_with_fsync_per_record_syncs_off_the_loop(tmp_path, monkeypatch):
    """With ``sessions.fsync: record`` each append and its fsync run in a worker thread (the
    default ``turn`` policy syncs at the turn's end, in place); the record is on disk before
    the run goes on."""
    import os

    real_fsync = os.fsync
    threads: list[int] = []

    def fsync(fd: int) -> None:
        threads.append(threading.get_ident())
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    session = await create_session(model="fn:m", provider=FunctionModel(answer), cwd=tmp_path,
                                   settings={"sessions": {"fsync": "record"}},
                                   agent_dir=tmp_path / "agent")
    try:
        threads.clear()
        for n in range(3):
            assert (await session.run(f"turn {n}")).result == f"seen {2 * n + 1}"
        assert threads, "nothing was synced"
        assert threading.get_ident() not in threads
        lines = session.store.path.read_text().splitlines()
        assert sum('"type":"assistant"' in line.replace(" ", "") for line in lines) == 3
    finally:
        await session.dispose()


async def test_sessions_on_one_sqlite_store_share_its_one_commit_thread(tmp_path):
    """SQLite commits one transaction at a time: the sessions on one store hand it one
    commit at a time (the store's limiter), not one thread each queueing at its lock."""
    import time

    from zpi_host.stores.sqlite_transcripts import SQLiteTranscriptStore

    class Counting(SQLiteTranscriptStore):
        inside = most = 0

        def append(self, *args: Any, **kw: Any) -> Any:
            Counting.inside += 1
            Counting.most = max(Counting.most, Counting.inside)
            try:
                time.sleep(0.002)  # a commit that takes a while: others would pile up
                return super().append(*args, **kw)
            finally:
                Counting.inside -= 1

    store = Counting(tmp_path / "s.db")
    sessions = [await _session(tmp_path, store) for _ in range(5)]
    try:
        async with anyio.create_task_group() as tg:
            for session in sessions:
                tg.start_soon(session.run, "go")
        assert all(s.messages[-1].text == "seen 1" for s in sessions)
        assert Counting.most == 1
    finally:
        for session in sessions:
            await session.dispose()
        store.close()
