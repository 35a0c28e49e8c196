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
from ..support.attrs_methods import FieldsEq
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


@attrs.define(repr=False, eq=False, slots=False)
class _Pump(FieldsEq):
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
    # one limit for every tool: the session's (``tools.output_limit_bytes``), so the loop's
    # protection never cuts what this preview kept
    limit = ctx.output_limit if ctx.output_limit is not None else DEFAULT_CAPTURE_LIMIT
    limit = max(limit, 2)
    # the output in the order it arrived (memory only: the text when it all fits), and each
    # stream apart, spilled to its own file once it outgrows the limit
    buffer = HeadTailBuffer(limit)
    streams = (HeadTailBuffer(limit, ctx.spill_dir, name_prefix="zpi-bash-stdout"),
               HeadTailBuffer(limit, ctx.spill_dir, name_prefix="zpi-bash-stderr"))
    started = time.monotonic()
    try:
        process = await anyio.open_process(
            [shell, "-c", args.command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
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
                         streams[0])
            pumps = [pump, _Pump(process.stderr, buffer, ctx, tg.cancel_scope, anyio.Event(),
                                 streams[1])]
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
            for each_buffer in (buffer, *streams):
                each_buffer.discard()
        raise
    with anyio.CancelScope(shield=True):
        await process.aclose()
    process_groups.untrack(pgid)
    captured = buffer.finish()
    stdout, stderr = _stream_outputs(streams, limit, whole=not captured.truncated)
    output = captured.text if not captured.truncated else _previews(stdout, stderr)
    output = output.rstrip("\n")
    exit_code = None if timed_out else process.returncode
    spilled = [c.spill_path for c in (stdout, stderr) if c.spill_path is not None]
    details = {
        "exit_code": exit_code,
        "total_bytes": captured.total_bytes,
        "total_lines": captured.total_lines,
        "full_output_path": str(spilled[0]) if spilled else None,
        "stdout_path": str(stdout.spill_path) if stdout.spill_path else None,
        "stderr_path": str(stderr.spill_path) if stderr.spill_path else None,
        "stdout_bytes": stdout.total_bytes,
        "stderr_bytes": stderr.total_bytes,
        "timed_out": timed_out,
        "stopped_background": stopped_background,
        "duration_ms": int((time.monotonic() - started) * 1000),
    }
    problems = [c.spill_error for c in (stdout, stderr) if c.spill_error is not None]
    if problems:
        details["full_output_error"] = problems[0]
    if ctx.streams_apart:
        details["stdout"], details["stderr"] = (c.text.rstrip("\n") for c in (stdout, stderr))
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


#: bytes of the limit kept for the status line, the streams' labels and the notes
_FRAME = 1024


def _stream_outputs(streams: tuple[HeadTailBuffer, HeadTailBuffer], limit: int, *,
                    whole: bool) -> tuple[Any, Any]:
    """Each stream's capture. ``whole``: everything fit the limit (the text is the merged
    output). Otherwise the two previews share the limit: a stream that fits its share is
    kept whole and leaves the rest to the other; a cut one is in its own spill file."""
    out, err = streams
    if whole:
        return out.finish(), err.finish()
    budget = max(2, limit - min(_FRAME, limit // 2))
    sizes = [out.total_bytes, err.total_bytes]
    shares = [budget, budget] if 0 in sizes else [budget // 2, budget // 2]
    for i in (0, 1):
        if 0 < sizes[i] < shares[i]:  # the small one shown whole: the other gets the rest
            shares[1 - i] = budget - sizes[i]
    return out.finish(shares[0]), err.finish(shares[1])


def _previews(stdout: Any, stderr: Any) -> str:
    """The output that did not fit: each stream's head and tail (its marker naming its own
    file), labelled when both printed something."""
    shown = [(name, c) for name, c in (("stdout", stdout), ("stderr", stderr))
             if c.total_bytes]
    if len(shown) == 1:
        return shown[0][1].text
    return "\n".join(f"[{name}: {c.total_bytes} bytes]\n{c.text.rstrip(chr(10))}"
                     for name, c in shown)


def _join(status: str, output: str) -> str:
    return f"{status}\n{output}" if output else status


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
