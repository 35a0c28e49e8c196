"""The ``bash`` tool: run a shell command in the workspace and report its output.

The command runs in its own process group so that a timeout or an abort can stop everything it
started, not just the shell. Output is read as it arrives into a :class:`HeadTailBuffer`, so
memory stays bounded however much the command prints; the complete output goes to a spill file.

stdout and stderr share one pipe, so the model reads them interleaved exactly as written. When
the call's context asks for the streams apart (``ToolContext.streams_apart``: a hook reads
them, as Claude's ``tool_response.stderr``), each has its own pipe: the model still reads both
in the order they arrive (the order of writes that land within one read of each other may
differ from a shared pipe's), and ``details`` also has ``stdout`` and ``stderr`` (each cut to
its start and end past the capture limit).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from .. import process_groups
from ..redaction import without
from .base import Tool, ToolArgumentError, ToolContext, ToolFailure, ToolMetadata, ToolResult
from .output import DEFAULT_CAPTURE_LIMIT, HeadTailBuffer

NAME = "bash"
DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 600
UPDATE_INTERVAL = 0.2  # seconds between progress updates
UPDATE_BYTES = 4096  # how much recent output a progress update carries
TERM_GRACE = 1.5  # seconds between SIGTERM and SIGKILL
KILL_WAIT = 5.0  # how long to wait for SIGKILLed processes to go
DRAIN_AFTER_EXIT = 2.0  # how long to read output still in the pipe once the command is over
READ_SIZE = 64 * 1024

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


@attrs.frozen
class BashArgs:
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


def _signal(process: Any, pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)
    if process.returncode is None:  # the shell may have left its group
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(sig)


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
    _signal(process, pgid, signal.SIGTERM)
    with anyio.move_on_after(TERM_GRACE):
        await _wait_gone(process, pgid)
        return True
    _signal(process, pgid, signal.SIGKILL)
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


async def run_bash(args: Any, ctx: ToolContext) -> ToolResult:
    """Run one command (``args``: :class:`BashArgs` or the raw argument mapping) and report
    its output, exit status and where the complete output was saved."""
    import anyio

    a = args if isinstance(args, BashArgs) else prepare_bash_args(args)
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
            [shell, "-c", a.command],
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
            with anyio.move_on_after(a.timeout) as deadline:
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
            _join(f"Command timed out after {a.timeout} s", output), details=details
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
