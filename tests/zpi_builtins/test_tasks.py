"""builtins:tasks: background commands, task_output / task_stop, the task port, events,
the model's notification, transcript records, resume and clean-up."""

from __future__ import annotations

import json
import os
import re
import signal

import anyio
import pytest
from helpers.builtins import builtins_settings, scripted_session

from zpi_builtins.tasks import prepare_output
from zpi_host.providers.messages import ContextMessage
from zpi_host.session.assembly import create_session
from zpi_host.session.ports import TaskError, UnknownTaskError
from zpi_host.support.process_groups import process_alive
from zpi_host.testing import FunctionModel
from zpi_host.tools import ToolArgumentError

pytestmark = pytest.mark.anyio

WAIT = 20  # seconds: a bound against hangs, never a measurement


def background(command: str, **extra):
    return {"tool_calls": [{"name": "bash", "arguments": {
        "command": command, "run_in_background": True, **extra}}]}


def last_tool_text(request) -> str:
    results = [m for m in request.messages if m.role == "tool"]
    return "".join(c.text for c in results[-1].content)


def started_id(request) -> str:
    found = re.search(r"background task (b[0-9a-f]{8})", last_tool_text(request))
    assert found, last_tool_text(request)
    return found[1]


async def function_session(tmp_path, function, *, settings=None, **options):
    model = FunctionModel(function)
    session = await create_session(model="function:x", provider=model, cwd=tmp_path,
                                   settings=settings or {}, **options)
    session.test_model = model
    return session


def wait_for_file(path) -> str:
    return f"while [ ! -e {path} ]; do sleep 0.02; done"


async def test_a_background_command_is_read_with_task_output_and_recorded(zpi_env, tmp_path):
    events = []

    def model(request):
        n = len(session.test_model.requests)
        if n == 1:
            return background("echo first; echo second >&2", description="two lines")
        if n == 2:
            return {"tool_calls": [{"name": "task_output", "arguments": {
                "task_id": started_id(request), "timeout": WAIT * 1000}}]}
        return "done: " + last_tool_text(request).splitlines()[0]

    session = await function_session(tmp_path, model)
    session.subscribe(events.append, {"task_started", "task_progress", "task_notification"})
    result = await session.run("start it")
    assert not result.is_error, result.result
    assert "completed: exited with code 0" in result.result
    output = last_tool_text(session.test_model.requests[-1])
    assert "first" in output and "second" in output  # stdout and stderr, one file
    started, *_, ended = events
    assert started.type == "task_started" and started.info.status == "running"
    assert started.info.description == "two lines" and started.info.pid > 0
    assert ended.type == "task_notification" and ended.info.status == "completed"
    assert ended.info.exit_code == 0
    # the output file is a private spill file
    path = ended.info.output_file
    assert path.startswith(str(session.spill_dir)) and os.stat(path).st_mode & 0o077 == 0
    # the model read the end itself: no notification context on top
    assert not [m for m in session.messages if isinstance(m, ContextMessage)]
    records = session.ports.storage.custom("zpi.task")
    assert [r["event"] for r in records] == ["start", "spawned", "end"]
    assert records[1]["pgid"] == started.info.pgid and records[2]["exit_code"] == 0
    await session.dispose()


async def test_the_start_is_recorded_before_the_command_runs(zpi_env, tmp_path, monkeypatch):
    """A host killed while a command starts must leave a record naming it: when the process
    is spawned, the transcript already holds the task's start (its group follows)."""
    import anyio

    seen: list[list[str]] = []
    spawn = anyio.open_process

    async def watched_spawn(*args, **kwargs):
        seen.append([r.data["event"] for r in session.store.records
                     if getattr(r, "namespace", None) == "zpi.task"])
        return await spawn(*args, **kwargs)

    monkeypatch.setattr(anyio, "open_process", watched_spawn)

    def model(request):
        n = len(session.test_model.requests)
        if n == 1:
            return background("true")
        if n == 2:
            return {"tool_calls": [{"name": "task_output", "arguments": {
                "task_id": started_id(request), "timeout": WAIT * 1000}}]}
        return "done"

    session = await function_session(tmp_path, model)
    await session.run("start it")
    await session.dispose()
    assert seen == [["start"]]
    records = session.ports.storage.custom("zpi.task")
    assert [r["event"] for r in records] == ["start", "spawned", "end"]


