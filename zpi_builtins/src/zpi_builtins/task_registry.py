"""The task registry of ``builtins:tasks``: the background commands of one session.

One :class:`TaskRegistry` per session, made by the service runtime on first use and attached
to the host's task port (``SessionView.ports.tasks``). It starts each command in its own
process group, copies its output through a pipe into ``task-<id>.log`` of the session's
private spill folder (at most ``max_output_bytes``; at the limit the output is cut and the
command stopped), watches it (progress while the output grows), records its start and end as
``custom`` records of namespace ``zpi.task``, publishes the task events, tells the model when
a task ended (unless it saw the end itself), stops tasks on request and every task still
running when the session ends. A resumed session's recorded tasks are loaded as ended; those
without an end record are recorded as ended now. A record is data: its ``output_file`` is
never opened; the file is named by the task id inside the spill folder (:func:`output_name`)
and read with the no-follow, regular-only rule (:meth:`TaskRegistry.read_output`).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from zpi_host.errors import ZpiError
from zpi_host.session.ports import TaskInfo
from zpi_host.support.attrs_methods import FieldsRepr, FrozenFieldsEq
from zpi_host.tools import ToolContext, ToolFailure

from .runtime import BuiltinPluginRuntime, logger, runtime_for
from .settings import service_settings
from .task_constants import DEFAULT_WAIT_MS, SERVICE

__all__ = ["NAMESPACE", "SERVICE", "SOURCE", "BackgroundArgs", "BackgroundTask", "OutputArgs",
           "TaskRegistry", "ended_context", "output_name", "registry_for"]


SOURCE = "builtins:tasks"
NAMESPACE = "zpi.task"
#: a task id as :meth:`TaskRegistry.start` makes them; a record with another is skipped
TASK_ID = re.compile(r"b[0-9a-f]{8}")
#: the output file name of sessions recorded before `task-<id>.log` (a random suffix)
_OLD_OUTPUT_NAME = r"task-{}-[0-9a-f]{{12}}\.log"


#: how long the output still in the pipe is copied once the command's group is gone
OUTPUT_DRAIN_SECONDS = 2.0


def output_name(task_id: str) -> str:
    """The name of a task's output file in the session's spill folder."""
    return f"task-{task_id}.log"


def cut_notice(limit: int) -> bytes:
    """What ends the output of a task that reached ``max_output_bytes``."""
    return (f"\n[output cut at {limit} bytes (setting plugins.builtins.tasks.max_output_bytes);"
            " the command was stopped: redirect its output to a file to keep more]\n").encode()


@attrs.frozen(repr=False, eq=False, slots=False)
class BackgroundArgs(FrozenFieldsEq):
    """Validated arguments of a ``bash`` call with ``run_in_background`` (tasks.py)."""

    command: str
    description: str


@attrs.frozen(repr=False, eq=False, slots=False)
class OutputArgs(FrozenFieldsEq):
    """Validated ``task_output`` arguments (tasks.prepare_output)."""

    task_id: str
    block: bool = True
    timeout_ms: int = DEFAULT_WAIT_MS


@attrs.define(eq=False, repr=False, slots=False)
class BackgroundTask(FieldsRepr):
    """One background command of the session (mutable; :meth:`info` is the snapshot)."""

    task_id: str
    command: str
    description: str
    #: ``<spill folder>/task-<id>.log``; None when the session has no spill folder (a task
    #: loaded from records without one). Never a recorded path.
    output_file: Path | None
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
    #: bytes copied into the output file (a task started by this process)
    written: int = 0
    #: the output reached ``max_output_bytes`` and was cut
    cut: bool = False

    def output_bytes(self) -> int:
        if self.process is not None:
            return self.written
        if self.output_file is None:
            return 0
        try:  # a recorded task: the file's size, without following a link
            info = os.lstat(self.output_file)
        except OSError:
            return 0
        import stat

        return info.st_size if stat.S_ISREG(info.st_mode) else 0


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
        self.max_output = int(settings["max_output_bytes"])
        self.spill_dir: Path | None = runtime.session.spill_dir
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
            output_file=str(task.output_file or ""), pid=task.pgid, pgid=task.pgid,
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

        from zpi_host.fs.spill import SpillFolderError
        from zpi_host.support import process_groups
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
        try:
            task_id, path, out = self._create_output(ctx.spill_dir)
        except (SpillFolderError, OSError) as exc:
            raise ToolFailure(f"cannot create the output file of the background command: "
                              f"{exc}") from exc
        shell = find_shell()
        # the intent first: a host killed while the process starts leaves a start record
        # (its group is recorded once known), never a process the transcript does not name
        intent = {"task_id": task_id, "command": command, "description": description,
                  "tool_use_id": ctx.call_id or None, "output_file": str(path)}
        self._append({"event": "start", **intent})
        try:
            process = await anyio.open_process(
                [shell, "-c", command], cwd=cwd, env=command_environment(ctx),
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True)
        except OSError as exc:
            out.close()
            with contextlib.suppress(OSError):
                path.unlink()
            self._append({"event": "end", **intent, "status": "failed", "exit_code": None,
                          "reason": f"could not start {shell}: {exc}"})
            raise ToolFailure(f"could not start {shell}: {exc}") from exc
        pgid = process.pid  # start_new_session: the shell leads its own group
        process_groups.track(pgid)  # a forced exit kills it even without time to stop it
        self.ports.tasks.claim(task_id)
        task = BackgroundTask(task_id, command, description, path, ctx.call_id or None,
                              process, pgid, done=self._asyncio.Event())
        self._tasks[task_id] = task
        self._record("spawned", task, pid=pgid, pgid=pgid, output_file=str(path))
        from zpi_host.agent.events import TaskStarted

        await self.ports.tasks.publish(TaskStarted(self.info(task)))
        task.watcher = self._asyncio.get_running_loop().create_task(self._watch(task, out))
        return self.info(task)

    @staticmethod
    def _create_output(spill_dir: Path) -> tuple[str, Path, Any]:
        """A new task id and its output file ``task-<id>.log``, made in the spill folder."""
        from zpi_host.fs.spill import SpillFolderError, create_spill_file

        for _ in range(100):
            task_id = "b" + os.urandom(4).hex()
            try:
                path, out = create_spill_file(spill_dir, "task", name=output_name(task_id))
            except FileExistsError:
                continue
            return task_id, path, out
        raise SpillFolderError(f"could not find a free task id in {spill_dir}")

    def read_output(self, task: BackgroundTask, tail: int) -> tuple[bytes, int]:
        """The last ``tail`` bytes of ``task``'s output file and its size ((b"", 0) when there
        is none). Opened in the spill folder by name, no-follow, non-blocking and regular
        only: a file replaced by a symlink, a FIFO or anything else is a ToolFailure."""
        from zpi_host.fs.spill import open_spill_file

        if task.output_file is None:
            return b"", 0
        try:
            fd, info = open_spill_file(task.output_file.parent, task.output_file.name)
        except FileNotFoundError:
            return b"", 0
        except (ZpiError, OSError) as exc:  # a symlink, a FIFO, a folder gone bad
            raise ToolFailure(f"the output of task {task.task_id} cannot be read: {exc} (the "
                              "file was replaced; the host only reads the regular file it "
                              "wrote)") from None
        try:
            size = info.st_size
            return os.pread(fd, min(tail, size), max(0, size - tail)), size
        finally:
            os.close(fd)

    # -- watching and stopping ------------------------------------------------------------

    async def _watch(self, task: BackgroundTask, out: Any) -> None:
        """Copy the command's output into its file while waiting for it to end (reporting
        progress while the output grows), stop what it left in its group, then record and
        announce the end."""
        import anyio

        from zpi_host.agent.events import TaskProgress
        from zpi_host.tools.bash import stop_process_group

        assert task.pgid is not None  # a started task
        reported = 0
        try:
            copied = anyio.Event()
            async with anyio.create_task_group() as group:
                group.start_soon(self._copy_output, task, out, group, copied)
                while True:
                    with anyio.move_on_after(self.progress_seconds):
                        await task.process.wait()
                        break
                    size = task.output_bytes()
                    if size != reported:
                        reported = size
                        await self._publish(TaskProgress(self.info(task)))
                # what the shell left in its group holds the pipe open: stopped, so the
                # copy meets the end of the output (bounded: a process that left the group
                # may hold it open for ever)
                await stop_process_group(task.process, task.pgid)
                with anyio.move_on_after(OUTPUT_DRAIN_SECONDS):
                    await copied.wait()
                group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await stop_process_group(task.process, task.pgid)
                    await task.process.aclose()
                finally:
                    out.close()
                    await self._finish(task)

    async def _copy_output(self, task: BackgroundTask, out: Any, group: Any,
                           copied: Any) -> None:
        """The command's output into its file, up to ``max_output_bytes``; at the limit the
        output is cut (a notice says so), the command stopped and the rest read and
        dropped, so the command never blocks on a full pipe. A file that cannot be written
        (a full disk) stops the command the same way."""
        assert task.process.stdout is not None
        try:
            async for chunk in task.process.stdout:
                if task.cut:
                    continue
                room = self.max_output - task.written
                try:
                    out.write(chunk[:room])
                    task.written += min(room, len(chunk))
                    if len(chunk) > room:
                        out.write(cut_notice(self.max_output))
                        self._cut(task, group, f"its output reached the limit of "
                                               f"{self.max_output} bytes")
                    out.flush()
                except OSError as exc:
                    self._cut(task, group, f"its output file could not be written: {exc}")
        finally:
            copied.set()

    @staticmethod
    def _cut(task: BackgroundTask, group: Any, reason: str) -> None:
        """No more output is written: the command is stopped, for ``reason``."""
        from zpi_host.tools.bash import stop_process_group

        task.cut = True
        if task.stop_reason is None:
            task.stop_reason = reason
        group.start_soon(stop_process_group, task.process, task.pgid)

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
        from zpi_host.agent.events import TaskNotification
        from zpi_host.support import process_groups

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
            logger().info("zpi-builtins: a task event could not be delivered: %s: %s",
                     type(exc).__name__, exc)

    # -- the transcript -------------------------------------------------------------------

    def _record(self, event: str, task: BackgroundTask, **fields: Any) -> None:
        self._append({"event": event, "task_id": task.task_id, "command": task.command,
                      "description": task.description, "tool_use_id": task.tool_use_id,
                      **fields})

    def _append(self, data: Mapping[str, Any]) -> None:
        try:
            self.ports.storage.append_custom(NAMESPACE, dict(data))
        except Exception as exc:  # a closed or failing transcript: the task still ends
            logger().info("zpi-builtins: task %s record not written: %s", data.get("task_id"),
                          exc)

    def _load_recorded(self) -> list[TaskInfo]:
        """The tasks earlier runs of this (resumed) session recorded, as ended tasks; those
        without an end record are recorded as ended now and returned (the caller tells the
        model). A process of another host process is never ours to wait for or stop."""
        from zpi_host.support.process_groups import group_alive

        starts: dict[str, Mapping[str, Any]] = {}
        ends: dict[str, Mapping[str, Any]] = {}
        for data in self.ports.storage.custom(NAMESPACE):
            if not isinstance(data, Mapping) or not isinstance(data.get("task_id"), str) or \
                    not TASK_ID.fullmatch(data["task_id"]):
                continue
            task_id, event = data["task_id"], data.get("event")
            if event == "start":
                starts[task_id] = data
            elif event == "spawned":  # the process group, known once it started
                starts[task_id] = {**starts.get(task_id, {}), **data}
            else:
                ends[task_id] = data
        orphans = []
        for task_id, start in starts.items():
            task = BackgroundTask(task_id, str(start.get("command", "")),
                                  str(start.get("description", "")),
                                  self._recorded_output(task_id, start.get("output_file")),
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

    def _recorded_output(self, task_id: str, recorded: Any) -> Path | None:
        """Where a recorded task's output is: ``task-<id>.log`` in this session's spill
        folder (or the older name the record gives, if it is one), never the record's
        folder."""
        if self.spill_dir is None:
            return None
        name = Path(recorded).name if isinstance(recorded, str) else ""
        if not re.fullmatch(_OLD_OUTPUT_NAME.format(task_id), name):
            name = output_name(task_id)
        return self.spill_dir / name


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
