"""Service ``builtins:tasks``: background commands and the session's task registry.

``bash`` gains ``run_in_background`` through the documented override rule
(``zpi_tool_overrides``): such a command starts in its own process group, its output goes to a
private spill file, and the call returns at once with the task's id. ``task_output`` reads a
task's output (waiting for its end when asked) and ``task_stop`` stops it. The registry is one
per session, made by the service runtime and attached to the host's generic task port
(``SessionView.ports.tasks``), so the SDK's ``stop_task``, the end of a plain run and the Claude
adapter's Stop input use the same one.

Each task emits ``task_started``, ``task_progress`` (while its output grows) and
``task_notification`` events; its start (pid, pgid) and end (exit code) are ``custom`` records
of namespace ``zpi.task`` in the transcript. When a task ends, the model is told at its next
turn, as information. At session end every task still running is stopped and drained. A
resumed session reports the tasks a previous process left unfinished as ended.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shlex
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from zpi_host import hookimpl
from zpi_host.ports import TaskInfo
from zpi_host.tools import (
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolFailure,
    ToolMetadata,
    ToolResult,
)

from .runtime import BuiltinPluginRuntime, runtime_for
from .settings import enabled, service_settings

__all__ = ["BackgroundArgs", "TaskRegistry", "ended_context", "task_output_tool",
           "task_stop_tool", "zpi_register_tools", "zpi_session_start", "zpi_tool_overrides"]

log = logging.getLogger("zpi_builtins")

#: shown by ``zpi-host --list-plugins``
contributes = {"tools": ["task_output", "task_stop"], "tool_overrides": ["bash"]}

SERVICE = "tasks"
SOURCE = "builtins:tasks"
NAMESPACE = "zpi.task"
#: how much of a task's output ``task_output`` shows (its end; the file has all of it)
OUTPUT_TAIL_BYTES = 32 * 1024
DEFAULT_WAIT_MS = 30_000
MAX_WAIT_MS = 600_000


# ------------------------------------------------------------------------------ the registry


@attrs.define(eq=False)
class BackgroundTask:
    """One background command of the session (mutable; :meth:`info` is the snapshot)."""

    task_id: str
    command: str
    description: str
    output_file: Path
    tool_use_id: str | None = None
    process: Any = None
    pgid: int | None = None
    started: float = attrs.field(factory=time.monotonic)
    ended: float | None = None
    status: str = "running"
    exit_code: int | None = None
    stop_reason: str | None = None
    summary: str = ""
    #: the model saw how the task ended (task_output or task_stop): no notification context
    model_knows_end: bool = False
    done: Any = None  # asyncio.Event, set when the task ended and was recorded
    watcher: Any = None

    def output_bytes(self) -> int:
        try:
            return self.output_file.stat().st_size
        except OSError:
            return 0


def _status(exit_code: int | None, stopped: bool) -> str:
    if stopped:
        return "stopped"
    return "completed" if exit_code == 0 else "failed"


def _ended_summary(task: BackgroundTask) -> str:
    if task.status == "stopped":
        return f"stopped ({task.stop_reason or 'on request'})"
    if task.exit_code is not None and task.exit_code < 0:
        return f"killed by signal {-task.exit_code}"
    return f"exited with code {task.exit_code}"


class TaskRegistry:
    """The background tasks of one session; attached to ``ports.tasks``."""

    def __init__(self, runtime: BuiltinPluginRuntime) -> None:
        import asyncio

        self.runtime = runtime
        self.ports = runtime.ports
        self.session_id: str = runtime.session.session_id
        settings = service_settings(runtime.settings, SERVICE)
        self.progress_seconds = float(settings["progress_seconds"])
        self.max_running = int(settings["max_running"])
        self._tasks: dict[str, BackgroundTask] = {}
        self._asyncio = asyncio
        self.closed = False
        self.orphans = self._load_recorded()
        self.ports.tasks.attach(self)

    # -- the port's side ------------------------------------------------------------------

    def tasks(self) -> list[TaskInfo]:
        return [self.info(t) for t in self._tasks.values()]

    def info(self, task: BackgroundTask) -> TaskInfo:
        end = task.ended if task.ended is not None else time.monotonic()
        return TaskInfo(
            task_id=task.task_id, session_id=self.session_id, command=task.command,
            description=task.description, status=task.status,
            output_file=str(task.output_file), pid=task.pgid, pgid=task.pgid,
            tool_use_id=task.tool_use_id, exit_code=task.exit_code,
            output_bytes=task.output_bytes(), duration_ms=int((end - task.started) * 1000),
            summary=task.summary)

    async def stop(self, task_id: str, reason: str) -> TaskInfo:
        """Stop one task (TERM, then KILL, the whole group) and wait for its end record."""
        task = self.get(task_id)
        if task.status == "running":
            await self._stop(task, reason)
        return self.info(task)

    async def stop_all(self, reason: str) -> list[TaskInfo]:
        """Stop every running task, together, and wait until each one is recorded."""
        running = [t for t in self._tasks.values() if t.status == "running"]
        if running:
            await self._asyncio.gather(*(self._stop(t, reason) for t in running))
        return [self.info(t) for t in running]

    async def aclose(self) -> None:
        """Session end: nothing started before stays running."""
        self.closed = True
        await self.stop_all("the session ended")

    # -- starting -------------------------------------------------------------------------

    def get(self, task_id: str) -> BackgroundTask:
        task = self._tasks.get(task_id)
        if task is None:
            self.ports.tasks.get(task_id)  # raises the port's error (unknown, other session)
            raise AssertionError("unreachable")  # pragma: no cover
        return task

    async def start(self, command: str, description: str, ctx: ToolContext) -> TaskInfo:
        """Start ``command`` in its own process group, its output going to a spill file."""
        import subprocess

        import anyio

        from zpi_host import process_groups
        from zpi_host.spill import SpillFolderError, create_spill_file
        from zpi_host.tools.bash import command_environment, find_shell

        if self.closed:
            raise ToolFailure("the session is ending; no background command was started")
        running = sum(1 for t in self._tasks.values() if t.status == "running")
        if running >= self.max_running:
            raise ToolFailure(
                f"{running} background commands are running already (the limit is "
                f"{self.max_running}, setting plugins.builtins.tasks.max_running); wait for "
                "one with task_output or stop one with task_stop")
        if ctx.spill_dir is None:
            raise ToolFailure("this session has no spill folder for the output of background "
                              "commands; run the command in the foreground")
        cwd = Path(ctx.cwd)
        if not cwd.is_dir():
            raise ToolFailure(f"working directory {cwd} does not exist or is not a directory; "
                              "the command was not run")
        task_id = "b" + secrets.token_hex(4)
        try:
            path, out = create_spill_file(ctx.spill_dir, f"task-{task_id}")
        except (SpillFolderError, OSError) as exc:
            raise ToolFailure(f"cannot create the output file of the background command: "
                              f"{exc}") from exc
        shell = find_shell()
        try:
            process = await anyio.open_process(
                [shell, "-c", command], cwd=cwd, env=command_environment(ctx),
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
        except OSError as exc:
            out.close()
            with contextlib.suppress(OSError):
                path.unlink()
            raise ToolFailure(f"could not start {shell}: {exc}") from exc
        finally:
            out.close()  # the command holds its own copy
        pgid = process.pid  # start_new_session: the shell leads its own group
        process_groups.track(pgid)  # a forced exit kills it even without time to stop it
        self.ports.tasks.claim(task_id)
        task = BackgroundTask(task_id, command, description, path, ctx.call_id or None,
                              process, pgid, done=self._asyncio.Event())
        self._tasks[task_id] = task
        self._record("start", task, pid=pgid, pgid=pgid, output_file=str(path))
        from zpi_host.events import TaskStarted

        await self.ports.tasks.publish(TaskStarted(self.info(task)))
        task.watcher = self._asyncio.get_running_loop().create_task(self._watch(task))
        return self.info(task)

    # -- watching and stopping ------------------------------------------------------------

    async def _watch(self, task: BackgroundTask) -> None:
        """Wait for the command to end (reporting progress while its output grows), stop
        what it left in its group, then record and announce the end."""
        import anyio

        from zpi_host.events import TaskProgress
        from zpi_host.tools.bash import stop_process_group

        assert task.pgid is not None  # a started task
        reported = 0
        try:
            while True:
                with anyio.move_on_after(self.progress_seconds):
                    await task.process.wait()
                    break
                size = task.output_bytes()
                if size != reported:
                    reported = size
                    await self._publish(TaskProgress(self.info(task)))
        finally:
            with anyio.CancelScope(shield=True):
                await stop_process_group(task.process, task.pgid)
                await task.process.aclose()
                await self._finish(task)

    async def _stop(self, task: BackgroundTask, reason: str) -> None:
        import anyio

        from zpi_host.tools.bash import stop_process_group

        assert task.pgid is not None  # only a started task runs
        if task.stop_reason is None and task.status == "running":
            task.stop_reason = reason
        with anyio.CancelScope(shield=True):
            await stop_process_group(task.process, task.pgid)
            await task.done.wait()

    async def _finish(self, task: BackgroundTask) -> None:
        from zpi_host import process_groups
        from zpi_host.events import TaskNotification

        if task.pgid is not None:
            process_groups.untrack(task.pgid)
        task.ended = time.monotonic()
        task.exit_code = task.process.returncode
        task.status = _status(task.exit_code, task.stop_reason is not None)
        task.summary = _ended_summary(task)
        try:
            self._record("end", task, status=task.status, exit_code=task.exit_code,
                         reason=task.stop_reason)
            await self._publish(TaskNotification(self.info(task)))
            if not self.closed:
                self.ports.tasks.add_context(lambda: self._news(task), SOURCE)
        finally:
            task.done.set()

    def _news(self, task: BackgroundTask) -> str | None:
        """The end of ``task`` for the model, unless it saw it (task_output, task_stop)."""
        if task.model_knows_end:
            return None
        task.model_knows_end = True
        return ended_context(self.info(task))

    async def _publish(self, event: Any) -> None:
        try:
            await self.ports.tasks.publish(event)
        except Exception as exc:  # a subscriber's failure must not leave the task running
            log.info("zpi-builtins: a task event could not be delivered: %s: %s",
                     type(exc).__name__, exc)

    # -- the transcript -------------------------------------------------------------------

    def _record(self, event: str, task: BackgroundTask, **fields: Any) -> None:
        data = {"event": event, "task_id": task.task_id, "command": task.command,
                "description": task.description, "tool_use_id": task.tool_use_id, **fields}
        try:
            self.ports.storage.append_custom(NAMESPACE, data)
        except Exception as exc:  # a closed or failing transcript: the task still ends
            log.info("zpi-builtins: task %s record not written: %s", task.task_id, exc)

    def _load_recorded(self) -> list[TaskInfo]:
        """The tasks earlier runs of this (resumed) session recorded, as ended tasks; those
        without an end record are recorded as ended now and returned (the caller tells the
        model). A process of another host process is never ours to wait for or stop."""
        from zpi_host.process_groups import group_alive

        starts: dict[str, Mapping[str, Any]] = {}
        ends: dict[str, Mapping[str, Any]] = {}
        for data in self.ports.storage.custom(NAMESPACE):
            if isinstance(data, Mapping) and isinstance(data.get("task_id"), str):
                (starts if data.get("event") == "start" else ends)[data["task_id"]] = data
        orphans = []
        for task_id, start in starts.items():
            task = BackgroundTask(task_id, str(start.get("command", "")),
                                  str(start.get("description", "")),
                                  Path(str(start.get("output_file", ""))),
                                  start.get("tool_use_id"), model_knows_end=True)
            end = ends.get(task_id)
            task.ended = task.started
            if end is not None:
                task.status = str(end.get("status", "stopped"))
                task.exit_code = end.get("exit_code")
                task.stop_reason = end.get("reason")
                task.summary = _ended_summary(task)
            else:
                pgid = start.get("pgid")
                task.status, task.stop_reason = "stopped", "the host that ran it stopped"
                task.summary = "ended while no host was running it; its exit code is unknown"
                if isinstance(pgid, int) and group_alive(pgid):
                    task.summary += (f" (process group {pgid} still exists but belongs to no "
                                     "session now; it is not managed by this one)")
                self._record("end", task, status=task.status, exit_code=None,
                             reason=task.stop_reason)
            self._tasks[task_id] = task
            self.ports.tasks.claim(task_id)
            if end is None:
                orphans.append(self.info(task))
        return orphans


def ended_context(info: TaskInfo) -> str:
    """What the model is told when a task ended: information, not a request."""
    code = "unknown" if info.exit_code is None else str(info.exit_code)
    return (f"Background task {info.task_id} ({info.description or info.command}) has "
            f"ended: {info.status} ({info.summary}), exit code {code}. Its output is in "
            f"{info.output_file} ({info.output_bytes} bytes; task_output shows its end). "
            "This is a status report for your information; it does not ask you to run the "
            "command again.")


def registry_for(session: Any) -> TaskRegistry:
    """The session's registry (a ``SessionView``), made on first use."""
    return runtime_for(session).service(SERVICE, TaskRegistry)