async def test_a_finished_task_is_reported_to_the_model_at_its_next_turn(zpi_env, tmp_path):
    flag = tmp_path / "go"

    def model(request):
        n = len(session.test_model.requests)
        if n == 1:
            return background(f"{wait_for_file(flag)}; echo built; exit 3")
        if n == 2:
            return {"tool_calls": [{"name": "bash", "arguments": {
                "command": f"touch {flag}; sleep 0.3"}}]}
        return "ok"

    session = await function_session(tmp_path, model)
    ended = anyio.Event()
    session.subscribe(lambda e: ended.set(), {"task_notification"})
    await session.run("build in the background")
    with anyio.fail_after(WAIT):
        await ended.wait()
    await session.run("anything new?")
    (context,) = [m for m in session.messages if isinstance(m, ContextMessage)]
    assert context.source == "builtins:tasks"
    assert "has ended: failed (exited with code 3), exit code 3" in context.text
    assert "does not ask you to run the command again" in context.text
    assert re.search(r"Its output is in \S+/task-b[0-9a-f]{8}\.log ", context.text)
    # it reached the model at a turn boundary: after a tool result or a prompt, never
    # between a call and its result
    request = session.test_model.requests[-1]
    at = request.messages.index(context)
    assert request.messages[at - 1].role in ("tool", "user")
    await session.dispose()


async def test_task_stop_kills_the_process_group_and_a_second_stop_succeeds(
        zpi_env, tmp_path):
    pidfile = tmp_path / "child.pid"

    def model(request):
        n = len(session.test_model.requests)
        if n == 1:  # a child in the same group that would outlive its shell
            return background(f"sleep 600 & echo $! > {pidfile}; wait")
        if n == 2:
            task_ids.append(started_id(request))
            return {"tool_calls": [{"name": "task_output", "arguments": {
                "task_id": task_ids[0], "block": False}}]}
        if n in (3, 4):
            return {"tool_calls": [{"name": "task_stop", "arguments": {
                "task_id": task_ids[0]}}]}
        return "stopped"

    task_ids: list[str] = []
    session = await function_session(tmp_path, model)
    # the output check runs after the pid file exists
    original = session.test_model._function

    async def slow_start(request):
        if len(session.test_model.requests) == 2:
            with anyio.fail_after(WAIT):
                while not pidfile.exists() or not pidfile.read_text().strip():
                    await anyio.sleep(0.02)
        return original(request)

    session.test_model._function = slow_start
    await session.run("start and stop")
    texts = [last_tool_text(r) for r in session.test_model.requests[2:5]]
    assert "still running" in texts[0]
    assert texts[1].startswith(f"Stopped task {task_ids[0]}")
    assert texts[2].startswith(f"Task {task_ids[0]} had already ended (stopped")
    child = int(pidfile.read_text())
    assert not process_alive(child)
    # the SDK-side stop of a finished task succeeds too; unknown ids fail clearly
    info = await session.ports.tasks.stop(task_ids[0])
    assert info.status == "stopped" and info.exit_code == -signal.SIGTERM
    with pytest.raises(UnknownTaskError, match="no background task 'b00000000'"):
        await session.ports.tasks.stop("b00000000")
    await session.dispose()
    with pytest.raises(TaskError, match="the session was closed"):
        await session.ports.tasks.stop(task_ids[0])


async def test_another_sessions_task_is_refused_by_name(zpi_env, tmp_path):
    one = await scripted_session(tmp_path, [background("sleep 600"), "started"])
    two = await scripted_session(tmp_path, ["hi"])
    await one.run("go")
    (task,) = one.ports.tasks.tasks()
    with pytest.raises(TaskError, match=f"belongs to session {one.session_id}"):
        await two.ports.tasks.stop(task.task_id)
    assert [t.task_id for t in one.ports.tasks.running()] == [task.task_id]
    await two.dispose()
    await one.dispose()
    assert not process_alive(task.pid)


