"""Background tasks through the Claude-style SDK, written as a claude-agent-sdk program
would be (only the import line differs), against the loopback model server (Anthropic
format): ``Bash`` with ``run_in_background``, ``TaskOutput``, ``stop_task``, the task
messages, and a plain ``query()`` that stops its tasks before the result."""

from __future__ import annotations

import anyio
import pytest
from helpers.builtins import loopback_sdk_options

from zpi_host.sdk import (
    AgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    TaskError,
    TaskNotificationMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
    ToolUseBlock,
    UnknownTaskError,
    UserMessage,
    query,
)
from zpi_host.support.process_groups import process_alive

pytestmark = pytest.mark.anyio

WAIT = 20  # seconds: a bound against hangs


def options(server, cwd, **fields) -> AgentOptions:
    fields.setdefault("allowed_tools", ["Bash", "TaskStop"])
    return loopback_sdk_options(server, cwd, **fields)


def background(command: str) -> dict:
    return {"tool_calls": [{"name": "Bash", "arguments": {
        "command": command, "description": "watch the files", "run_in_background": True}}]}


def until_exists(path) -> dict:
    """A foreground Bash call that returns once ``path`` has content."""
    return {"tool_calls": [{"name": "Bash", "arguments": {
        "command": f"while [ ! -s {path} ]; do sleep 0.02; done"}}]}


async def test_client_program_with_run_in_background_task_output_and_stop_task(
        zpi_env, zpi_model_server, tmp_path):
    pidfile = tmp_path / "watcher.pid"
    server = zpi_model_server
    server.add_turns(background(f"sleep 600 & echo $! > {pidfile}; wait"),
                     until_exists(pidfile), {"text": "The watcher runs."})
    async with ClaudeSDKClient(options(server, tmp_path)) as client:
        await client.query("start the watcher")
        first = [m async for m in client.receive_response()]
        started = next(m for m in first if isinstance(m, TaskStartedMessage))
        bash = next(b for m in first if hasattr(m, "content") and isinstance(m.content, list)
                    for b in m.content if isinstance(b, ToolUseBlock))
        assert started.subtype == "task_started" and started.task_type == "local_bash"
        assert started.description == "watch the files" and started.tool_use_id == bash.id
        assert started.data["task_id"] == started.task_id
        assert "TaskOutput" in first[0].data["tools"] and "task_output" not in \
            first[0].data["tools"]
        assert first[-1].result == "The watcher runs."  # the client keeps its tasks

        server.add_turns({"tool_calls": [{"name": "TaskOutput", "arguments": {
            "task_id": started.task_id, "block": False}}]}, {"text": "Still watching."})
        await client.query("how is it going?")
        second = [m async for m in client.receive_response()]
        (output,) = [b for m in second if isinstance(m, UserMessage)
                     for b in m.content if hasattr(b, "tool_use_id")]
        assert not output.is_error and "still running" in output.content

        child = int(pidfile.read_text())
        assert process_alive(child)
        await client.stop_task(started.task_id)
        assert not process_alive(child)
        with anyio.fail_after(WAIT):
            async for message in client.receive_messages():
                if isinstance(message, TaskUpdatedMessage):
                    updated = message
                if isinstance(message, TaskNotificationMessage):
                    break
        assert (message.task_id, message.status) == (started.task_id, "stopped")
        assert (updated.task_id, updated.status, updated.patch["status"]) == (
            started.task_id, "killed", "killed")  # the raw status, as claude-agent-sdk's
        assert isinstance(updated.patch["end_time"], int)
        assert message.output_file.endswith(".log") and "stop_task" in message.summary
        await client.stop_task(started.task_id)  # a finished task: stopping again succeeds
        with pytest.raises(UnknownTaskError, match="no background task 'b00000000'"):
            await client.stop_task("b00000000")
    with pytest.raises(TaskError, match="not connected"):
        await client.stop_task(started.task_id)


async def test_a_plain_query_stops_its_tasks_before_the_result(
        zpi_env, zpi_model_server, tmp_path):
    pidfile = tmp_path / "server.pid"
    zpi_model_server.add_turns(background(f"sleep 600 & echo $! > {pidfile}; wait"),
                               until_exists(pidfile), {"text": "Started the server."})
    messages = [m async for m in query(prompt="start the server",
                                       options=options(zpi_model_server, tmp_path))]
    kinds = [type(m).__name__ for m in messages]
    assert kinds.index("TaskStartedMessage") < kinds.index("TaskNotificationMessage") \
        < kinds.index("ResultMessage") == len(kinds) - 1
    notification = next(m for m in messages if isinstance(m, TaskNotificationMessage))
    assert notification.status == "stopped" and "the query ended" in notification.summary
    assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error
    assert not process_alive(int(pidfile.read_text()))


async def test_without_the_task_service_bash_says_background_is_unavailable(
        zpi_env, zpi_model_server, tmp_path):
    zpi_env.set("ZPI_DISABLE_PLUGIN_AUTOLOAD", "1")
    zpi_model_server.add_turns(background("sleep 1"), {"text": "ok"})
    messages = [m async for m in query(prompt="go",
                                       options=options(zpi_model_server, tmp_path))]
    assert "TaskOutput" not in messages[0].data["tools"]
    (result,) = [b for m in messages if isinstance(m, UserMessage) for b in m.content]
    assert result.is_error and "background commands need the task service" in result.content
    client = ClaudeSDKClient(options(zpi_model_server, tmp_path))
    async with client:
        with pytest.raises(UnknownTaskError):
            await client.stop_task("b12345678")