# ------------------------------------------------------------------------------ the tools


@attrs.frozen
class BackgroundArgs:
    """Validated arguments of a ``bash`` call with ``run_in_background``."""

    command: str
    description: str


BASH_EXTRA = {
    "run_in_background": {"type": "boolean", "description": (
        "Run the command in the background and return at once with a task id; read its "
        "output with task_output and stop it with task_stop. You are told when it ends.")},
    "description": {"type": "string", "description": "What the command does, in a few words "
                                                     "(names a background task)."},
}


def _bash_override() -> Tool:
    """The kernel's ``bash`` with ``run_in_background`` (and a ``description``)."""
    from zpi_host.tools.bash import bash_tool, prepare_bash_args, run_bash

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
        return BackgroundArgs(plain.command, description.strip() or _brief(plain.command))

    async def execute(args: Any, ctx: ToolContext) -> ToolResult:
        if not isinstance(args, BackgroundArgs):
            return await run_bash(args, ctx)
        if ctx.session is None:
            raise ToolFailure("background commands need a session")
        info = await registry_for(ctx.session).start(args.command, args.description, ctx)
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


@attrs.frozen
class OutputArgs:
    task_id: str
    block: bool = True
    timeout_ms: int = DEFAULT_WAIT_MS


def prepare_output(arguments: Mapping[str, Any]) -> OutputArgs:
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


