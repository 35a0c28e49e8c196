"""Running the ``bash`` tool's commands (:mod:`.bash` defines the tool and checks its
arguments; this module is imported at the first command): the process group, the pumps that
read its output into a :class:`HeadTailBuffer`, stopping it, the result. It is below
:mod:`.bash`, which imports it: the timings of a run are here, and a command comes in as any
:class:`Command` (the tool's checked ``BashArgs``)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Protocol

import attrs

from ..support import process_groups
from ..support.redaction import without
from .base import DEFAULT_CAPTURE_LIMIT, ToolContext, ToolFailure, ToolResult
from .output import HeadTailBuffer

__all__ = ["command_environment", "find_shell", "run_bash", "stop_process_group"]

UPDATE_INTERVAL = 0.2  # seconds between progress updates
UPDATE_BYTES = 4096  # how much recent output a progress update carries
TERM_GRACE = 1.5  # seconds between SIGTERM and SIGKILL
KILL_WAIT = 5.0  # how long to wait for SIGKILLed processes to go
DRAIN_AFTER_EXIT = 2.0  # how long to read output still in the pipe once the command is over
READ_SIZE = 64 * 1024


class Command(Protocol):
    """A checked bash call (:class:`.bash.BashArgs`): the command line and its timeout in
    seconds."""

    @property
    def command(self) -> str: ...

    @property
    def timeout(self) -> int: ...


def find_shell() -> str:
    """``/bin/bash``, else a ``bash`` on PATH, else ``/bin/sh``."""
    if os.access("/bin/bash", os.X_OK):
        return "/bin/bash"
    return shutil.which("bash") or "/bin/sh"


def command_environment(ctx: ToolContext) -> dict[str, str]:
    """The environment a command gets: the host's without the hidden variables (provider
    keys), plus the session's exported ones."""
    env = without(os.environ, ctx.hidden_env) if ctx.hidden_env else dict(os.environ)
    if ctx.env:
        env.update(ctx.env)
    return env


