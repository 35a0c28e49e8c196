"""One writer per session file, in this process and across processes."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from zpi_host.providers.messages import UserMessage
from zpi_host.transcript import SessionManager, TranscriptLockedError, open_owner
from zpi_host.transcript.lock import FileLock, lock_path

HOLDER = """
import sys
from zpi_host.transcript import SessionManager
m = SessionManager.open(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
m.close()
print("closed", flush=True)
"""


def new_session(agent: Path, project: Path) -> tuple[str, Path]:
    with SessionManager.create(project, agent_dir=agent) as manager:
        manager.append_message(UserMessage.text("hello"))
        return manager.session_id, manager.path


def test_second_owner_in_this_process_is_refused(agent: Path, project: Path) -> None:
    sid, path = new_session(agent, project)
    first = SessionManager.open(sid, agent_dir=agent)
    with pytest.raises(TranscriptLockedError) as info:
        SessionManager.open(sid, agent_dir=agent)
    assert str(path) in str(info.value) and "already open for writing in this process" in str(
        info.value)
    assert info.value.pid == os.getpid() and info.value.path == path
    with pytest.raises(TranscriptLockedError):
        FileLock.acquire(path)  # even below the registry, flock refuses a second holder
    assert lock_path(path).read_text().strip() == str(os.getpid())
    first.close()
    assert not lock_path(path).exists()  # released and removed after close
    SessionManager.open(sid, agent_dir=agent).close()


def test_creating_over_a_held_path_is_refused(agent: Path, project: Path) -> None:
    manager = SessionManager.create(project, agent_dir=agent)
    with pytest.raises(Exception, match="already exists"):
        SessionManager.create(project, agent_dir=agent, session_id=manager.session_id)
    assert open_owner(manager.path) is manager
    manager.close()
    assert open_owner(manager.path) is None


def test_another_process_is_refused_with_its_pid(agent: Path, project: Path) -> None:
    sid, path = new_session(agent, project)
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "ready"
        with pytest.raises(TranscriptLockedError) as info:
            SessionManager.open(sid, agent_dir=agent)
        message = str(info.value)
        assert f"another zpi-host process (pid {child.pid})" in message and str(path) in message
        assert info.value.pid == child.pid
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "closed"
    finally:
        child.wait(timeout=30)
    SessionManager.open(sid, agent_dir=agent).close()  # released after the other close()


def test_a_killed_owner_releases_the_lock(agent: Path, project: Path) -> None:
    sid, path = new_session(agent, project)
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        with pytest.raises(TranscriptLockedError):
            SessionManager.open(sid, agent_dir=agent)
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
    assert lock_path(path).exists()  # the dead process could not remove it ...
    with SessionManager.open(sid, agent_dir=agent) as manager:  # ... but it holds nothing
        manager.append_message(UserMessage.text("after the crash"))
        assert lock_path(path).read_text().strip() == str(os.getpid())


def test_a_released_lock_file_is_not_shared(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    first = FileLock.acquire(session)
    stale = os.open(lock_path(session), os.O_RDWR)  # someone opened the file before release
    first.release()
    second = FileLock.acquire(session)  # a fresh file and lock
    other = os.open(lock_path(session), os.O_RDWR)
    with pytest.raises(BlockingIOError):
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.close(other)
    fcntl.flock(stale, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the old inode is no longer the lock
    assert os.fstat(stale).st_ino != os.stat(lock_path(session)).st_ino
    os.close(stale)
    second.release()
    second.release()  # idempotent
