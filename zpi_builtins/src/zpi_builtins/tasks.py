"""Service ``builtins:tasks``: background commands (``bash`` with ``run_in_background``),
``task_output`` and ``task_stop``.

``bash`` gains ``run_in_background`` through the documented override rule
(``zpi_tool_overrides``): such a command starts in its own process group, its output goes to a
private spill file, and the call returns at once with the task's id. ``task_output`` reads a
task's output (waiting for its end when asked) and ``task_stop`` stops it. The session's
:class:`~.task_registry.TaskRegistry` does the work and is attached to the host's generic task
port (``SessionView.ports.tasks``), so the SDK's ``stop_task``, the end of a plain run and the
Claude adapter's Stop input use the same one. A resumed session tells the model which tasks a
previous process left unfinished (``zpi_session_start``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from zpi_host import hookimpl
from zpi_host.tools import (
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolFailure,
    ToolMetadata,
    ToolResult,
)

from .settings import enabled
from .task_constants import DEFAULT_WAIT_MS, SERVICE

if TYPE_CHECKING:  # the registry is imported when a session first uses it
    from zpi_host.session.ports import TaskInfo

    from .task_registry import BackgroundTask, OutputArgs, TaskRegistry

__all__ = ["task_output_tool", "task_stop_tool", "zpi_register_tools",
           "zpi_session_start", "zpi_tool_overrides"]

#: shown by ``zpi-host --list-plugins``
contributes = {"tools": ["task_output", "task_stop"], "tool_overrides": ["bash"]}

#: how much of a task's output ``task_output`` shows (its end; the file has all of it)
OUTPUT_TAIL_BYTES = 32 * 1024
MAX_WAIT_MS = 600_000


# ------------------------------------------------------------------------------ the tools


BASH_EXTRA = {
    "run_in_background": {"type": "boolean", "description": (
        "Run the command in the background and return at once with a task id; read its "
        "output with task_output and stop it with task_stop. You are told when it ends.")},
    "description": {"type": "string", "description": "What the command does, in a few words "
                                                     "(names a background task)."},
}


def _registry(session: Any) -> TaskRegistry:
    """The session's task registry (made, and :mod:`.task_registry` imported, on first use)."""
    from .task_registry import registry_for

    return registry_for(session)


def _bash_override() -> Tool:
    """The kernel's ``bash`` with ``run_in_background`` (and a ``description``)."""
    from zpi_host.tools.bash import BashArgs, bash_tool, prepare_bash_args, run_bash

    kernel = bash_tool()

    def prepare(arguments: Mapping[str, Any]) -> Any:
        if not isinstance(arguments, Mapping):
            return prepare_bash_args(arguments)
        for key in arguments:
            if key not in parameters["properties"]:
                raise ToolArgumentError("bash", key, "is not a parameter (known: "
                                        f"{', '.join(parameters['properties'])})")
        rest = {k: v for k, v in arguments.items() if k not in BASH_EXTRA}
        background = arguments.get("run_in_background", False)
        if not isinstance(background, bool):
            raise ToolArgumentError("bash", "run_in_background", "must be true or false")
        description = arguments.get("description", "")
        if not isinstance(description, str):
            raise ToolArgumentError("bash", "description", "must be a string")
        plain = prepare_bash_args(rest)
        if not background:
            return plain
        from .task_registry import BackgroundArgs

        return BackgroundArgs(plain.command, description.strip() or _brief(plain.command))

    async def execute(args: Any, ctx: ToolContext) -> ToolResult:
        if isinstance(args, BashArgs):  # not run in the background
            return await run_bash(args, ctx)
        if ctx.session is None:
            raise ToolFailure("background commands need a session")
        info = await _registry(ctx.session).start(args.command, args.description, ctx)
        return ToolResult.text(
            f"Started background task {info.task_id} (pid {info.pid}). Its output goes to "
            f"{info.output_file}. Read it with task_output (task_id {info.task_id!r}); stop "
            "it with task_stop. You will be told when it ends.",
            details={"task_id": info.task_id, "pid": info.pid, "pgid": info.pgid,
                     "output_file": info.output_file, "background": True})

    parameters = dict(kernel.parameters)
    parameters["properties"] = {**kernel.parameters["properties"], **BASH_EXTRA}
    description = (kernel.description + "\n- run_in_background: true starts the command and "
                   "returns at once with a task id (no timeout applies); it is stopped when "
                   "the session ends.")
    return attrs.evolve(kernel, description=description, parameters=parameters,
                        prepare=prepare, execute=execute)


def _brief(command: str) -> str:
    line = " ".join(command.split())
    return line if len(line) <= 60 else line[:57] + "..."


def _task_id(arguments: Any, tool: str, *, fallback: str | None = None) -> str:
    if not isinstance(arguments, Mapping):
        raise ToolArgumentError(tool, None, "expected an object")
    value = arguments.get("task_id")
    if value is None and fallback is not None:
        value = arguments.get(fallback)
    if not isinstance(value, str) or not value.strip():
        raise ToolArgumentError(tool, "task_id", "must be the id of a background task (as "
                                "bash with run_in_background returned it)")
    return value.strip()


def prepare_output(arguments: Mapping[str, Any]) -> OutputArgs:
    from .task_registry import OutputArgs

    task_id = _task_id(arguments, "task_output")
    unknown = set(arguments) - {"task_id", "block", "timeout"}
    if unknown:
        raise ToolArgumentError("task_output", sorted(unknown)[0],
                                "is not a parameter (known: task_id, block, timeout)")
    block = arguments.get("block", True)
    if not isinstance(block, bool):
        raise ToolArgumentError("task_output", "block", "must be true or false")
    timeout = arguments.get("timeout", DEFAULT_WAIT_MS)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or \
            not 0 <= timeout <= MAX_WAIT_MS:
        raise ToolArgumentError("task_output", "timeout",
                                f"must be milliseconds between 0 and {MAX_WAIT_MS}")
    return OutputArgs(task_id, block, int(timeout))


