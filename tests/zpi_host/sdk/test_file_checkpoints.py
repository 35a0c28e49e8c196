"""enable_file_checkpointing and rewind_files: real sessions (scripted model), real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from zpi_host.agent import file_checkpoints
from zpi_host.agent.file_checkpoints import RewindError, rewind_session
from zpi_host.errors import UsageError
from zpi_host.sdk import (
    InMemorySessionStore,
    ResultMessage,
    SDKClient,
    UserMessage,
    fork_session,
    project_key_for_directory,
)
from zpi_host.transcript import SessionManager

pytestmark = pytest.mark.anyio


def _write(path, content):
    return {"tool_calls": [{"name": "Write", "arguments": {"file_path": path,
                                                           "content": content}}]}


def _edit(path, old, new):
    return {"tool_calls": [{"name": "Read", "arguments": {"file_path": path}}]}, \
        {"tool_calls": [{"name": "Edit", "arguments": {"file_path": path, "old_string": old,
                                                        "new_string": new}}]}


async def _input(client, prompt):
    """Send one input; the echoed prompt's uuid and the messages."""
    await client.query(prompt)
    messages = [m async for m in client.receive_response()]
    echoed = [m for m in messages if isinstance(m, UserMessage) and isinstance(m.content, str)]
    assert [m.content for m in echoed] == [prompt]
    assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error, messages[-1]
    return echoed[0].uuid, messages


async def test_rewind_restores_changed_files_and_deletes_created_ones(scripted):
    (scripted.cwd / "a.txt").write_text("one\n")
    scripted.turns(*_edit("a.txt", "one", "two"), _write("new.txt", "fresh\n"), "first done",
                   *_edit("a.txt", "two", "three"), _edit("a.txt", "three", "four")[1],
                   "second done")
    options = scripted.options(enable_file_checkpointing=True,
                               permission_mode="acceptEdits")
    async with SDKClient(options) as client:
        first, _ = await _input(client, "change a, create new")
        second, _ = await _input(client, "change a twice")
        assert (scripted.cwd / "a.txt").read_text() == "four\n"
        report = await client.rewind_files(second)
        assert report.restored == (str(scripted.cwd / "a.txt"),) and not report.deleted
        assert (scripted.cwd / "a.txt").read_text() == "two\n"  # as at the second message
        report = await client.rewind_files(first)
        assert (scripted.cwd / "a.txt").read_text() == "one\n"
        assert not (scripted.cwd / "new.txt").exists()
        assert report.deleted == (str(scripted.cwd / "new.txt"),)
        assert "deleted" in report.describe() and "restored" in report.describe()
        again = await client.rewind_files(first)  # nothing differs any more
        assert not again.restored and not again.deleted
        with pytest.raises(RewindError, match="not a user message"):
            await client.rewind_files("no-such-id")
        sid = client.session.session_id
    records = SessionManager.open(sid, agent_dir=scripted.agent_dir).records
    kept = [r.data for r in records if getattr(r, "namespace", "") == "zpi.file_checkpoint"]
    # first touch per user message only: a.txt and new.txt, then a.txt once more
    assert [(d["message"], os.path.basename(d["path"]), d["existed"]) for d in kept] == [
        (first, "a.txt", True), (first, "new.txt", False), (second, "a.txt", True)]


async def test_rewind_needs_the_option_and_bash_changes_are_not_kept(scripted):
    scripted.turns("hi")
    async with SDKClient(scripted.options()) as client:
        await client.query("hello")
        [m async for m in client.receive_response()]
        with pytest.raises(UsageError, match="enable_file_checkpointing=True"):
            await client.rewind_files("x")
    (scripted.cwd / "b.txt").write_text("before\n")
    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {
        "command": "echo after > b.txt"}}]}, "done")
    options = scripted.options(enable_file_checkpointing=True,
                               permission_mode="bypassPermissions")
    async with SDKClient(options) as client:
        uuid, _ = await _input(client, "run a command")
        report = await client.rewind_files(uuid)
    assert not report.restored  # what a command changes is not tracked (docs/sdk.md)
    assert (scripted.cwd / "b.txt").read_text() == "after\n"


async def test_checkpoints_survive_resume_and_a_fork_starts_with_none(scripted):
    scripted.turns(_write("c.txt", "made\n"), "made it")
    options = scripted.options(enable_file_checkpointing=True, permission_mode="acceptEdits")
    async with SDKClient(options) as client:
        uuid, messages = await _input(client, "make c")
    sid = messages[-1].session_id
    forked = fork_session(sid, directory=str(scripted.cwd))
    scripted.turns("resumed")
    async with SDKClient(scripted.options(enable_file_checkpointing=True,
                                          resume=sid)) as client:
        report = await client.rewind_files(uuid)
    assert report.deleted == (str(scripted.cwd / "c.txt"),)
    assert not (scripted.cwd / "c.txt").exists()
    records = SessionManager.open(forked.session_id, agent_dir=scripted.agent_dir).records
    assert not [r for r in records if getattr(r, "namespace", "") == "zpi.file_checkpoint"]
    assert [r for r in records if r.type == "user"]  # the conversation was copied


