"""Running one command handler: stdin, environment, shells, exit codes, output caps, timeouts
(the whole process group is stopped), and the CLAUDE_ENV_FILE parser."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from helpers.claude_hooks import process_running

from zpi_compat_claude.hooks import runner
from zpi_compat_claude.hooks.runner import parse_env_file, run_command, shell_argv

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True, params=["pidfd", "asyncio"])
def exit_watch(request, monkeypatch):
    """Every test runs both ways a child's exit is watched: a pidfd on the event loop (Linux
    5.3 and later) and asyncio's subprocess transport (elsewhere)."""
    if request.param == "pidfd" and not runner._pidfd_works():
        pytest.skip("this kernel has no pidfd_open")
    monkeypatch.setattr(runner, "_PIDFD", [request.param == "pidfd"])
    return request.param


async def sh(command: str, tmp_path: Path, *, shell: str = "bash", stdin: bytes = b"{}",
             env: dict | None = None, timeout_s: float = 30):
    return await run_command(command, shell=shell, stdin=stdin,
                             env={**os.environ, **(env or {})}, cwd=tmp_path,
                             timeout_s=timeout_s)


async def test_stdin_stdout_stderr_and_exit_code(tmp_path):
    out = await sh('read -r line; echo "got $line"; echo oops >&2; exit 3', tmp_path,
                   stdin=b'{"a": 1}')
    assert (out.exit_code, out.stdout, out.stderr) == (3, 'got {"a": 1}\n', "oops\n")
    assert not out.timed_out and out.error is None


async def test_runs_in_the_given_directory_with_the_given_environment(tmp_path):
    out = await sh('echo "$PWD $ZPI_TEST_VAR"', tmp_path, env={"ZPI_TEST_VAR": "v"})
    assert out.stdout.strip() == f"{tmp_path} v"


async def test_a_hook_that_ignores_a_large_stdin_is_fine(tmp_path):
    out = await sh("exit 0", tmp_path, stdin=b"x" * (1024 * 1024))
    assert out.exit_code == 0


async def test_sh_and_bash(tmp_path):
    assert shell_argv("sh", "x")[1:] == ["-c", "x"] and shell_argv("sh", "x")[0].endswith("sh")
    assert shell_argv("bash", "x")[0].endswith("bash")
    out = await sh('[ -n "$BASH_VERSION" ] && echo bash || echo posix', tmp_path, shell="sh")
    assert out.stdout.strip() in ("posix", "bash")  # /bin/sh may be bash in POSIX mode
    out = await sh('[ -n "$BASH_VERSION" ] && echo bash', tmp_path)
    assert out.stdout.strip() == "bash"


async def test_a_missing_directory_is_an_error_not_an_exception(tmp_path):
    out = await run_command("true", shell="bash", stdin=b"", env=dict(os.environ),
                            cwd=tmp_path / "missing", timeout_s=5)
    assert out.exit_code is None and out.error and "could not start" in out.error


async def test_output_is_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "OUTPUT_CAP", 1000)
    out = await sh("head -c 5000 /dev/zero | tr '\\0' a", tmp_path)
    assert out.exit_code == 0 and len(out.stdout) == 1000 and out.dropped_bytes == 4000


async def test_a_timed_out_command_and_everything_it_started_is_stopped(tmp_path):
    marker = tmp_path / "late"
    pids = tmp_path / "pids"
    out = await sh(f'(sleep 3; touch "{marker}") & echo "$$ $!" > "{pids}"; sleep 4; '
                   f'touch "{marker}"', tmp_path, timeout_s=0.5)
    assert out.timed_out and out.exit_code is None
    for pid in map(int, pids.read_text().split()):
        assert not process_running(pid)
    assert not marker.exists()


async def test_background_children_do_not_hold_up_the_result(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "DRAIN_AFTER_EXIT", 0.2)
    out = await sh("(sleep 2) & echo done", tmp_path)  # the child keeps stdout open
    assert out.exit_code == 0 and out.stdout == "done\n"


async def test_python_hooks_read_the_event(tmp_path):
    script = tmp_path / "hook.py"
    script.write_text("import json, sys\nprint(json.load(sys.stdin)['x'] * 2)\n")
    out = await sh(f"{sys.executable} {script}", tmp_path, stdin=json.dumps({"x": 21}).encode())
    assert out.stdout.strip() == "42"


def test_env_file_assignments():
    text = """
# a comment
export A=1
B='literal $A'
export C="$A and ${B}"
export PATH="$PATH:/opt/x/bin"
D=plain value # trailing comment
not an assignment
export E=
"""
    found, problems = parse_env_file(text, {"PATH": "/usr/bin"})
    assert found == [("A", "1"), ("B", "literal $A"), ("C", "1 and literal $A"),
                     ("PATH", "/usr/bin:/opt/x/bin"), ("D", "plain value"), ("E", "")]
    assert len(problems) == 1 and "line 8" in problems[0] and "not an assignment" in problems[0]


