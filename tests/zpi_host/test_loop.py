"""The agent loop: batching, ordering, early start, abort, queued input, limits, events."""

from __future__ import annotations

import os
import time

import anyio
import pytest

from zpi_host import hookimpl
from zpi_host.contract.decisions import StopDecision
from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.providers.messages import (
    AssistantMessage,
    ContextMessage,
    ToolResultMessage,
    UserMessage,
)
from zpi_host.session.assembly import create_session
from zpi_host.testing import FunctionModel, ScriptedModel
from zpi_host.tools.base import Tool, ToolMetadata, ToolResult

pytestmark = pytest.mark.anyio

SAFE = ToolMetadata(read_only=True, concurrency_safe=True, side_effects=False)
UNSAFE = ToolMetadata()


class Recorder:
    """Tools that log when they start and end, and wait on an event the test controls."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.release = anyio.Event()
        self.hang = False

    def tool(self, name: str, metadata: ToolMetadata) -> Tool:
        async def execute(args, ctx):
            self.log.append(f"start {args['tag']}")
            if self.hang:
                await anyio.sleep_forever()
            await anyio.sleep(0.01)
            self.log.append(f"end {args['tag']}")
            return ToolResult.text(f"done {args['tag']}")

        schema = {"type": "object", "properties": {"tag": {"type": "string"}},
                  "required": ["tag"], "additionalProperties": False}
        return Tool(name, f"{name} tool", schema, execute, metadata)

    @hookimpl
    def zpi_register_tools(self):
        return [self.tool("look", SAFE), self.tool("poke", UNSAFE)]


async def session_for(zpi_plugins, tmp_path, model, *plugins, **kwargs):
    for i, plugin in enumerate(plugins):
        zpi_plugins.register(plugin, f"test-plugin-{i}")
    host = PluginHost(PluginConfig(autoload=False)).load()
    return await create_session(model="test:model", provider=model, cwd=tmp_path, host=host,
                                **kwargs)


def calls(*pairs):
    return {"tool_calls": [{"name": n, "arguments": {"tag": t}} for n, t in pairs]}


async def test_parallel_then_sequential_results_in_model_order(zpi_env, zpi_plugins, tmp_path):
    rec = Recorder()
    model = ScriptedModel([
        calls(("look", "a"), ("look", "b"), ("poke", "c"), ("poke", "d"), ("look", "e")),
        {"text": "all done"},
    ])
    session = await session_for(zpi_plugins, tmp_path, model, rec)
    result = await session.run("go")
    assert (result.result, result.is_error, result.num_turns) == ("all done", False, 2)
    log = rec.log
    # a and b overlap (both start before either ends); c, d, e run alone and in order
    assert set(log[:2]) == {"start a", "start b"}
    assert log[4:] == ["start c", "end c", "start d", "end d", "start e", "end e"]
    results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    assert [r.content[0].text for r in results] == [f"done {t}" for t in "abcde"]
    assert [r.call_id for r in results] == [
        c.id for c in session.messages[1].tool_calls]


async def test_read_only_calls_start_while_the_model_streams(zpi_env, zpi_plugins, tmp_path):
    rec = Recorder()
    seen: list[str] = []

    class SlowStream(ScriptedModel):
        async def stream(self, request):
            async for event in super().stream(request):
                if type(event).__name__ == "Done" and len(self.requests) == 1:
                    await anyio.sleep(0.05)  # the model is still "talking"
                    seen.extend(rec.log)
                yield event

    model = SlowStream([calls(("look", "a")), {"text": "ok"}])
    session = await session_for(zpi_plugins, tmp_path, model, rec)
    await session.run("go")
    assert seen == ["start a", "end a"]


async def test_tool_hooks_switch_off_early_start(zpi_env, zpi_plugins, tmp_path):
    rec = Recorder()
    seen: list[list[str]] = []

    class Watcher:
        @hookimpl
        def zpi_before_tool(self, call):
            seen.append(list(rec.log))

    class SlowStream(ScriptedModel):
        async def stream(self, request):
            async for event in super().stream(request):
                if type(event).__name__ == "Done" and len(self.requests) == 1:
                    await anyio.sleep(0.02)
                    seen.append(["stream done", *rec.log])
                yield event

    model = SlowStream([calls(("look", "a")), {"text": "ok"}])
    session = await session_for(zpi_plugins, tmp_path, model, rec, Watcher())
    await session.run("go")
    assert seen == [["stream done"], []]


async def test_unknown_tool_and_invalid_arguments_become_error_results(
        zpi_env, zpi_plugins, tmp_path):
    rec = Recorder()
    model = ScriptedModel([
        {"tool_calls": [{"name": "nope", "arguments": {}},
                        {"name": "look", "arguments": {"tag": 3}},
                        {"name": "look", "arguments": {}}]},
        {"text": "recovered"},
    ])
    session = await session_for(zpi_plugins, tmp_path, model, rec)
    result = await session.run("go")
    assert result.result == "recovered"
    errors = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    assert all(e.is_error for e in errors)
    assert "unknown tool 'nope'; available tools: bash, edit, look, poke, read, write" in \
        errors[0].content[0].text
    assert "invalid argument 'tag' for tool 'look': expected string, got int" in \
        errors[1].content[0].text
    assert "argument 'tag'" in errors[2].content[0].text and "required" in \
        errors[2].content[0].text


async def test_max_turns_stops_the_run(zpi_env, zpi_plugins, tmp_path):
    rec = Recorder()
    model = FunctionModel(lambda request: calls(("look", "again")))
    session = await session_for(zpi_plugins, tmp_path, model, rec, max_turns=3)
    result = await session.run("loop forever")
    assert result.is_error and result.stop_reason == "max_turns" and result.num_turns == 3
    assert "maximum of 3 turns" in result.result


async def test_script_running_out_is_a_clear_error(zpi_env, zpi_plugins, tmp_path):
    session = await session_for(zpi_plugins, tmp_path, ScriptedModel([calls()]))
    session_result = await session.run("hi")
    assert session_result.is_error is False
    again = await session.run("more")
    assert again.is_error and "has 1 turn(s) and the session asked for turn 2" in again.result


async def test_facts_are_recorded_before_their_events(zpi_env, zpi_plugins, tmp_path):
    """``tool_end`` and ``message_end`` come after the transcript holds their fact, and tool
    results are still recorded in the model's order (parallel calls included)."""
    rec = Recorder()
    model = ScriptedModel([calls(("look", "a"), ("look", "b"), ("poke", "c"), ("poke", "d")),
                           {"text": "done"}])
    session = await session_for(zpi_plugins, tmp_path, model, rec)
    checked = []

    def on_event(event):
        records = session.store.records
        if event.type == "tool_end":
            recorded = [r.call_id for r in records if r.TYPE == "tool_result"]
            assert event.result.call_id in recorded
            checked.append(event.result.call_id)
        elif event.type == "message_end":
            assert records[-1].TYPE == "assistant" and records[-1].message == event.message
            checked.append("message")

    session.subscribe(on_event)
    result = await session.run("go")
    assert not result.is_error
    ids = [c.id for c in session.messages[1].tool_calls]
    assert checked == ["message", *ids, "message"]
    order = [r.call_id for r in session.store.records if r.TYPE == "tool_result"]
    assert order == ids


