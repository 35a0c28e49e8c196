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
        self._policy: Any = None

    @property
    def session(self) -> Any:
        return self._session.view

    async def run_bash(self, command: str) -> str:
        """Run ``command`` with the session's bash tool under either spelling (``bash``;
        ``Bash`` in an SDK session): permissions and hooks apply, and the command's
        ``allowed-tools`` allow what they name (:meth:`permissions`). The output, or the
        error text when it was denied or failed."""
        from ..permissions.toolnames import same_tool
        from ..tools.base import ToolCall
        from .toolcalls import ToolCallRunner

        name = next((n for n in same_tool("bash") if n in self._session.tools), None)
        if name is None:
            return "(the bash tool is not enabled in this session)"
        call = ToolCall(f"cmd_{next(_call_ids)}", name, {"command": command})
        runner = ToolCallRunner(self._session, self.permissions())
        result = await runner.run(call)
        await runner.report_end(result)
        return "\n".join(getattr(c, "text", "") for c in result.content).strip()

    def permissions(self) -> Any:
        """The policy the command's shell blocks are checked by: the session's, with the
        command's ``allowed-tools`` as allow rules, as Claude Code grants them, except for a
        command the project ships while it is not trusted (docs/reliability.md: a repository
        may not loosen the user's rules); then a warning says they were not applied."""
        if self._policy is not None:
            return self._policy
        policy = self._session.permissions
        granted = self.command.allowed_tools
        label = f"command /{self.command.name} allowed-tools"
        if granted and not self._session.host.config.trusted and self._from_project():
            self._session.warnings.append(
                f"{label} not applied: the command comes from the project "
                f"{self._session.cwd}, which is not trusted (trust it with --trust-project)")
        elif granted:
            from ..permissions import PermissionConfigError

            try:
                policy = policy.granting(granted, label)
            except PermissionConfigError as exc:
                self._session.warnings.append(f"{exc} (not applied)")
        self._policy = policy
        return policy

    def _from_project(self) -> bool:
        """Whether the command's file lies in the project folder (a repository shipped it),
        not in the agent directory."""
        from pathlib import Path

        path = self.command.path
        if path is None:
            return False
        real = Path(path).resolve()
        agent_dir = self._session.agent_dir
        if agent_dir is not None and real.is_relative_to(Path(agent_dir).resolve()):
            return False
        return real.is_relative_to(Path(self._session.cwd).resolve())


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