async def test_large_files_are_not_kept_and_say_so(scripted, monkeypatch):
    monkeypatch.setattr(file_checkpoints, "MAX_FILE_BYTES", 10)
    (scripted.cwd / "big.txt").write_text("x" * 50 + "\n")
    scripted.turns(*_edit("big.txt", "x", "y")[:1], {"tool_calls": [{"name": "Edit", "arguments": {
        "file_path": "big.txt", "old_string": "x" * 50, "new_string": "y"}}]}, "done")
    options = scripted.options(enable_file_checkpointing=True, permission_mode="acceptEdits")
    async with SDKClient(options) as client:
        uuid, _ = await _input(client, "shrink big")
        report = await client.rewind_files(uuid)
    assert report.not_restored[0][0] == str(scripted.cwd / "big.txt")
    assert "larger than 10 bytes" in report.not_restored[0][1]
    assert (scripted.cwd / "big.txt").read_text() == "y\n"


async def test_checkpoints_go_to_a_session_store_with_the_session(scripted):
    store = InMemorySessionStore()
    scripted.turns(_write("d.txt", "stored\n"), "done")
    options = scripted.options(enable_file_checkpointing=True, permission_mode="acceptEdits",
                               session_store=store)
    async with SDKClient(options) as client:
        uuid, messages = await _input(client, "make d")
    entries = await store.load({"project_key": project_key_for_directory(scripted.cwd),
                                "session_id": messages[-1].session_id})
    kept = [e for e in entries if e.get("namespace") == "zpi.file_checkpoint"]
    assert [k["data"]["message"] for k in kept] == [uuid]


async def test_an_unsaved_session_keeps_checkpoints_in_memory(scripted):
    scripted.turns(_write("e.txt", "mem\n"), "done")
    options = scripted.options(enable_file_checkpointing=True, permission_mode="acceptEdits",
                               persist_session=False)
    async with SDKClient(options) as client:
        uuid, _ = await _input(client, "make e")
        await client.rewind_files(uuid)
    assert not (scripted.cwd / "e.txt").exists()


async def test_the_cli_lists_points_and_rewinds_only_inside_its_directory(scripted, tmp_path):
    (scripted.cwd / "f.txt").write_text("orig\n")
    scripted.turns(*_edit("f.txt", "orig", "changed"), "done")
    options = scripted.options(enable_file_checkpointing=True, permission_mode="acceptEdits")
    async with SDKClient(options) as client:
        uuid, messages = await _input(client, "change f")
    sid = messages[-1].session_id
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    report = rewind_session(sid, uuid, cwd=elsewhere, agent_dir=scripted.agent_dir)
    assert "outside the workspace roots" in report.not_restored[0][1]  # records are data
    assert (scripted.cwd / "f.txt").read_text() == "changed\n"
    env = {**os.environ, "ZPI_AGENT_DIR": str(scripted.agent_dir)}

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "zpi_host", "sessions", "rewind", *args],
                              cwd=scripted.cwd, env=env, capture_output=True, text=True)

    listing = cli(sid, "--json")
    assert listing.returncode == 0, listing.stderr
    assert json.loads(listing.stdout) == [{"message_id": uuid, "prompt": "change f",
                                           "files": 1}]
    done = cli(sid, uuid)
    assert done.returncode == 0, done.stderr
    assert f"restored {scripted.cwd / 'f.txt'}" in done.stdout
    assert (scripted.cwd / "f.txt").read_text() == "orig\n"
    refused = cli(sid, uuid, "--store", "sqlite:" + str(tmp_path / "s.db"))
    assert refused.returncode == 2 and "without --store" in refused.stderr


async def test_a_path_that_is_a_symlink_now_is_not_written_through(scripted, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    scripted.turns(_write("g.txt", "made\n"), "done")
    options = scripted.options(enable_file_checkpointing=True, permission_mode="acceptEdits")
    async with SDKClient(options) as client:
        uuid, _ = await _input(client, "make g")
        (scripted.cwd / "g.txt").unlink()
        (scripted.cwd / "g.txt").symlink_to(outside)
        report = await client.rewind_files(uuid)
    assert report.not_restored and "leads elsewhere now" in report.not_restored[0][1]
    assert outside.read_text() == "keep me\n" and (scripted.cwd / "g.txt").is_symlink()