def _signal(pgid: int, sig: int) -> None:
    """Signal the whole group. The shell is in it: it was started with ``start_new_session``,
    and a session leader cannot leave its group. Signalling the process object as well would
    be worse than useless: ``Popen.send_signal`` first polls, which reaps an exiting child
    under asyncio's child watcher, and the exit status is lost (reported as 255)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


async def _wait_gone(process: Any, pgid: int) -> None:
    import anyio

    await process.wait()
    while process_groups.group_alive(pgid):
        await anyio.sleep(0.02)


async def stop_process_group(process: Any, pgid: int) -> bool:
    """Stop every process of the group: SIGTERM, then SIGKILL after a grace period.
    Returns whether anything was still running. Call it shielded when cancelling."""
    import anyio

    if process.returncode is not None and not process_groups.group_alive(pgid):
        return False
    _signal(pgid, signal.SIGTERM)
    with anyio.move_on_after(TERM_GRACE):
        await _wait_gone(process, pgid)
        return True
    _signal(pgid, signal.SIGKILL)
    with anyio.move_on_after(KILL_WAIT):
        await _wait_gone(process, pgid)
    return True


@attrs.define
class _Pump:
    """Reads output into the buffer until end of file (``read``) and, every
    ``UPDATE_INTERVAL`` seconds while new output arrived, reports its recent part (``tick``).
    A failing update callback stops the run (``scope`` is cancelled); the caller re-raises
    ``error`` once the processes are stopped."""

    stream: Any
    buffer: HeadTailBuffer
    ctx: ToolContext
    scope: Any
    eof: Any
    #: also fed with what this stream alone printed (the streams kept apart)
    copy: HeadTailBuffer | None = None
    error: Exception | None = None
    _reported: int = 0

    async def read(self) -> None:
        import anyio

        try:
            while True:
                try:
                    chunk = await self.stream.receive(READ_SIZE)
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    return
                self.buffer.feed(chunk)
                if self.copy is not None:
                    self.copy.feed(chunk)
        finally:
            self.eof.set()

    async def tick(self) -> None:
        import anyio

        while True:
            await anyio.sleep(UPDATE_INTERVAL)
            if self.buffer.total_bytes == self._reported:
                continue
            self._reported = self.buffer.total_bytes
            try:
                self.ctx.update(self.buffer.recent(UPDATE_BYTES))
            except Exception as exc:
                self.error = exc
                self.scope.cancel()
                return


async def run_bash(args: Command, ctx: ToolContext) -> ToolResult:
    """Run one checked command (:func:`.bash.run_bash` checks the raw arguments) and report
    its output, exit status and where the complete output was saved."""
    import anyio

    cwd = Path(ctx.cwd)
    if not cwd.is_dir():
        raise ToolFailure(
            f"working directory {cwd} does not exist or is not a directory; "
            "the command was not run"
        )
    env = command_environment(ctx)
    shell = find_shell()
    buffer = HeadTailBuffer(DEFAULT_CAPTURE_LIMIT, ctx.spill_dir, name_prefix="zpi-bash")
    # the streams apart, for hooks: in memory only (the spill file has the merged output)
    apart = (HeadTailBuffer(DEFAULT_CAPTURE_LIMIT), HeadTailBuffer(DEFAULT_CAPTURE_LIMIT)) \
        if ctx.streams_apart else None
    started = time.monotonic()
    try:
        process = await anyio.open_process(
            [shell, "-c", args.command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if apart is None else subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolFailure(f"could not start {shell}: {exc}") from exc
    pgid = process.pid  # start_new_session: the shell leads its own group
    process_groups.track(pgid)  # a forced exit kills it even without time to stop it here
    try:
        timed_out = stopped_background = False
        async with anyio.create_task_group() as tg:
            pump = _Pump(process.stdout, buffer, ctx, tg.cancel_scope, anyio.Event(),
                         None if apart is None else apart[0])
            pumps = [pump] if apart is None else [pump, _Pump(
                process.stderr, buffer, ctx, tg.cancel_scope, anyio.Event(), apart[1])]
            for each in pumps:
                tg.start_soon(each.read)
            tg.start_soon(pump.tick)
            with anyio.move_on_after(args.timeout) as deadline:
                await process.wait()
            timed_out = deadline.cancelled_caught
            stopped_background = await stop_process_group(process, pgid) and not timed_out
            with anyio.move_on_after(DRAIN_AFTER_EXIT):
                for each in pumps:
                    await each.eof.wait()
            tg.cancel_scope.cancel()
        if pump.error is not None:
            raise pump.error
    except BaseException:
        with anyio.CancelScope(shield=True):
            await stop_process_group(process, pgid)
            await process.aclose()
            process_groups.untrack(pgid)
            buffer.discard()
        raise
    with anyio.CancelScope(shield=True):
        await process.aclose()
    process_groups.untrack(pgid)
    captured = buffer.finish()
    output = captured.text.rstrip("\n")
    exit_code = None if timed_out else process.returncode
    details = {
        "exit_code": exit_code,
        "total_bytes": captured.total_bytes,
        "total_lines": captured.total_lines,
        "full_output_path": str(captured.spill_path) if captured.spill_path else None,
        "timed_out": timed_out,
        "stopped_background": stopped_background,
        "duration_ms": int((time.monotonic() - started) * 1000),
    }
    if captured.spill_error is not None:
        details["full_output_error"] = captured.spill_error
    if apart is not None:
        details["stdout"], details["stderr"] = (
            b.finish().text.rstrip("\n") for b in apart)
    if stopped_background:
        output += "\n(processes the command left running in the background were stopped)"
    if timed_out:
        return ToolResult.error(
            _join(f"Command timed out after {args.timeout} s", output), details=details
        )
    if exit_code != 0:
        status = f"Exit code {exit_code}"
        if exit_code is not None and exit_code < 0:
            status += f" (killed by {_signal_name(-exit_code)})"
        return ToolResult.error(_join(status, output), details=details)
    return ToolResult.text(output or "(no output)", details=details)


def _join(status: str, output: str) -> str:
    return f"{status}\n{output}" if output else status


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
