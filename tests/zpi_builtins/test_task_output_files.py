"""builtins:tasks output files are safe: a record is never a path to open, a replaced file is
refused without blocking, and what a background command writes is capped."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import anyio
import pytest
from helpers.builtins import builtins_settings, scripted_session

from zpi_builtins.task_registry import cut_notice
from zpi_host.session.assembly import create_session
from zpi_host.testing import FunctionModel

pytestmark = pytest.mark.anyio

WAIT = 20  # seconds: a bound against hangs, never a measurement


def background(command: str):
    return {"tool_calls": [{"name": "bash", "arguments": {
        "command": command, "run_in_background": True}}]}


def task_output(task_id: str, **extra):
    return {"tool_calls": [{"name": "task_output", "arguments": {"task_id": task_id,
                                                                 **extra}}]}


def tool_results(request) -> list:
    return [m for m in request.messages if m.role == "tool"]


def last_tool_text(request) -> str:
    return "".join(c.text for c in tool_results(request)[-1].content)


def started(request) -> tuple[str, str]:
    found = re.search(r"background task (b[0-9a-f]{8}).*goes to (\S+)\. Read",
                      last_tool_text(request))
    assert found, last_tool_text(request)
    return found[1], found[2]


async def function_session(tmp_path, function, *, settings=None, **options):
    model = FunctionModel(function)
    session = await create_session(model="function:x", provider=model, cwd=tmp_path,
                                   settings=settings or {}, **options)
    session.test_model = model
    return session


async def test_a_crafted_task_record_does_not_make_task_output_read_a_file(zpi_env, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the secret in the file\n")
    session = await scripted_session(tmp_path, ["hello"])
    await session.run("go")
    for task_id, recorded in (("bc0ffee00", str(secret)),
                              ("bc0ffee01", str(session.spill_dir / "../../../secret.txt"))):
        session.store.append_custom("zpi.task", {
            "event": "start", "task_id": task_id, "command": "cat", "description": "crafted",
            "output_file": recorded})
        session.store.append_custom("zpi.task", {
            "event": "end", "task_id": task_id, "status": "completed", "exit_code": 0})
    session.store.append_custom("zpi.task", {  # an id the host never makes: skipped
        "event": "start", "task_id": "../x", "output_file": str(secret)})
    await session.dispose()

    resumed = await scripted_session(tmp_path, [task_output("bc0ffee00"),
                                                task_output("bc0ffee01"), "seen"],
                                     resume=session.session_id, permission_mode="plan")
    await resumed.run("show the tasks' output")
    results = tool_results(resumed.test_model.requests[-1])[-2:]
    for result in results:
        text = "".join(c.text for c in result.content)
        assert "the secret in the file" not in text
        assert "(no output)" in text and str(resumed.spill_dir) in text
    assert [t.task_id for t in resumed.ports.tasks.tasks()] == ["bc0ffee00", "bc0ffee01"]
    await resumed.dispose()


async def test_an_output_file_swapped_for_a_fifo_is_an_error_not_a_hang(zpi_env, tmp_path):
    fifo: list[str] = []

    def model(request):
        n = len(session.test_model.requests)
        if n == 1:
            return background("sleep 30")
        if n == 2:
            task_id, path = started(request)
            os.unlink(path)
            os.mkfifo(path)  # what a model could do with bash
            fifo.append(path)
            return task_output(task_id, block=False)
        return "seen"

    # the old code blocked the event loop in open(); a writer after WAIT unblocks it, so a
    # regression fails instead of hanging the suite
    unblock = threading.Timer(WAIT, lambda: os.close(os.open(fifo[0], os.O_WRONLY)))
    session = await function_session(tmp_path, model)
    unblock.start()
    try:
        with anyio.fail_after(WAIT * 2):
            await session.run("start, then read")
    finally:
        unblock.cancel()
    result = tool_results(session.test_model.requests[-1])[-1]
    text = "".join(c.text for c in result.content)
    assert result.is_error, text
    assert "cannot be read" in text and "FIFO" in text and "not a regular file" in text
    await session.dispose()


async def test_a_background_yes_stops_growing_its_file_at_the_cap(zpi_env, tmp_path):
    cap = 4096

    def model(request):
        n = len(session.test_model.requests)
        if n == 1:
            return background("yes")
        if n == 2:
            return task_output(started(request)[0], timeout=WAIT * 1000)
        return "seen"

    session = await function_session(
        tmp_path, model, settings=builtins_settings(tasks={"max_output_bytes": cap}))
    await session.run("flood")
    text = last_tool_text(session.test_model.requests[-1])
    (info,) = session.ports.tasks.tasks()
    assert info.status == "stopped" and f"reached the limit of {cap} bytes" in info.summary
    data = Path(info.output_file).read_bytes()
    assert data == b"y\n" * (cap // 2) + cut_notice(cap)
    assert f"output cut at {cap} bytes" in text and "stopped" in text
    assert info.output_bytes == cap
    await session.dispose()
