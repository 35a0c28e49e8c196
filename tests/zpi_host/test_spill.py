"""The private spill folder of a session: made 0700, never through a symlink, read by the
session's model only, removed with its session, and pruned when nobody needs it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from zpi_host.fs.spill import (
    SpillFolderError,
    create_spill_file,
    spill_folder,
    spill_root,
)
from zpi_host.session.assembly import create_session
from zpi_host.session.housekeeping import prune_spill
from zpi_host.testing import ScriptedModel
from zpi_host.tools.base import ToolCall
from zpi_host.transcript import delete_session

pytestmark = pytest.mark.anyio
SID = "0b6b1c1e-5d0a-4f55-9d1e-3f5a2f1d6c2b"


def test_folder_and_file_are_private(tmp_path: Path) -> None:
    folder = spill_folder(tmp_path / "agent", SID)
    path, file = create_spill_file(folder, "zpi-bash")
    with file:
        file.write(b"out")
    assert path.parent == folder == tmp_path / "agent" / "spill" / SID
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("which", ["session folder", "spill root"])
def test_a_symlink_in_place_of_a_folder_is_refused(tmp_path: Path, which: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o700)
    agent = tmp_path / "agent"
    folder = spill_folder(agent, SID)
    if which == "spill root":
        agent.mkdir()
        os.symlink(outside, spill_root(agent))
    else:
        spill_root(agent).mkdir(parents=True, mode=0o700)
        os.symlink(outside, folder)
    with pytest.raises(SpillFolderError, match="symlink"):
        create_spill_file(folder, "zpi-bash")
    assert list(outside.iterdir()) == []


def test_a_folder_open_to_others_is_refused(tmp_path: Path) -> None:
    folder = spill_folder(tmp_path / "agent", SID)
    folder.mkdir(parents=True, mode=0o700)
    folder.chmod(0o755)
    with pytest.raises(SpillFolderError, match="chmod 700"):
        create_spill_file(folder, "zpi-bash")
    folder.chmod(0o700)
    spill_root(tmp_path / "agent").chmod(0o777)
    with pytest.raises(SpillFolderError, match="writable by other users"):
        create_spill_file(folder, "zpi-bash")


def test_a_sticky_shared_root_is_accepted_for_a_private_folder(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    path, file = create_spill_file(shared / "mine", "zpi-bash")
    file.close()
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a folder to another user")
def test_a_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    folder = spill_folder(tmp_path / "agent", SID)
    folder.mkdir(parents=True, mode=0o700)
    os.chown(folder, 12345, 12345)
    with pytest.raises(SpillFolderError, match="belongs to user 12345"):
        create_spill_file(folder, "zpi-bash")


def _spill_text(size: int = 40_000) -> ScriptedModel:
    command = f"{sys.executable} -c \"print('x' * {size})\""
    return ScriptedModel([{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
                          "done"])


async def test_a_session_spills_into_its_own_folder_and_reads_only_that(
        zpi_env, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    session = await create_session(model="t:m", provider=_spill_text(), cwd=work)
    try:
        mine = zpi_env.agent_dir.resolve() / "spill" / session.session_id
        assert session.spill_dir == mine
        await session.run("go")
        (result,) = [m for m in session.messages if m.role == "tool"]
        spilled = Path(result.details["full_output_path"])
        assert spilled.parent == mine and spilled.read_text().count("x") == 40_000
        policy = session.permissions

        async def verdict(path: Path) -> str:
            call = ToolCall("c1", "read", {"path": str(path)})
            decision = await policy.check(session.tools["read"], call)
            return decision.behavior

        assert await verdict(spilled) == "allow"
        shared = Path(tempfile.gettempdir()).resolve() / "zpi-spill" / "x.log"
        other = mine.with_name("11111111-2222-4333-8444-555555555555") / "x.log"
        assert await verdict(shared) != "allow"
        assert await verdict(other) != "allow"
    finally:
        await session.dispose()
    assert spilled.exists()  # a saved session keeps its spill files for resume
    delete_session(session.session_id, agent_dir=zpi_env.agent_dir)
    assert not mine.exists()


async def test_an_in_memory_session_removes_its_folder_at_dispose(zpi_env, tmp_path) -> None:
    session = await create_session(model="t:m", provider=_spill_text(), cwd=tmp_path,
                                   persist=False, permission_mode="bypass")
    await session.run("go")
    folder = session.spill_dir
    assert folder is not None and folder.name == f"{session.session_id}.pid{os.getpid()}"
    assert any(folder.iterdir())
    await session.dispose()
    assert not folder.exists()


def test_prune_removes_what_no_session_needs(zpi_env, tmp_path: Path) -> None:
    from zpi_host.transcript import SessionManager

    agent = zpi_env.agent_dir
    saved = SessionManager.create(tmp_path, agent_dir=agent)
    saved.append_custom("test")
    saved.close()
    root = spill_root(agent)
    child = subprocess.Popen(["true"])
    child.wait()
    folders = {
        "saved": root / saved.session_id,
        "old": root / "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee",
        "deleted": root / SID,
        "memory-live": root / f"{SID}.pid{os.getpid()}",
        "memory-dead": root / f"{SID}.pid{child.pid}",
        "unknown": root / "notes",
    }
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    old_saved = SessionManager.create(tmp_path, agent_dir=agent,
                                      session_id="aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee")
    old_saved.append_custom("test")
    old_saved.close()
    long_ago = time.time() - 8 * 86_400
    os.utime(folders["old"], (long_ago, long_ago))
    removed = prune_spill(agent)
    assert sorted(removed) == sorted(folders[k].name for k in ("old", "deleted", "memory-dead"))
    assert all(folders[k].exists() for k in ("saved", "memory-live", "unknown"))


async def test_a_new_session_prunes_old_folders(zpi_env, tmp_path) -> None:
    stale = spill_root(zpi_env.agent_dir) / SID
    stale.mkdir(parents=True)
    session = await create_session(model="t:m", provider=ScriptedModel(["hi"]), cwd=tmp_path)
    await session.dispose()
    assert not stale.exists()


def test_nothing_is_removed_through_a_symlinked_spill_root(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    (victim / SID).mkdir(parents=True)
    (victim / SID / "precious.txt").write_text("keep me")
    agent = tmp_path / "agent"
    agent.mkdir()
    os.symlink(victim, spill_root(agent))
    assert prune_spill(agent) == []
    delete_session(SID, agent_dir=agent)
    assert (victim / SID / "precious.txt").read_text() == "keep me"