@pytest.mark.parametrize(("command", "direct"), [
    ("true", True),
    ('python3 "/plugins/x/hooks/guard.py" --fast', True),
    ("echo hi", False),  # a builtin
    ("cd /tmp", False),
    ("FOO=1 true", False),  # an assignment
    ("true $HOME", False),
    ("true > out", False),
    ("true | cat", False),
    ("true; true", False),
    ("true *.py", False),
    ("true 'a\\b'", False),
    ("no-such-program-zpi", False),
    ("'unbalanced", False),
])
def test_commands_that_need_no_shell_run_directly(command, direct, tmp_path):
    argv = runner.direct_argv(command, os.environ, tmp_path)
    assert (argv is not None) is direct, argv
    if argv is not None:
        assert os.path.isabs(argv[0])


async def test_a_direct_program_the_kernel_cannot_exec_falls_back_to_the_shell(tmp_path):
    script = tmp_path / "noshebang"
    script.write_text("echo from the shell\n")
    script.chmod(0o755)
    assert runner.direct_argv("./noshebang", os.environ, tmp_path) == ["./noshebang"]
    out = await sh("./noshebang", tmp_path)
    assert (out.exit_code, out.stdout) == (0, "from the shell\n")


async def test_direct_commands_see_the_working_directory_as_pwd(tmp_path):
    script = tmp_path / "pwd.py"
    script.write_text(f"#!{sys.executable}\nimport os\nprint(os.environ['PWD'])\n")
    script.chmod(0o755)
    assert runner.direct_argv("./pwd.py", os.environ, tmp_path) is not None
    out = await sh("./pwd.py", tmp_path, env={"PWD": "/somewhere/else"})
    assert out.stdout.strip() == str(tmp_path)


async def test_a_large_stdin_is_written_whole_while_both_streams_are_read(tmp_path):
    # more than any pipe buffer in each direction at once: the writer and the one reader of
    # stdout and stderr must take turns, or the child blocks
    script = tmp_path / "echo_both.py"
    script.write_text("import sys\ndata = sys.stdin.buffer.read()\n"
                      "for i in range(0, len(data), 4096):\n"
                      "    sys.stdout.buffer.write(data[i:i + 4096]); sys.stdout.flush()\n"
                      "    sys.stderr.buffer.write(b'e' * 4096); sys.stderr.flush()\n")
    payload = bytes(range(97, 123)) * (300 * 1024 // 26)
    out = await sh(f"{sys.executable} {script}", tmp_path, stdin=payload)
    assert out.exit_code == 0 and out.dropped_bytes == 0
    assert out.stdout.encode() == payload
    assert out.stderr == "e" * (4096 * -(-len(payload) // 4096))


async def test_a_signal_death_is_a_negative_exit_code(tmp_path):
    out = await sh("kill -TERM $$", tmp_path)
    assert out.exit_code == -15 and not out.timed_out
    assert "killed by signal 15" in out.describe()


async def test_cancelling_the_caller_stops_every_process_the_command_started(tmp_path):
    import anyio

    marker = tmp_path / "late"
    pids = tmp_path / "pids"
    finished = []

    async def command() -> None:
        await sh(f'(sleep 3; touch "{marker}") & echo "$$ $!" > "{pids}.new" && '
                 f'mv "{pids}.new" "{pids}"; sleep 4; touch "{marker}"', tmp_path, timeout_s=30)
        finished.append(True)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(command)
            while not pids.exists():  # cancel once both processes run, however slow the machine
                await anyio.sleep(0.02)
            group.cancel_scope.cancel()
    assert finished == []
    for pid in map(int, pids.read_text().split()):
        assert not process_running(pid)
    assert not marker.exists()


async def test_with_pidfds_a_command_costs_no_watcher_thread_and_is_reaped(tmp_path, exit_watch,
                                                                           monkeypatch):
    import threading

    if exit_watch != "pidfd":
        pytest.skip("asyncio's default child watcher starts a thread per child")
    started = []
    real_start = threading.Thread.start

    def start(self):
        started.append(self.name)
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    out = await sh('echo "$$"', tmp_path)
    assert out.exit_code == 0 and started == []
    with pytest.raises(ChildProcessError):  # already reaped: no zombie left behind
        os.waitpid(int(out.stdout), os.WNOHANG)


async def test_a_command_whose_exit_cannot_be_watched_is_stopped_and_not_run_again(
        tmp_path, exit_watch, monkeypatch):
    if exit_watch != "pidfd":
        pytest.skip("only the pidfd watch opens a descriptor per command")
    script = tmp_path / "count.sh"
    script.write_text(f'#!/bin/sh\necho run >> "{tmp_path / "runs"}"\nsleep 5\n')
    script.chmod(0o755)

    def no_pidfd(pid):
        import time

        deadline = time.monotonic() + 30
        runs = tmp_path / "runs"
        while not (runs.exists() and runs.read_text()) and time.monotonic() < deadline:
            time.sleep(0.02)  # let the command get going first, however slow the machine
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(runner.os, "pidfd_open", no_pidfd)
    out = await sh(str(script), tmp_path)  # a direct command: a failed start would retry
    assert out.exit_code is None and "could not watch" in (out.error or "")
    assert (tmp_path / "runs").read_text() == "run\n"
