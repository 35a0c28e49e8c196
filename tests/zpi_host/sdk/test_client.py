"""SDKClient programs written as for claude-agent-sdk's ClaudeSDKClient."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from zpi_host.errors import UsageError
from zpi_host.sdk import (
    AssistantMessage,
    ClaudeSDKClient,
    ResultMessage,
    SDKClient,
    ToolUseBlock,
    UserMessage,
)

pytestmark = pytest.mark.anyio


def test_the_alias_is_the_same_class():
    assert ClaudeSDKClient is SDKClient


async def test_several_queries_share_one_session(backend):
    usage = {"input_tokens": 100, "output_tokens": 10}
    backend.turns({"text": "Paris.", "usage": usage},
                  {"text": "About 2.1 million people.", "usage": usage})
    async with SDKClient(backend.options()) as client:
        await client.query("What is the capital of France?")
        first = [m async for m in client.receive_response()]
        await client.query("And its population?")
        second = [m async for m in client.receive_response()]
    assert isinstance(first[-1], ResultMessage) and first[-1].result == "Paris."
    assert second[-1].result == "About 2.1 million people."
    assert first[-1].session_id == second[-1].session_id
    assert second[-1].num_turns == 1  # per input; the totals are the session's
    if backend.kind == "scripted":
        history = backend.requests()[1].messages
        assert [m.role for m in history] == ["user", "assistant", "user"]
    else:
        assert second[-1].total_cost_usd > first[-1].total_cost_usd  # session totals


async def test_interrupt_stops_the_running_input_and_the_session_goes_on(backend):
    backend.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "sleep 30"}}]},
                  "after the interrupt")
    async with SDKClient(backend.options(permission_mode="bypassPermissions")) as client:
        await client.query("wait a long time")
        async for message in client.receive_messages():
            if isinstance(message, AssistantMessage) and any(
                    isinstance(b, ToolUseBlock) for b in message.content):
                await client.interrupt()
            if isinstance(message, ResultMessage):
                interrupted = message
                break
        await client.query("go on")
        after = [m async for m in client.receive_response()]
    assert (interrupted.subtype, interrupted.is_error) == ("error_during_execution", True)
    assert interrupted.terminal_reason == "aborted_streaming"
    assert after[-1].subtype == "success" and after[-1].result == "after the interrupt"
    results = [b for m in after if isinstance(m, UserMessage) for b in m.content]
    assert results == []  # the interrupted call was closed in the history, not re-run


async def test_set_permission_mode_applies_to_the_next_calls(scripted):
    write = {"tool_calls": [{"name": "Write", "arguments": {"file_path": "w.txt",
                                                            "content": "x"}}]}
    scripted.turns(write, "denied", write, "written")
    async with SDKClient(scripted.options()) as client:
        await client.query("write")
        first = [m async for m in client.receive_response()]
        await client.set_permission_mode("acceptEdits")
        await client.query("write again")
        second = [m async for m in client.receive_response()]
        with pytest.raises(UsageError, match="unknown permission mode"):
            await client.set_permission_mode("yolo")
    assert first[-1].permission_denials and not second[-1].permission_denials
    assert (scripted.cwd / "w.txt").read_text() == "x"
    init = next(m for m in second if getattr(m, "subtype", None) == "init")
    assert init.data["permissionMode"] == "acceptEdits"


async def test_set_model_switches_the_model_for_the_next_request(backend):
    if backend.kind == "scripted":
        pytest.skip("needs a provider factory: the loopback server")
    backend.turns("one", "two")
    async with SDKClient(backend.options()) as client:
        await client.query("a")
        [m async for m in client.receive_response()]
        await client.set_model(f"{backend.kind}:other-model")
        await client.query("b")
        second = [m async for m in client.receive_response()]
    assert [r["model"] for r in backend.requests()] == ["test-model", "other-model"]
    answer = next(m for m in second if isinstance(m, AssistantMessage))
    assert answer.model == f"{backend.kind}:other-model"
    assert f"{backend.kind}/other-model" in second[-1].model_usage


async def test_set_model_none_goes_back_to_the_model_from_settings(backend, zpi_env):
    """The model came from the environment (``ZPI_MODEL``), not the options: None restores
    it after a switch."""
    if backend.kind == "scripted":
        pytest.skip("needs a provider factory: the loopback server")
    backend.turns("one", "two", "three")
    options = backend.options(model=None)
    zpi_env.set("ZPI_MODEL", "priced")
    async with SDKClient(options) as client:
        await client.query("a")
        [m async for m in client.receive_response()]
        await client.set_model(f"{backend.kind}:other-model")
        await client.query("b")
        [m async for m in client.receive_response()]
        await client.set_model(None)
        await client.query("c")
        [m async for m in client.receive_response()]
        await client.set_model(None)  # already there: nothing to do
    assert [r["model"] for r in backend.requests()] == ["test-model", "other-model",
                                                        "test-model"]


async def test_get_context_usage_never_calls_the_model(backend):
    backend.turns({"text": "ok", "usage": {"input_tokens": 1234, "output_tokens": 5}})
    async with SDKClient(backend.options()) as client:
        before = await client.get_context_usage()
        await client.query("hi")
        [m async for m in client.receive_response()]
        asked = len(backend.requests())
        usage = await client.get_context_usage()
        assert len(backend.requests()) == asked == 1
    names = [c["name"] for c in usage["categories"]]
    assert names == ["system_prompt", "tools", "messages", "tool_results"]
    assert all(c["estimated"] for c in usage["categories"])
    assert before["reportedInputTokens"] is None and before["estimated"] is True
    assert usage["reportedInputTokens"] == 1234
    assert usage["totalTokens"] >= 1234
    if backend.kind != "scripted":
        assert usage["maxTokens"] == 200_000
        assert usage["percentage"] == pytest.approx(100 * usage["totalTokens"] / 200_000)


async def test_connect_with_a_prompt_and_an_unconnected_client(scripted):
    commands = scripted.cwd / ".zpi" / "commands"
    commands.mkdir(parents=True)
    (commands / "greet.md").write_text(
        "---\ndescription: says hello\nargument-hint: NAME\n---\nGreet $ARGUMENTS\n")
    client = SDKClient(scripted.turns("hello").options())
    with pytest.raises(UsageError, match="not connected"):
        await client.interrupt()
    await client.connect("hi")
    try:
        messages = [m async for m in client.receive_response()]
        info = await client.get_server_info()
    finally:
        await client.disconnect()
    await client.disconnect()  # twice is fine
    assert messages[-1].result == "hello"
    assert info["session_id"] == messages[-1].session_id
    assert {"name": "greet", "description": "says hello", "argumentHint": "NAME"} in \
        info["commands"]
    # each plugin says where it lives: the kernel's own are modules of zpi_host
    tools = next(p for p in info["plugins"] if p["name"] == "zpi.tools")
    assert "zpi_host" in tools["path"] and Path(tools["path"]).exists()


def test_importing_the_sdk_is_cheap_and_the_cli_listing_does_not_load_it():
    sdk = "[m for m in sys.modules if m.startswith('zpi_host.sdk')]"
    listing = ("import sys; from zpi_host.cli import main; main(['--list-plugins', '--json']);"
               f" assert not {sdk}, {sdk}")
    importing = ("import sys; from zpi_host.sdk import query, AgentOptions, SDKClient; "
                 "heavy = [m for m in ('httpx', 'anyio', 'cattrs') if m in sys.modules]; "
                 "assert not heavy, heavy")
    for code in (listing, importing):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr


async def test_closing_query_early_releases_the_session(scripted):
    from contextlib import aclosing

    from zpi_host.sdk import delete_session, get_session_info, query

    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "sleep 30"}}]},
                   "never")
    options = scripted.options(permission_mode="bypassPermissions")
    async with aclosing(query("wait", options)) as stream:
        async for message in stream:
            if isinstance(message, AssistantMessage):
                session_id = message.session_id
                break
    assert get_session_info(session_id) is not None
    delete_session(session_id)  # not open any more: the session was released
    assert get_session_info(session_id) is None


async def test_disconnect_while_an_input_runs(scripted):
    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "sleep 30"}}]})
    client = SDKClient(scripted.options(permission_mode="bypassPermissions"))
    await client.connect()
    await client.query("wait")
    async for message in client.receive_messages():
        if isinstance(message, AssistantMessage):
            break
    await client.disconnect()
    from zpi_host.sdk import get_session_messages

    history = get_session_messages(message.session_id)
    assert [m.type for m in history] == ["user", "assistant", "user"], history


async def test_bad_options_fail_before_anything_starts(scripted):
    from zpi_host.sdk import query

    with pytest.raises(UsageError, match="PROVIDER:MODEL"):
        [m async for m in query("hi", scripted.options(model="nonsense", provider=None))]


async def test_stop_task_fails_clearly(scripted):
    """Without the task service (plugins are not loaded here) every id is unknown; the
    errors are UsageErrors (TaskError). tests/zpi_builtins/test_sdk_tasks.py stops real
    tasks."""
    client = SDKClient(scripted.options())
    with pytest.raises(UsageError, match="not connected"):
        await client.stop_task("t1")
    async with client:
        with pytest.raises(UsageError, match="no background task 't1' in this session"):
            await client.stop_task("t1")
