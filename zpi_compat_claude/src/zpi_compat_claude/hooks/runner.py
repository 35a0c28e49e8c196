"""Running one command handler: a shell in its own process group, the event's JSON on stdin.

The handler's timeout is enforced here (the kernel's per-implementation budget only cancels the
whole dispatch): when it runs out, every process the command started is stopped, not just the
shell, and the outcome says it timed out. Output is captured up to a cap per stream so that a
chatty hook cannot exhaust memory. anyio is imported only when a command actually runs.

The child is driven through asyncio's subprocess protocol (sessions run on anyio's asyncio
backend): one protocol object takes stdout and stderr as the loop delivers them and the loop
itself writes stdin, so a handler costs no task per stream and no stream wrappers, which for a
small hook cost the host more than the spawn.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from zpi_host.support.attrs_methods import FrozenFieldsEq

from .config import DEFAULT_TIMEOUT_S

__all__ = ["DEFAULT_TIMEOUT_S", "BackgroundCommand", "CommandOutcome", "async_answer",
           "parse_env_file", "run_command", "shell_argv"]

#: bytes kept of each of stdout and stderr; the rest is counted and dropped
OUTPUT_CAP = 1024 * 1024
#: seconds to read output still in the pipes once the shell has exited (background children)
DRAIN_AFTER_EXIT = 1.0


@attrs.frozen(repr=False, eq=False, slots=False)
class CommandOutcome(FrozenFieldsEq):
    """How one handler ended. ``exit_code`` is None when it timed out or could not start."""

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str | None = None
    dropped_bytes: int = 0
    #: the handler answered ``{"async": true}`` first and goes on in the background
    background: BackgroundCommand | None = None

    def describe(self) -> str:
        """A short account of a failure for diagnostics."""
        if self.error is not None:
            return self.error
        if self.timed_out:
            return "timed out; its processes were stopped"
        detail = self.stderr.strip() or self.stdout.strip()
        first = detail.splitlines()[0] if detail else ""
        status = f"exited {self.exit_code}"
        if self.exit_code is not None and self.exit_code < 0:
            status = f"was killed by signal {-self.exit_code}"
        return f"{status}: {first[:500]}" if first else status


def shell_argv(shell: str, command: str) -> list[str]:
    """``bash -c COMMAND`` (bash from /bin, else PATH, else sh) or ``sh -c COMMAND``."""
    if shell == "sh":
        return ["/bin/sh" if os.access("/bin/sh", os.X_OK) else "sh", "-c", command]
    if os.access("/bin/bash", os.X_OK):
        return ["/bin/bash", "-c", command]
    return [shutil.which("bash") or "/bin/sh", "-c", command]


#: Characters of a command that needs no shell: words, paths, options and plain quotes. Any
#: expansion, glob, redirection, pipe, list, subshell or escape sends it through the shell.
_PLAIN_COMMAND = re.compile(r"[A-Za-z0-9_\-./:=,+@% \t'\"]+")
#: First words the shell itself would handle (builtins, keywords); ``true``/``false`` behave the
#: same as the programs of that name.
_SHELL_WORDS = frozenset({
    "alias", "bg", "bind", "break", "builtin", "caller", "case", "cd", "command", "compgen",
    "complete", "compopt", "continue", "coproc", "declare", "dirs", "disown", "do", "done",
    "echo", "elif", "else", "enable", "esac", "eval", "exec", "exit", "export", "fc", "fg", "fi",
    "for", "function", "getopts", "hash", "help", "history", "if", "in", "jobs", "kill", "let",
    "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read", "readarray",
    "readonly", "return", "select", "set", "shift", "shopt", "source", "suspend", "test", "then",
    "time", "times", "trap", "type", "typeset", "ulimit", "umask", "unalias", "unset", "until",
    "wait", "while", "[", "[[", "]]", "!", ".", ":",
})


def direct_argv(command: str, env: Mapping[str, str], cwd: Path) -> list[str] | None:
    """The program and arguments of ``command`` when running it through a shell would do
    nothing but split the words and find the program on PATH (``python3 /p/hook.py``,
    ``true``); None when the shell is needed. Running such a command directly saves a shell
    start per handler without changing what runs. Like a shell's command hash, the lookup is
    remembered (if the program goes away, starting it fails and the shell runs the command)."""
    found = _direct(command, env.get("PATH", os.defpath), str(cwd))
    return None if found is None else list(found)


@functools.lru_cache(maxsize=256)
def _direct(command: str, path: str, cwd: str) -> tuple[str, ...] | None:
    if not _PLAIN_COMMAND.fullmatch(command):
        return None
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or words[0] in _SHELL_WORDS or "=" in words[0]:
        return None
    if "/" in words[0]:
        program = os.path.join(cwd, words[0])
        return tuple(words) if os.path.isfile(program) and os.access(program, os.X_OK) else None
    found = shutil.which(words[0], path=path)
    return None if found is None else (found, *words[1:])


class _Capture:
    """One sink for the whole child: stdout and stderr kept up to ``OUTPUT_CAP`` bytes each
    (the rest counted and dropped), the exit and the ends of both output pipes noted. The event
    loop calls it as data arrives, so no task per stream is needed."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.chunks: dict[int, list[bytes]] = {1: [], 2: []}
        self.kept = {1: 0, 2: 0}
        self.dropped = 0
        self.open_pipes = {1, 2}
        self.exited = loop.create_future()
        self.closed = loop.create_future()  # stdout and stderr closed and the process exited
        #: stdout's first line (its bytes without the newline), or None when stdout closed
        #: without one
        self.first_line: asyncio.Future[bytes | None] = loop.create_future()

    def data(self, fd: int, data: bytes) -> None:
        room = OUTPUT_CAP - self.kept[fd]
        if room > 0:
            self.chunks[fd].append(data[:room])
            self.kept[fd] += min(room, len(data))
        self.dropped += max(0, len(data) - max(room, 0))
        if fd == 1 and not self.first_line.done() and b"\n" in data:
            self.first_line.set_result(b"".join(self.chunks[1]).split(b"\n", 1)[0])

    def pipe_closed(self, fd: int) -> None:
        self.open_pipes.discard(fd)
        if fd == 1 and not self.first_line.done():
            self.first_line.set_result(None)
        self._maybe_closed()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)
        self._maybe_closed()

    def _maybe_closed(self) -> None:
        if not self.open_pipes and self.exited.done() and not self.closed.done():
            self.closed.set_result(None)

    def text(self, fd: int) -> str:
        return b"".join(self.chunks[fd]).decode("utf-8", errors="replace")