def _tail(registry: TaskRegistry, task: BackgroundTask) -> tuple[str, int]:
    """The end of a task's output file and its size (ToolFailure when the file was replaced
    by something the host does not read: a symlink, a FIFO)."""
    data, size = registry.read_output(task, OUTPUT_TAIL_BYTES)
    text = data.decode("utf-8", errors="replace")
    if size > OUTPUT_TAIL_BYTES:
        text = text.split("\n", 1)[-1]
        text = f"[... the first {size - len(data)} bytes are only in the file ...]\n" + text
    return text.rstrip("\n"), size


def _report(registry: TaskRegistry, task: BackgroundTask, info: TaskInfo,
            waited: bool) -> ToolResult:
    text, size = _tail(registry, task)
    if info.running:
        state = "still running" + (" (the wait timed out)" if waited else "")
    else:
        state = f"{info.status}: {info.summary}"
    empty = "(no output yet)" if info.running else "(no output)"
    body = f"Task {info.task_id} ({info.description}): {state}.\n" \
           f"Output ({size} bytes, file {info.output_file}):\n{text or empty}"
    return ToolResult.text(body, details=info.to_json())


async def task_output(args: OutputArgs, ctx: ToolContext) -> ToolResult:
    registry = _registry(ctx.session)
    task = _lookup(registry, args.task_id)
    waited = False
    if args.block and task.status == "running":
        import anyio

        waited = True
        with anyio.move_on_after(args.timeout_ms / 1000):
            await task.done.wait()
    info = registry.info(task)
    if not info.running:
        task.model_knows_end = True
    return _report(registry, task, info, waited)


async def task_stop(args: str, ctx: ToolContext) -> ToolResult:
    registry = _registry(ctx.session)
    task = _lookup(registry, args)
    was_running = task.status == "running"
    if was_running:
        task.model_knows_end = True
        info = await registry.stop(args, "stopped by task_stop")
        return ToolResult.text(f"Stopped task {info.task_id} ({info.description}); its "
                               f"output is in {info.output_file}.", details=info.to_json())
    info = registry.info(task)
    return ToolResult.text(f"Task {info.task_id} had already ended ({info.summary}); "
                           "nothing to stop.", details=info.to_json())


def _lookup(registry: TaskRegistry, task_id: str) -> BackgroundTask:
    from zpi_host.session.ports import TaskError

    try:
        return registry.get(task_id)
    except TaskError as exc:
        raise ToolFailure(str(exc)) from None


OUTPUT_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "task_id": {"type": "string", "description": "The id of the background task."},
        "block": {"type": "boolean", "description": "Wait for the task to end (default "
                                                    "true)."},
        "timeout": {"type": "number", "description": f"How long to wait, in milliseconds "
                                                     f"(default {DEFAULT_WAIT_MS}, at most "
                                                     f"{MAX_WAIT_MS})."},
    },
    "required": ["task_id"],
    "additionalProperties": False,
}

STOP_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {"task_id": {"type": "string",
                               "description": "The id of the background task to stop."}},
    "required": ["task_id"],
    "additionalProperties": False,
}


def task_output_tool() -> Tool:
    return Tool(
        name="task_output",
        description="Show the output of a background task (a bash command run with "
                    "run_in_background) and whether it has ended. With block (the default) "
                    "it waits up to timeout milliseconds for the task to end first.",
        parameters=OUTPUT_PARAMETERS, execute=task_output,
        metadata=ToolMetadata(read_only=True, concurrency_safe=True, side_effects=False),
        prepare=prepare_output)


def task_stop_tool() -> Tool:
    def prepare(arguments: Mapping[str, Any]) -> str:
        if isinstance(arguments, Mapping) and set(arguments) - {"task_id"}:
            raise ToolArgumentError("task_stop", sorted(set(arguments) - {"task_id"})[0],
                                    "is not a parameter (known: task_id)")
        return _task_id(arguments, "task_stop")

    return Tool(
        name="task_stop",
        description="Stop a background task and every process it started. Stopping a task "
                    "that already ended does nothing.",
        parameters=STOP_PARAMETERS, execute=task_stop,
        metadata=ToolMetadata(read_only=False, concurrency_safe=False, side_effects=True),
        prepare=prepare)


# ------------------------------------------------------------------------------ hooks


@hookimpl
def zpi_register_tools(cwd: Path, settings: Mapping[str, Any]) -> list[Tool] | None:
    return [task_output_tool(), task_stop_tool()] if enabled(settings, SERVICE) else None


@hookimpl
def zpi_tool_overrides(cwd: Path, settings: Mapping[str, Any]) -> list[Tool] | None:
    return [_bash_override()] if enabled(settings, SERVICE) else None


@hookimpl
def zpi_session_start(session: Any, source: str) -> str | None:
    """A resumed session: tell the model which tasks ended while no host ran them."""
    if source != "resume" or not enabled(session.settings, SERVICE):
        return None
    orphans = _registry(session).orphans
    if not orphans:
        return None
    lines = [f"- {t.task_id} ({t.description or shlex.quote(t.command)}): {t.summary}; output "
             f"in {t.output_file}" for t in orphans]
    return ("Background tasks of this session that were running when it was last used have "
            "ended (the host that ran them stopped):\n" + "\n".join(lines) +
            "\nThis is information only; it does not ask you to run anything again.")
