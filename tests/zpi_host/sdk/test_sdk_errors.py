"""claude-agent-sdk's errors as this host raises them: ``ClaudeSDKError`` catches the host's
own typed errors, ``ResultError`` follows a failed query's result, a provider that cannot be
reached is a ``CLIConnectionError``, a client used unconnected too, and a ``transport`` is
refused by name (docs/sdk.md, "Errors")."""

from __future__ import annotations

import json
import pickle
import socket
import warnings
from typing import Any

import pytest

from zpi_host.errors import UsageError, ZpiError
from zpi_host.sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ClaudeSDKError,
    CLIConnectionError,
    CLIJSONDecodeError,
    CLINotFoundError,
    ProcessError,
    ResultError,
    ResultMessage,
    SessionStoreError,
    Transport,
    UnsupportedOptionError,
    query,
)
from zpi_host.sdk.types import CanUseToolShadowedWarning

pytestmark = pytest.mark.anyio


async def _all(stream: Any) -> list[Any]:
    return [message async for message in stream]


def test_the_host_errors_are_claude_sdk_errors() -> None:
    for error in (UsageError, UnsupportedOptionError, SessionStoreError, CLIConnectionError,
                  ProcessError, ResultError, CLINotFoundError, CLIJSONDecodeError):
        assert issubclass(error, ClaudeSDKError), error
    assert ClaudeSDKError is ZpiError
    assert issubclass(CLINotFoundError, CLIConnectionError)
    assert issubclass(ResultError, ProcessError)


def test_the_errors_keep_claude_agent_sdk_attributes() -> None:
    assert str(CLINotFoundError(cli_path="/x/claude")) == "Claude Code not found: /x/claude"
    failed = ProcessError("it failed", exit_code=2, stderr="boom")
    assert (failed.exit_code, failed.stderr) == (2, "boom")
    assert str(failed) == "it failed (exit code: 2)\nError output: boom"
    result = ResultError("no", data={"subtype": "error_max_turns", "errors": ["a", " ", 3],
                                     "api_error_status": 529, "session_id": "s"})
    assert (result.subtype, result.errors, result.api_error_status, result.session_id) == (
        "error_max_turns", ["a"], 529, "s")
    copy = pickle.loads(pickle.dumps(result))
    assert (type(copy), copy.subtype) == (ResultError, "error_max_turns")
    decoded = CLIJSONDecodeError("{bad", ValueError("x"))
    assert (decoded.line, str(decoded)) == ("{bad", "Failed to decode JSON: {bad...")


async def test_an_unsupported_option_is_caught_as_a_claude_sdk_error(backend: Any) -> None:
    with pytest.raises(ClaudeSDKError, match="sandbox"):
        await _all(query("hi", backend.options(sandbox={"enabled": True})))


async def test_a_transport_is_refused_by_name(backend: Any) -> None:
    class Mine(Transport):
        async def connect(self) -> None: ...
        async def write(self, data: str) -> None: ...
        def read_messages(self) -> Any: ...
        async def close(self) -> None: ...
        def is_ready(self) -> bool:
            return True
        async def end_input(self) -> None: ...

    with pytest.raises(UnsupportedOptionError, match="'transport'"):
        await _all(query(prompt="hi", options=backend.options(), transport=Mine()))
    with pytest.raises(UnsupportedOptionError, match="'transport'"):
        ClaudeSDKClient(backend.options(), Mine())


async def test_a_failed_query_raises_result_error_after_its_result(backend: Any) -> None:
    backend.turns(*[{"tool_calls": [{"name": "Bash", "arguments": {"command": "true"}}]}] * 3)
    seen: list[Any] = []
    with pytest.raises(ResultError) as info:
        async for message in query("loop", backend.options(max_turns=1,
                                                          permission_mode="bypassPermissions")):
            seen.append(message)
    result = seen[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "error_max_turns"
    error = info.value
    assert (error.subtype, error.session_id, error.terminal_reason) == (
        "error_max_turns", result.session_id, "max_turns")
    assert error.errors == result.errors and error.data["num_turns"] == 1
    assert error.exit_code is None and "error_max_turns" in str(error)


async def test_a_successful_query_raises_nothing(backend: Any) -> None:
    backend.turns({"text": "fine"})
    messages = await _all(query("hi", backend.options()))
    assert messages[-1].subtype == "success"


async def test_a_client_reports_a_failed_input_only_as_a_message(backend: Any) -> None:
    backend.turns(*[{"tool_calls": [{"name": "Bash", "arguments": {"command": "true"}}]}] * 2)
    async with ClaudeSDKClient(backend.options(max_turns=1,
                                               permission_mode="bypassPermissions")) as client:
        await client.query("loop")
        messages = [m async for m in client.receive_response()]
    assert messages[-1].subtype == "error_max_turns"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_unreachable_provider_is_a_cli_connection_error(tmp_path: Any,
                                                                 zpi_env: Any) -> None:
    settings = {"providers": {"openai": {"base_url": f"http://127.0.0.1:{_closed_port()}/v1"}},
                "requests": {"max_retries": 0}}
    options = ClaudeAgentOptions(model="openai:gpt-4o", cwd=tmp_path,
                                 agent_dir=zpi_env.agent_dir, settings=json.dumps(settings),
                                 env={"OPENAI_API_KEY": "sk-test"})
    seen: list[Any] = []
    with pytest.raises(CLIConnectionError) as info:
        async for message in query("hi", options):
            seen.append(message)
    assert isinstance(info.value, ResultError)
    assert info.value.subtype == "error_during_execution"
    from zpi_host.providers import ProviderConnectionError

    assert isinstance(info.value.__cause__, ProviderConnectionError)
    assert isinstance(info.value.__cause__, CLIConnectionError)
    assert seen[-1].is_error and seen[-1].api_error_status is None


async def test_an_unconnected_client_raises_cli_connection_error() -> None:
    client = ClaudeSDKClient(ClaudeAgentOptions())
    with pytest.raises(CLIConnectionError, match="not connected"):
        await client.query("hi")
    with pytest.raises(UsageError):  # what this host's own callers catch
        await client.query("hi")
    from zpi_host.sdk import TaskError

    for expected in (CLIConnectionError, TaskError):
        with pytest.raises(expected, match="not connected"):
            await client.stop_task("t1")


def test_can_use_tool_shadowed_warns_when_the_callback_will_not_be_asked(tmp_path: Any) -> None:
    async def approve(name: str, arguments: dict[str, Any], context: Any) -> Any:
        return None

    cases = [({"permission_mode": "bypassPermissions"}, "bypassPermissions"),
             ({"allowed_tools": ["Read", "Read(*)", "Bash(git *)"]}, "for Read:")]
    for fields, expected in cases:
        options = ClaudeAgentOptions(cwd=tmp_path, can_use_tool=approve, **fields)
        with pytest.warns(CanUseToolShadowedWarning, match=expected) as caught:
            options.check()
        assert "Bash" not in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ClaudeAgentOptions(cwd=tmp_path, can_use_tool=approve,
                           allowed_tools=["Bash(git *)"]).check()
        ClaudeAgentOptions(cwd=tmp_path, permission_mode="bypassPermissions").check()