class _Pipe(asyncio.Protocol):
    """One of the child's pipes, as the event loop reports it to :class:`_Capture`."""

    def __init__(self, capture: _Capture, fd: int) -> None:
        self.capture = capture
        self.fd = fd

    def data_received(self, data: bytes) -> None:
        self.capture.data(self.fd, data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.fd in (1, 2):
            self.capture.pipe_closed(self.fd)


def _pidfd_works() -> bool:
    """Whether the kernel hands out process file descriptors (Linux 5.3 and later)."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


#: exits are watched through a pidfd on the event loop when the kernel has them; otherwise
#: asyncio's subprocess transport watches them (by default a thread per child)
_PIDFD: list[bool] = []


class _Child:
    """The running command, as :func:`run_command` and
    :func:`~zpi_host.tools.bash.stop_process_group` use it. Its exit is watched with a pidfd
    registered on the event loop and reaped right there, which saves the thread (or signal
    handler) asyncio's child watcher would start for each command."""

    def __init__(self, loop: asyncio.AbstractEventLoop, process: subprocess.Popen[bytes],
                 capture: _Capture) -> None:
        self.loop = loop
        self.process = process
        self.pid = process.pid
        self.capture = capture
        self.returncode: int | None = None
        self.transports: list[asyncio.BaseTransport] = []
        self._pidfd = os.pidfd_open(self.pid)
        loop.add_reader(self._pidfd, self._reap)

    def _reap(self) -> None:
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere: the status is lost (as asyncio does)
            pid, status = self.pid, 255 << 8
        if pid == 0:  # not yet (spurious wake-up)
            return
        self.loop.remove_reader(self._pidfd)
        os.close(self._pidfd)
        self.returncode = os.waitstatus_to_exitcode(status)
        self.process.returncode = self.returncode  # the Popen object must not wait for it
        self.capture.process_exited()

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:  # not reaped: the pid is still this child's
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    async def wait(self) -> int | None:
        await asyncio.shield(self.capture.exited)
        return self.returncode

    def close(self) -> None:
        """Close the pipes; a child still running is killed (it is reaped when it dies)."""
        for transport in self.transports:
            transport.close()
        self.send_signal(signal.SIGKILL)


class _AsyncioChild:
    """The same, where there are no pidfds: asyncio's subprocess transport runs the child."""

    def __init__(self, transport: asyncio.SubprocessTransport, capture: _Capture) -> None:
        self.transport = transport
        self.capture = capture
        self.pid = transport.get_pid()

    @property
    def returncode(self) -> int | None:
        return self.transport.get_returncode()

    async def wait(self) -> int | None:
        await asyncio.shield(self.capture.exited)
        return self.returncode

    def close(self) -> None:
        self.transport.close()


class _SubprocessSink(asyncio.SubprocessProtocol):
    """asyncio's subprocess protocol feeding a :class:`_Capture`."""

    def __init__(self, capture: _Capture) -> None:
        self.capture = capture

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.capture.data(fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd in (1, 2):
            self.capture.pipe_closed(fd)

    def process_exited(self) -> None:
        self.capture.process_exited()


class _Unwatched(Exception):
    """The command started but its exit could not be watched; it was stopped."""


def _write_stdin(pipe: asyncio.BaseTransport | None, stdin: bytes) -> None:
    """Hand ``stdin`` to the event loop to write (what the pipe takes at once, the rest as
    the child reads) and close it after; a hook that never reads it is not an error."""
    if isinstance(pipe, asyncio.WriteTransport):
        with contextlib.suppress(OSError):
            if stdin:
                pipe.write(stdin)
            pipe.close()  # after the buffered data is written; a broken pipe only drops it


async def _start(argv: list[str], cwd: Path, env: dict[str, str],
                 stdin: bytes) -> _Child | _AsyncioChild:
    """Start ``argv`` in its own session with three pipes, ``stdin`` being written."""
    loop = asyncio.get_running_loop()
    capture = _Capture(loop)
    if not _PIDFD:
        _PIDFD.append(_pidfd_works())
    if not _PIDFD[0]:
        sub, _ = await loop.subprocess_exec(
            lambda: _SubprocessSink(capture), *argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        _write_stdin(sub.get_pipe_transport(0), stdin)
        return _AsyncioChild(sub, capture)
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        child = _Child(loop, process, capture)
    except OSError as exc:  # no pidfd for it (out of descriptors): stop it, never run it twice
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()  # reaps it; the kill makes this immediate
        raise _Unwatched(f"could not watch {argv[0]} after starting it: {exc}") from exc
    assert process.stdin and process.stdout and process.stderr
    try:
        for fd, pipe in ((1, process.stdout), (2, process.stderr)):
            reader, _ = await loop.connect_read_pipe(functools.partial(_Pipe, capture, fd), pipe)
            child.transports.append(reader)
        writer, _ = await loop.connect_write_pipe(functools.partial(_Pipe, capture, 0),
                                                  process.stdin)
        child.transports.append(writer)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.close()
        for pipe in (process.stdin, process.stdout, process.stderr):
            pipe.close()
        raise
    _write_stdin(writer, stdin)
    return child


async def run_command(
    command: str,
    *,
    shell: str,
    stdin: bytes,
    env: Mapping[str, str],
    cwd: Path,
    timeout_s: float,
    program: Sequence[str] | None = None,
    detect_async: bool = False,
) -> CommandOutcome:
    """Run ``command`` with ``shell -c`` (directly when it needs no shell, see
    :func:`direct_argv`), ``stdin`` on its standard input, in ``cwd``. ``program`` given: run
    exactly that argv, no shell (a ZCode ``process`` handler).

    Never raises for the command's own failures (they are in the outcome); cancellation from
    outside stops the process group and propagates. ``detect_async``: a first line of stdout
    that is Claude Code's async answer (:func:`async_answer`) ends the wait at once; the
    outcome's ``background`` then holds the command, still running.
    """
    environment = dict(env)
    environment["PWD"] = str(cwd)  # as the shell would set it
    direct = list(program) if program else direct_argv(command, environment, cwd)
    argv = direct or shell_argv(shell, command)
    try:
        child = await _start(argv, cwd, environment, stdin)
    except _Unwatched as exc:
        return CommandOutcome(None, error=str(exc))
    except OSError as exc:
        if direct is None or program:
            return CommandOutcome(None, error=f"could not start {argv[0]} in {cwd}: {exc}")
        argv = shell_argv(shell, command)  # e.g. a script without #!: the shell runs it
        try:
            child = await _start(argv, cwd, environment, stdin)
        except (OSError, _Unwatched) as exc2:
            return CommandOutcome(None, error=f"could not start {argv[0]} in {cwd}: {exc2}")
    pgid = child.pid  # start_new_session: the shell leads its own process group
    if detect_async:
        started = time.monotonic()
        answer = await _first_answer(child, pgid, timeout_s)
        if answer is not None:
            limit = answer.get("asyncTimeout")
            async_timeout = (limit / 1000 if isinstance(limit, int | float) and not
                             isinstance(limit, bool) and limit > 0 else timeout_s)
            return CommandOutcome(0, background=BackgroundCommand(child, pgid, async_timeout))
        timeout_s = max(0.0, timeout_s - (time.monotonic() - started))
    return await _settle(child, pgid, timeout_s)


def async_answer(line: bytes | None) -> dict[str, Any] | None:
    """``line`` (a handler's first line of stdout) when it is Claude Code's async answer,
    ``{"async": true, "asyncTimeout": ms}``, decoded; else None."""
    if not line or not line.strip().startswith(b"{"):
        return None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and data.get("async") is True else None


async def _first_answer(child: Any, pgid: int, timeout_s: float) -> dict[str, Any] | None:
    """Wait for the child's first line of stdout or its exit, whichever comes first; the
    async answer when that line is one (the child goes on), else None (wait as usual)."""
    import anyio

    from zpi_host.tools.bash import stop_process_group

    capture = child.capture
    try:
        with anyio.move_on_after(timeout_s):
            await asyncio.wait([capture.exited, capture.first_line],
                               return_when=asyncio.FIRST_COMPLETED)
            if capture.exited.done() and not capture.first_line.done():
                # the exit can be seen before the pipe's last bytes are read
                with anyio.move_on_after(DRAIN_AFTER_EXIT):
                    await asyncio.wait([capture.closed, capture.first_line],
                                       return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await stop_process_group(child, pgid)
            child.close()
        raise
    if not capture.first_line.done():  # ended (or timed out) before a whole first line
        return None
    # the first line decides, even when the child has already ended (a quick or a late-read
    # handler): its async answer still means "what follows is my real answer"
    return async_answer(capture.first_line.result())


async def _settle(child: Any, pgid: int, timeout_s: float, *, skip_first_line: bool = False
                  ) -> CommandOutcome:
    """Wait for the child's end within ``timeout_s`` (then its process group is stopped) and
    say how it ended; cancellation stops the group too and propagates."""
    import anyio

    from zpi_host.tools.bash import stop_process_group

    capture = child.capture
    timed_out = False
    try:
        with anyio.move_on_after(timeout_s) as deadline:
            await asyncio.shield(capture.exited)
        timed_out = deadline.cancelled_caught
        if timed_out:
            await stop_process_group(child, pgid)
        if not capture.closed.done():  # background children may still hold the pipes
            with anyio.move_on_after(DRAIN_AFTER_EXIT):
                await asyncio.shield(capture.closed)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await stop_process_group(child, pgid)
            child.close()
        raise
    child.close()
    stdout = capture.text(1)
    if skip_first_line:
        stdout = stdout.split("\n", 1)[1] if "\n" in stdout else ""
    return CommandOutcome(
        None if timed_out else child.returncode, stdout, capture.text(2), timed_out,
        dropped_bytes=capture.dropped,
    )


class BackgroundCommand:
    """A handler that answered ``{"async": true}``: still running, its process group owned
    here. :meth:`finish` waits for its end (stopping it after ``timeout_s``) and returns the
    outcome with the first line left out: what it printed after is its real answer."""

    def __init__(self, child: Any, pgid: int, timeout_s: float) -> None:
        self._child, self._pgid, self.timeout_s = child, pgid, timeout_s

    async def finish(self) -> CommandOutcome:
        return await _settle(self._child, self._pgid, self.timeout_s, skip_first_line=True)


_ASSIGNMENT = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def parse_env_file(text: str, environ: Mapping[str, str]) -> tuple[list[tuple[str, str]],
                                                                   list[str]]:
    """The assignments a SessionStart hook wrote to ``CLAUDE_ENV_FILE``.

    Lines are ``export NAME=value`` or ``NAME=value``; a value in single quotes is literal,
    otherwise ``$NAME`` and ``${NAME}`` are expanded from ``environ`` and the assignments
    before it (so ``export PATH="$PATH:/opt/x/bin"`` works). Blank lines and ``#`` comments
    are skipped; anything else is reported and skipped (the file is parsed, not run).
    """
    known = dict(environ)
    found: list[tuple[str, str]] = []
    problems: list[str] = []

    def expand(value: str) -> str:
        return _VARIABLE.sub(lambda m: known.get(m.group(1) or m.group(2), ""), value)

    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _ASSIGNMENT.match(stripped)
        if match is None:
            problems.append(f"CLAUDE_ENV_FILE line {number}: {stripped[:100]!r} is not "
                            "'export NAME=value'; skipped")
            continue
        name, raw = match.group(1), match.group(2).strip()
        if len(raw) >= 2 and raw[0] == raw[-1] == "'":
            value = raw[1:-1]
        elif len(raw) >= 2 and raw[0] == raw[-1] == '"':
            value = expand(raw[1:-1].replace('\\"', '"'))
        else:
            value = expand(raw.split(" #", 1)[0].strip())
        if "\0" in value:
            problems.append(f"CLAUDE_ENV_FILE line {number}: the value of {name} holds a NUL "
                            "character; skipped")
            continue
        known[name] = value
        found.append((name, value))
    return found, problems
