"""claude-agent-sdk's errors, as this host raises them.

``ClaudeSDKError`` is :class:`~zpi_host.errors.ZpiError`, the base of every error the host
raises on purpose, so ``except ClaudeSDKError`` catches this host's own typed errors too
(``UsageError``, ``UnsupportedOptionError``, ``SessionStoreError``, provider errors ...).
``CLIConnectionError`` is :class:`~zpi_host.errors.ConnectionFailure`: a model provider that
cannot be reached (``ProviderConnectionError``) is one, as is using a client that is not
connected. A ``query()`` whose last result is an error raises :class:`ResultError` after
yielding that result, as claude-agent-sdk does when Claude Code exits after an error result.
There is no Claude Code process: ``CLINotFoundError`` and ``CLIJSONDecodeError`` exist for
programs that catch them and are never raised (docs/sdk.md, "Errors").
"""

from __future__ import annotations

from typing import Any

from ..errors import ConnectionFailure, UsageError, ZpiError
from ..session.ports import TaskError

__all__ = [
    "CLIConnectionError", "CLIJSONDecodeError", "CLINotFoundError", "CanUseToolShadowedWarning",
    "ClaudeSDKError", "ConnectionResultError", "NotConnectedError", "ProcessError",
    "ResultError", "TaskNotConnectedError", "shadowing",
]

#: the base of what the SDK raises: this host's base error
ClaudeSDKError = ZpiError
#: a service the session needs could not be reached (or the client is not connected)
CLIConnectionError = ConnectionFailure


class CLINotFoundError(CLIConnectionError):
    """claude-agent-sdk's "Claude Code not found"; never raised here (there is no CLI)."""

    def __init__(self, message: str = "Claude Code not found",
                 cli_path: str | None = None) -> None:
        super().__init__(f"{message}: {cli_path}" if cli_path else message)


class ProcessError(ClaudeSDKError):
    """A run failed. ``exit_code`` and ``stderr`` are claude-agent-sdk's (the CLI's exit
    status and error output): this host has no process, so they are None unless given."""

    def __init__(self, message: str, exit_code: int | None = None,
                 stderr: str | None = None) -> None:
        self.exit_code = exit_code
        self.stderr = stderr
        if exit_code is not None:
            message = f"{message} (exit code: {exit_code})"
        if stderr:
            message = f"{message}\nError output: {stderr}"
        super().__init__(message)


def _strings(raw: Any) -> list[str]:
    items = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    return [e.strip() for e in items if isinstance(e, str) and e.strip()]


class ResultError(ProcessError):
    """A query ended with an error result (``error_max_turns``, ``error_during_execution``,
    ``error_max_budget_usd`` ...). ``data`` is that result as a dict; ``subtype``, ``errors``,
    ``result``, ``api_error_status``, ``terminal_reason`` and ``session_id`` are read from
    it, so a program can branch on why the run failed."""

    def __init__(self, message: str, data: dict[str, Any] | None = None,
                 exit_code: int | None = None) -> None:
        data = data if isinstance(data, dict) else {}
        self.data = data

        def text(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        self.subtype = text("subtype")
        self.errors: list[str] = _strings(data.get("errors"))
        self.result = text("result")
        status = data.get("api_error_status")
        self.api_error_status: int | None = status if type(status) is int else None
        self.terminal_reason = text("terminal_reason")
        self.session_id = text("session_id")
        super().__init__(message, exit_code=exit_code)


class ConnectionResultError(ResultError, CLIConnectionError):
    """A query failed because a service it needs (the model provider) could not be reached:
    both a :class:`ResultError` and a ``CLIConnectionError``; ``__cause__`` is the
    provider's error."""


class CLIJSONDecodeError(ClaudeSDKError):
    """claude-agent-sdk's "could not decode the CLI's output"; never raised here."""

    def __init__(self, line: str, original_error: Exception) -> None:
        self.line = line
        self.original_error = original_error
        super().__init__(f"Failed to decode JSON: {line[:100]}...")


class NotConnectedError(UsageError, CLIConnectionError):
    """A client method that needs a connection was called before ``connect()`` or after
    ``disconnect()``: a ``UsageError`` here, a ``CLIConnectionError`` to claude-agent-sdk."""


class TaskNotConnectedError(TaskError, CLIConnectionError):
    """``stop_task`` before ``connect()`` or after ``disconnect()``: a ``TaskError`` here, a
    ``CLIConnectionError`` to claude-agent-sdk."""


class CanUseToolShadowedWarning(UserWarning):
    """``can_use_tool`` will never be asked: the permission mode or ``allowed_tools``
    answer every call first (``bypassPermissions``, or an allow rule for every tool)."""


def _whole_tool(entry: str) -> str | None:
    """The tool an allow rule allows every call of (``Read``, ``Read()``, ``Read(*)``)."""
    entry = entry.strip()
    if not entry:
        return None
    name, paren, rest = entry.partition("(")
    if not paren:
        return entry
    return name if name and rest in (")", "*)") else None


def shadowing(permission_mode: str | None, allowed_tools: list[str]) -> str | None:
    """Why ``can_use_tool`` will not be asked for some calls (the text of
    :class:`CanUseToolShadowedWarning`), or None."""
    if permission_mode == "bypassPermissions":
        return ("can_use_tool is never asked: permission_mode 'bypassPermissions' allows every "
                "call that no deny rule refuses; use a PreToolUse hook to see every call")
    tools = list(dict.fromkeys(t for e in allowed_tools if (t := _whole_tool(e)) is not None))
    if not tools:
        return None
    return (f"can_use_tool is never asked for {', '.join(tools)}: an allowed_tools entry "
            "naming a whole tool allows its calls first; narrow the entry to some calls, or "
            "use a PreToolUse hook")