async def test_fsync_per_record_syncs_before_the_event(zpi_env, zpi_plugins, tmp_path,
                                                     monkeypatch):
    """``sessions.fsync: record``: the record is on disk (fsynced), not only written, when its
    ``tool_end`` or ``message_end`` is emitted."""
    import zpi_host.transcript.store as store_module

    synced = [-1]  # the file's size at the last fsync
    real_fsync = os.fsync

    def measuring_fsync(fd):
        real_fsync(fd)
        synced[0] = os.fstat(fd).st_size

    monkeypatch.setattr(store_module.os, "fsync", measuring_fsync)
    rec = Recorder()
    model = ScriptedModel([calls(("poke", "a"), ("poke", "b")), {"text": "done"}])
    session = await session_for(zpi_plugins, tmp_path, model, rec,
                                settings={"sessions": {"fsync": "record"}})
    path = session.store.path
    assert path is not None
    checked = []

    def on_event(event):
        if event.type in ("tool_end", "message_end"):
            assert synced[0] == path.stat().st_size, event.type
            fact = event.result if event.type == "tool_end" else event.message
            assert session.store.records[-1].message == fact
            checked.append(event.type)

    session.subscribe(on_event)
    assert not (await session.run("go")).is_error
    assert checked == ["message_end", "tool_end", "tool_end", "message_end"]
    await session.dispose()


async def test_abort_during_model_stream(zpi_env, zpi_plugins, tmp_path):
    started = anyio.Event()

    async def never(request):
        started.set()
        await anyio.sleep_forever()

    session = await session_for(zpi_plugins, tmp_path, FunctionModel(never))
    async with anyio.create_task_group() as tg:
        results = []

        async def run():
            results.append(await session.run("hello"))

        tg.start_soon(run)
        await started.wait()
        session.abort()
    assert results[0].stop_reason == "aborted" and results[0].is_error
    assert [type(m) for m in session.messages] == [UserMessage]
    assert not session.is_running


