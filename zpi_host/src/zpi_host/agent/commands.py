"""Slash commands: a prompt ``/name arguments`` becomes the command's expansion.

A template command expands its placeholders (``resources.Command.expand``). A handler command
calls ``handler(arguments)`` or ``handler(arguments, context)``; the :class:`CommandContext`
lets it read the session and run shell commands through the bash tool, so what a command
runs meets the same permission rules, hooks and journal as the model's own calls.
"""

from __future__ import annotations

import inspect
import itertools
from typing import TYPE_CHECKING, Any

from ..errors import UsageError, ZpiError

if TYPE_CHECKING:
    from ..resources import Command
    from .state import SessionState

_call_ids = itertools.count(1)


class CommandError(ZpiError):
    """A command that could not be expanded (its handler failed or returned no text)."""


class CommandContext:
    """What a handler command may use: the session (read-only) and the bash tool."""

    def __init__(self, session: SessionState, command: Command) -> None:
        self._session = session
        self.command = command

    @property
    def session(self) -> Any:
        return self._session.view

    async def run_bash(self, command: str) -> str:
        """Run ``command`` with the session's bash tool (permissions and hooks apply); the
        output, or the error text when it was denied or failed."""
        from ..tools.base import ToolCall
        from .toolcalls import ToolCallRunner

        if "bash" not in self._session.tools:
            return "(the bash tool is not enabled in this session)"
        call = ToolCall(f"cmd_{next(_call_ids)}", "bash", {"command": command})
        runner = ToolCallRunner(self._session)
        result = await runner.run(call)
        await runner.report_end(result)
        return "\n".join(getattr(c, "text", "") for c in result.content).strip()


def split_command(prompt: str) -> tuple[str, str] | None:
    """``"/name args"`` -> (name, args); None when the prompt is not a command."""
    body = prompt[1:] if prompt.startswith("/") else ""
    if not body or body[0].isspace() or body[0] == "/":
        return None
    name = body.split(None, 1)[0]
    return name, body[len(name):].strip()


async def expand_prompt(session: SessionState, prompt: str) -> str:
    """The prompt with a leading ``/command`` expanded; other prompts unchanged. An unknown
    command is an error listing the known ones (a path like ``/tmp/x`` is not a command)."""
    parts = split_command(prompt)
    resources = session.resources
    if parts is None or resources is None:
        return prompt
    name, arguments = parts
    command = resources.command(name)
    if command is None:
        if "/" in name or "." in name:
            return prompt  # an absolute path, not a command
        known = ", ".join("/" + c.name for c in resources.commands) or "none"
        raise UsageError(f"unknown command /{name} (commands: {known})")
    if command.handler is None:
        return command.expand(arguments)
    try:
        handler: Any = command.handler
        takes_context = len(inspect.signature(handler).parameters) >= 2
        value = (handler(arguments, CommandContext(session, command)) if takes_context
                 else handler(arguments))
        if inspect.isawaitable(value):
            value = await value
    except ZpiError:
        raise
    except Exception as exc:
        raise CommandError(f"command /{command.name} failed: {type(exc).__name__}: "
                           f"{exc}") from exc
    if not isinstance(value, str) or not value.strip():
        raise CommandError(f"command /{command.name} returned {value!r:.80} instead of the "
                           "prompt text")
    return value