async def test_dispose_stops_every_running_task_and_records_its_end(zpi_env, tmp_path):
    pidfile = tmp_path / "child.pid"
    session = await scripted_session(tmp_path, [
        background(f"sleep 600 & echo $! > {pidfile}; wait"), "started"])
    events = []
    session.subscribe(events.append, {"task_notification"})
    await session.run("go")
    with anyio.fail_after(WAIT):
        while not pidfile.exists() or not pidfile.read_text().strip():
            await anyio.sleep(0.02)
    (task,) = session.ports.tasks.running()
    await session.dispose()
    assert not process_alive(task.pid) and not process_alive(int(pidfile.read_text()))
    assert [e.info.status for e in events] == ["stopped"]
    assert "the session ended" in events[0].info.summary
    records = [json.loads(line) for line in session.store.path.read_text().splitlines()]
    ends = [r["data"] for r in records if r.get("namespace") == "zpi.task"][2:]
    assert ends == [{"event": "end", "task_id": task.task_id, "command": task.command,
                     "description": task.description, "tool_use_id": task.tool_use_id,
                     "status": "stopped", "exit_code": -signal.SIGTERM,
                     "reason": "the session ended"}]


async def test_stop_all_ends_a_plain_run_before_its_result(zpi_env, tmp_path):
    session = await scripted_session(tmp_path, [background("sleep 600"), "started"])
    await session.run("go")
    (task,) = session.ports.tasks.running()
    stopped = await session.ports.tasks.stop_all("the run ended")
    assert [t.task_id for t in stopped] == [task.task_id]
    assert stopped[0].status == "stopped" and not process_alive(task.pid)
    assert session.ports.tasks.running() == []
    await session.dispose()


async def test_progress_is_reported_while_output_grows(zpi_env, tmp_path):
    flag = tmp_path / "go"
    settings = builtins_settings(tasks={"progress_seconds": 0.05})
    session = await scripted_session(
        tmp_path, [background(f"echo one; {wait_for_file(flag)}; echo two"), "ok"],
        settings=settings)
    seen = []
    progressed = anyio.Event()

    def on_event(event):
        seen.append(event)
        if event.type == "task_progress":
            progressed.set()

    session.subscribe(on_event, {"task_progress", "task_notification"})
    await session.run("go")
    with anyio.fail_after(WAIT):
        await progressed.wait()
    flag.touch()
    with anyio.fail_after(WAIT):
        while session.ports.tasks.running():
            await anyio.sleep(0.02)
    progress = [e for e in seen if e.type == "task_progress"]
    assert progress[0].info.output_bytes == len("one\n")
    assert seen[-1].type == "task_notification" and seen[-1].info.output_bytes == 8
    await session.dispose()


async def test_arguments_and_limits_are_checked(zpi_env, tmp_path):
    with pytest.raises(ToolArgumentError) as caught:
        prepare_output({"task_id": "b1", "timeout": 700_000})
    assert caught.value.field == "timeout"
    with pytest.raises(ToolArgumentError) as caught:
        prepare_output({"task_id": ""})
    assert caught.value.field == "task_id"
    settings = builtins_settings(tasks={"max_running": 1})
    session = await scripted_session(tmp_path, [
        background("sleep 600"), background("sleep 600"),
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo",
                                                       "run_in_background": "yes"}}]},
        {"tool_calls": [{"name": "task_output", "arguments": {"task_id": "bffffffff"}}]},
        "done"], settings=settings)
    with pytest.raises(ToolArgumentError, match="known: command, timeout, "
                       "run_in_background, description") as caught:
        session.tools["bash"].prepare_arguments({"command": "ls", "colour": "red"})
    assert caught.value.field == "colour"
    await session.run("go")
    results = [m for m in session.messages if m.role == "tool"]
    assert not results[0].is_error
    assert results[1].is_error and "the limit is 1" in results[1].content[0].text
    assert results[2].is_error and "run_in_background" in results[2].content[0].text
    assert results[3].is_error and "no background task 'bffffffff'" in \
        results[3].content[0].text
    await session.dispose()