async def test_abort_during_parallel_batch_closes_every_call(zpi_env, zpi_plugins, tmp_path):
    rec = Recorder()
    rec.hang = True
    model = ScriptedModel([calls(("look", "a"), ("look", "b")), {"text": "after abort"}])
    session = await session_for(zpi_plugins, tmp_path, model, rec)
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run, "go")
        while len(rec.log) < 2:
            await anyio.sleep(0.005)
        session.abort()
    results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    assert [r.details.get("interrupted") for r in results] == [True, True]
    rec.hang = False
    resumed = await session.run("continue")  # the history is consistent: the run goes on
    assert resumed.result == "after abort"


async def test_abort_during_bash_kills_the_process_group(zpi_env, zpi_plugins, tmp_path):
    pid_file = tmp_path / "pid"
    command = f"echo $$ > {pid_file}; sleep 100 & sleep 100; wait"
    model = ScriptedModel([{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}])
    session = await session_for(zpi_plugins, tmp_path, model)
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run, "go")
        while not pid_file.exists() or not pid_file.read_text().strip():
            await anyio.sleep(0.01)
        await anyio.sleep(0.1)
        session.abort()
    pgid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            break
        await anyio.sleep(0.05)
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    last = session.messages[-1]
    assert isinstance(last, ToolResultMessage) and last.is_error


async def test_queued_input_is_delivered_at_the_next_safe_point(zpi_env, zpi_plugins, tmp_path):
    rec = Recorder()
    seen: list[list[str]] = []

    def turn(request):
        users = [m.text_content for m in request.messages if isinstance(m, UserMessage)]
        seen.append(users)
        if len(seen) == 1:
            session.queue("also check the tests")
            return calls(("look", "a"))
        return {"text": f"handled {len(users)} inputs"}

    session = await session_for(zpi_plugins, tmp_path, FunctionModel(turn), rec)
    events = []
    session.subscribe(lambda e: events.append(e.type))
    result = await session.run("start")
    assert seen == [["start"], ["start", "also check the tests"]]
    assert result.result == "handled 2 inputs"
    assert "input_delivered" in events


async def test_stop_hook_continuation_is_capped(zpi_env, zpi_plugins, tmp_path):
    class Nag:
        @hookimpl
        def zpi_stop(self, continuation):
            return StopDecision(f"keep going #{continuation + 1}")

    model = FunctionModel(lambda request: {"text": f"turn {len(request.messages)}"})
    session = await session_for(zpi_plugins, tmp_path, model, Nag(),
                                settings={"hooks": {"max_stop_continuations": 2}})
    result = await session.run("start")
    # the feedback is host-added context (a system-reminder), not words of the user
    users = [m.text_content if isinstance(m, UserMessage) else m.text
             for m in session.messages if isinstance(m, UserMessage | ContextMessage)]
    assert users == ["start", "keep going #1", "keep going #2"]
    assert isinstance(session.messages[-2], ContextMessage)
    assert result.num_turns == 3 and not result.is_error


async def test_events_and_usage(zpi_env, zpi_plugins, tmp_path):
    rec = Recorder()
    model = ScriptedModel([
        {"thinking": "hmm", "text": "looking", **calls(("poke", "x")),
         "usage": {"input_tokens": 10, "output_tokens": 5}},
        {"text": "done", "usage": {"input_tokens": 20, "output_tokens": 7}},
    ])
    session = await session_for(zpi_plugins, tmp_path, model, rec)
    seen = []

    async def subscriber(event):
        seen.append(event.type)

    session.subscribe(subscriber)
    result = await session.run("go")
    assert seen == ["run_start", "turn_start", "reasoning_delta", "text_delta", "message_end",
                    "tool_start", "tool_end", "turn_end", "turn_start", "text_delta",
                    "message_end", "turn_end", "run_end"]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 12)
    assert result.model_usage["scripted/memory"].input_tokens == 30
    first = session.messages[1]
    assert isinstance(first, AssistantMessage) and first.content[0].thinking == "hmm"


async def test_failing_async_subscriber_stops_the_run(zpi_env, zpi_plugins, tmp_path):
    session = await session_for(zpi_plugins, tmp_path, ScriptedModel(["hi"]))

    async def broken(event):
        raise RuntimeError("display died")

    session.subscribe(broken)
    with pytest.raises(RuntimeError, match="display died"):
        await session.run("go")
    assert not session.is_running