def _tail(path: Path) -> tuple[str, int]:
    """The end of a task's output file and its size."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - OUTPUT_TAIL_BYTES))
            data = f.read(OUTPUT_TAIL_BYTES)
    except OSError:
        return "", 0
    text = data.decode("utf-8", errors="replace")
    if size > OUTPUT_TAIL_BYTES:
        text = text.split("\n", 1)[-1]
        text = f"[... the first {size - len(data)} bytes are only in the file ...]\n" + text
    return text.rstrip("\n"), size


def _report(task: BackgroundTask, info: TaskInfo, waited: bool) -> ToolResult:
    text, size = _tail(task.output_file)
    if info.running:
        state = "still running" + (" (the wait timed out)" if waited else "")
    else:
        state = f"{info.status}: {info.summary}"
    empty = "(no output yet)" if info.running else "(no output)"
    body = f"Task {info.task_id} ({info.description}): {state}.\n" \
           f"Output ({size} bytes, file {info.output_file}):\n{text or empty}"
    return ToolResult.text(body, details=info.to_json())


async def task_output(args: OutputArgs, ctx: ToolContext) -> ToolResult:
    registry = registry_for(ctx.session)
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
    return _report(task, info, waited)


async def task_stop(args: str, ctx: ToolContext) -> ToolResult:
    registry = registry_for(ctx.session)
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
    from zpi_host.ports import TaskError

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
    orphans = registry_for(session).orphans
    if not orphans:
        return None
    lines = [f"- {t.task_id} ({t.description or shlex.quote(t.command)}): {t.summary}; output "
             f"in {t.output_file}" for t in orphans]
    return ("Background tasks of this session that were running when it was last used have "
            "ended (the host that ran them stopped):\n" + "\n".join(lines) +
            "\nThis is information only; it does not ask you to run anything again.")