async def test_switched_off_bash_has_no_background_and_the_tools_are_gone(zpi_env, tmp_path):
    session = await scripted_session(tmp_path, ["hi"],
                                     settings=builtins_settings(tasks={"enabled": False}))
    assert "task_output" not in session.tools and "task_stop" not in session.tools
    assert "run_in_background" not in session.tools["bash"].parameters["properties"]
    await session.dispose()


async def test_a_resumed_session_reports_tasks_a_dead_host_left_as_ended(zpi_env, tmp_path):
    """A host killed while a task ran leaves a start record and no end: on resume the task
    is reported as ended (its process is gone), recorded as ended, and stopping it
    succeeds."""
    import subprocess

    session = await scripted_session(tmp_path, ["hello"])
    await session.run("go")
    dead = subprocess.Popen(["true"], start_new_session=True)
    dead.wait()
    session.store.append_custom("zpi.task", {
        "event": "start", "task_id": "bdeadbeef", "command": "make watch",
        "description": "watch", "tool_use_id": "call_1", "pid": dead.pid, "pgid": dead.pid,
        "output_file": str(tmp_path / "out.log")})
    path = session.store.path
    await session.dispose()

    resumed = await scripted_session(tmp_path, ["seen"], resume=session.session_id)
    await resumed.run("what happened?")
    (context,) = [m for m in resumed.messages if isinstance(m, ContextMessage)
                  and m.source == "builtins:tasks"]
    assert "bdeadbeef (watch): ended while no host was running it" in context.text
    assert "information only" in context.text
    (info,) = resumed.ports.tasks.tasks()
    assert info.status == "stopped" and not info.running
    assert (await resumed.ports.tasks.stop("bdeadbeef")).status == "stopped"
    await resumed.dispose()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["data"]["event"] for r in lines if r.get("namespace") == "zpi.task"] == [
        "start", "end"]


async def test_the_claude_stop_hook_input_lists_the_running_tasks(zpi_env, zpi_plugins,
                                                                  tmp_path):
    """Claude Code 2.1's Stop input carries ``background_tasks``: filled from the registry
    through the task port."""
    from helpers.claude_hooks import make_hooks

    capture = tmp_path / "stop.json"
    hooks, problems = make_hooks({"Stop": [{"hooks": [
        {"type": "command", "command": f"cat > {capture}"}]}]}, tmp_path)
    assert problems == []
    zpi_plugins.register(hooks, "claude:inline")
    session = await scripted_session(tmp_path, [
        background("sleep 600", description="the dev server"), "started"])
    await session.run("go")
    (task,) = session.ports.tasks.running()
    stop_input = json.loads(capture.read_text())
    assert stop_input["background_tasks"] == [{
        "task_id": task.task_id, "task_type": "local_bash", "status": "running",
        "description": "the dev server", "command": "sleep 600",
        "output_file": task.output_file}]
    await session.dispose()


async def test_task_output_shows_the_end_of_a_long_output(zpi_env, tmp_path):
    def model(request):
        n = len(session.test_model.requests)
        if n == 1:
            return background("seq 1 40000; echo END")
        if n == 2:
            return {"tool_calls": [{"name": "task_output", "arguments": {
                "task_id": started_id(request), "timeout": WAIT * 1000}}]}
        return "read"

    session = await function_session(tmp_path, model)
    await session.run("count")
    text = last_tool_text(session.test_model.requests[-1])
    size = len("".join(f"{i}\n" for i in range(1, 40001))) + len("END\n")
    assert f"Output ({size} bytes" in text and text.endswith("39999\n40000\nEND")
    assert re.search(r"\[\.\.\. the first \d+ bytes are only in the file \.\.\.\]\n\d+\n",
                     text)
    assert len(text.encode()) < 33 * 1024
    await session.dispose()
