"""The ``bash`` tool: run a shell command in the workspace and report its output.

The command runs in its own process group so that a timeout or an abort can stop everything it
started, not just the shell. Output is read as it arrives into a :class:`HeadTailBuffer`, so
memory stays bounded however much the command prints.

stdout and stderr have a pipe each. Output that fits the session's one output limit
(``ToolContext.output_limit``, setting ``tools.output_limit_bytes``) reaches the model whole,
both streams in the order they arrived (writes that land within one read of each other may
come in either order). Past it, each stream is previewed apart, a head and a tail within its
share of the limit, and spilled whole to its own file (``details``: ``stdout_path``,
``stderr_path``; ``full_output_path`` is the first of them). When the call's context asks for
the streams apart (``ToolContext.streams_apart``: a hook reads them, as Claude's
``tool_response.stderr``), ``details`` also has ``stdout`` and ``stderr``.

This module defines the tool and checks its arguments; running the commands is
:mod:`.bash_run`'s, imported at the first command.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ..support.attrs_methods import FrozenFieldsEq
from ..support.lazy import lazy_attributes
from .base import (
    DEFAULT_CAPTURE_LIMIT,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolMetadata,
    ToolResult,
)

if TYPE_CHECKING:  # what runs commands is imported at the first one
    from .bash_run import command_environment, find_shell, stop_process_group

__all__ = ["DEFAULT_TIMEOUT", "DESCRIPTION", "MAX_TIMEOUT", "NAME", "PARAMETERS", "BashArgs",
           "bash_tool", "command_environment", "find_shell", "prepare_bash_args", "run_bash",
           "stop_process_group"]

NAME = "bash"
DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 600

DESCRIPTION = f"""Run a shell command with bash -c and return its output (stdout and stderr \
merged).

- The command runs in the workspace's current directory with the host's environment. It is \
NOT a sandbox: it can read, change and delete anything the host user can.
- stdin is /dev/null: do not run interactive commands (editors, pagers, prompts).
- Default timeout {DEFAULT_TIMEOUT} s, maximum {MAX_TIMEOUT} s (argument "timeout", in \
seconds). On timeout every process the command started is stopped.
- Processes still running in the background when the command finishes are stopped too.
- Output beyond {DEFAULT_CAPTURE_LIMIT // 1024} KiB is shortened to its start and end; the \
complete output is saved to a file whose path is given in the result.
- A non-zero exit status is reported as an error together with the output."""

PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The command to run with bash -c."},
        "timeout": {
            "type": "integer",
            "description": (
                f"Timeout in seconds (default {DEFAULT_TIMEOUT}, maximum {MAX_TIMEOUT})."
            ),
        },
    },
    "required": ["command"],
    "additionalProperties": False,
}


@attrs.frozen(repr=False, eq=False, slots=False)
class BashArgs(FrozenFieldsEq):
    """Validated arguments of one bash call."""

    command: str
    timeout: int = DEFAULT_TIMEOUT


def prepare_bash_args(arguments: Mapping[str, Any]) -> BashArgs:
    """Check the model's arguments; every problem names its field."""
    if not isinstance(arguments, Mapping):
        raise ToolArgumentError(
            NAME, None, f"expected a JSON object, got {type(arguments).__name__}"
        )
    for key in arguments:
        if key not in PARAMETERS["properties"]:
            raise ToolArgumentError(NAME, key, "is not a parameter (known: command, timeout)")
    if "command" not in arguments:
        raise ToolArgumentError(NAME, "command", "is required")
    command = arguments["command"]
    if not isinstance(command, str):
        raise ToolArgumentError(NAME, "command", f"expected string, got {type(command).__name__}")
    if not command.strip():
        raise ToolArgumentError(NAME, "command", "must not be empty")
    timeout = arguments.get("timeout")
    if timeout is None:
        return BashArgs(command)
    if isinstance(timeout, bool) or not isinstance(timeout, int):
        raise ToolArgumentError(
            NAME, "timeout", f"expected integer seconds, got {type(timeout).__name__}"
        )
    if timeout <= 0:
        raise ToolArgumentError(
            NAME, "timeout", f"must be a positive number of seconds, got {timeout}"
        )
    if timeout > MAX_TIMEOUT:
        raise ToolArgumentError(
            NAME, "timeout", f"must be at most {MAX_TIMEOUT} seconds, got {timeout}"
        )
    return BashArgs(command, timeout)


async def run_bash(args: Any, ctx: ToolContext) -> ToolResult:
    """Run one command (``args``: :class:`BashArgs` or the raw argument mapping) and report
    its output: :func:`.bash_run.run_bash`, imported at the first call, runs the checked
    arguments."""
    from .bash_run import run_bash

    return await run_bash(args if isinstance(args, BashArgs) else prepare_bash_args(args), ctx)


#: what runs commands, imported on first use (a session that runs none does not load it)
__getattr__, __dir__ = lazy_attributes(__name__, dict.fromkeys((
    "command_environment", "find_shell", "stop_process_group"), "bash_run"), globals(),
    parent=__package__)


def bash_tool() -> Tool:
    """The kernel's bash tool."""
    return Tool(
        name=NAME,
        description=DESCRIPTION,
        parameters=PARAMETERS,
        execute=run_bash,
        metadata=ToolMetadata(read_only=False, concurrency_safe=False, side_effects=True),
        prepare=prepare_bash_args,
    )
