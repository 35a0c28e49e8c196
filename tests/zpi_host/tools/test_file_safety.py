"""File tools check what they open, not a name: judged paths opened without following
symlinks, hard links read but changed only as outside files, special files refused without
blocking, only successful reads recorded, and temporary files of killed hosts swept."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.permission_checks import EDIT, READ, WRITE, check, policy

from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.fs import nofollow
from zpi_host.fs.files import FileChange, commit
from zpi_host.fs.stale_temps import TEMP_PATTERN, sweep_stale_temps, temp_name
from zpi_host.permissions.paths import JudgedPath
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel
from zpi_host.tools.base import ToolArgumentError, ToolContext, ToolFailure
from zpi_host.tools.file_state import FileNotReadError, FileReadState

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * (6 * 1024 * 1024)


def call(tool: Any, ctx: ToolContext, **args: Any) -> Any:
    return tool.execute(tool.prepare_arguments(args), ctx)


def judged(ctx: ToolContext, raw: str, real: Path, *, confined: bool = True) -> ToolContext:
    """The context a session builds after the permission check judged ``raw`` as ``real``."""
    ctx.judged_paths = {raw: JudgedPath(raw, real, ctx.cwd, 1, confined)}
    return ctx


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    work = tmp_path / "ws"
    work.mkdir()
    return work


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("SECRET\n")
    return out


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(cwd=ws, file_state=FileReadState())


# ----------------------------------------------------------------- the judged path is opened


def test_read_opens_the_judged_file_even_after_the_name_moved(ctx, ws, outside):
    (ws / "real.txt").write_text("inside\n")
    os.symlink(ws / "real.txt", ws / "link.txt")
    judged(ctx, "link.txt", ws / "real.txt")
    os.replace(_symlink_to(outside / "secret.txt", ws / "tmp-link"), ws / "link.txt")
    result = call(READ, ctx, path="link.txt")
    assert "inside" in result.text_content and "SECRET" not in result.text_content


def test_a_symlink_appearing_on_the_judged_path_is_refused(ctx, ws, outside):
    (ws / "sub").mkdir()
    (ws / "sub" / "secret.txt").write_text("inside\n")
    judged(ctx, "sub/secret.txt", ws / "sub" / "secret.txt")
    os.rename(ws / "sub", ws / "gone")
    os.symlink(outside, ws / "sub")  # the folder became a link to the outside
    for tool, extra in ((READ, {}), (WRITE, {"content": "x"}),
                        (EDIT, {"edits": [{"old_text": "a", "new_text": "b"}]})):
        with pytest.raises(ToolFailure, match=r"changed during the call \(a symlink"):
            call(tool, ctx, path="sub/secret.txt", **extra)
    assert (outside / "secret.txt").read_text() == "SECRET\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_write_through_a_judged_folder_lands_where_it_was_judged(ctx, ws, outside):
    (ws / "d").mkdir()
    os.symlink(ws / "d", ws / "dir")
    judged(ctx, "dir/new.txt", ws / "d" / "new.txt")
    os.replace(_symlink_to(outside, ws / "tmp-link"), ws / "dir")
    call(WRITE, ctx, path="dir/new.txt", content="hello\n")
    assert (ws / "d" / "new.txt").read_text() == "hello\n"
    assert not (outside / "new.txt").exists()


def _symlink_to(target: Path, link: Path) -> Path:
    os.symlink(target, link)
    return link


@pytest.mark.anyio
async def test_realpath_failing_mid_swap_is_a_denial_not_a_crash(monkeypatch, ws):
    """``realpath`` raises EINVAL when a link is swapped for a file between its ``lstat`` and
    its ``readlink``; the check retries, then denies with a clear reason."""
    (ws / "a.txt").write_text("a\n")
    os.symlink(ws / "a.txt", ws / "link.txt")
    real_readlink = os.readlink
    failures = {"left": 2}

    def flaky_readlink(path: Any, *args: Any, **kwargs: Any) -> Any:
        if failures["left"] > 0:
            failures["left"] -= 1
            raise OSError(errno.EINVAL, "Invalid argument", str(path))
        return real_readlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "readlink", flaky_readlink)
    verdict = await check(policy(ws, "plan"), READ, path="link.txt")
    assert verdict.allowed and verdict.judged[0].real == ws / "a.txt"
    failures["left"] = 100
    verdict = await check(policy(ws, "plan"), READ, path="link.txt")
    assert not verdict.allowed and verdict.source == "path"
    assert "changed during the call" in verdict.reason and "EINVAL" not in verdict.reason[:20]


# ----------------------------------------------------------------------------- hard links


@pytest.mark.anyio
async def test_a_hard_linked_file_may_be_read_but_not_changed(ws, outside):
    """A file with other names (a uv or pnpm cache's hard link) inside the workspace is read
    like any file there; changing it counts as outside: it needs approval or a rule."""
    os.link(outside / "secret.txt", ws / "alias.txt")
    (ws / "plain.txt").write_text("plain\n")
    plan = policy(ws, "plan")
    verdict = await check(plan, READ, path="alias.txt")
    assert verdict.allowed and verdict.source == "mode"
    assert not verdict.judged[0].confined  # a read is not bound to single-link files
    for tool, args in ((WRITE, {"content": "x"}), (EDIT, {"old_text": "S", "new_text": "T"})):
        verdict = await check(policy(ws), tool, path="alias.txt", **args)
        assert not verdict.allowed and verdict.source == "path"
        assert "2 hard links" in verdict.reason and "changing it counts as outside" in \
            verdict.reason and "(reading it does not)" in verdict.reason
    named = policy(ws, allow=(f"write({ws}/alias.txt)",))
    verdict = await check(named, WRITE, path="alias.txt", content="x")
    assert verdict.allowed and not verdict.judged[0].confined  # approved as outside
    verdict = await check(policy(ws), WRITE, path="plain.txt", content="x")
    assert verdict.judged[0].confined  # a change allowed as inside: must stay single-link


def test_a_file_that_gains_a_link_after_the_check_is_refused(ctx, ws, outside):
    (ws / "f.txt").write_text("inside\n")
    judged(ctx, "f.txt", ws / "f.txt")
    os.link(ws / "f.txt", outside / "other-name.txt")
    with pytest.raises(ToolFailure, match=r"now has 2 hard links"):
        call(READ, ctx, path="f.txt")
    assert ctx.file_state is not None and len(ctx.file_state) == 0
    judged(ctx, "f.txt", ws / "f.txt", confined=False)  # approved as outside: fine
    assert "inside" in call(READ, ctx, path="f.txt").text_content


@pytest.mark.anyio
async def test_a_session_reads_a_hard_link_and_does_not_write_through_it(zpi_env, ws,
                                                                         outside):
    os.link(outside / "secret.txt", ws / "alias.txt")
    model = ScriptedModel([
        {"tool_calls": [{"name": "read", "arguments": {"path": "alias.txt"}}]},
        {"tool_calls": [{"name": "write", "arguments": {"path": "alias.txt",
                                                        "content": "changed\n"}}]},
        "done"])
    host = PluginHost(PluginConfig(autoload=False)).load()
    session = await create_session(model="t:m", provider=model, cwd=ws, host=host,
                                   persist=False)
    result = await session.run("read it, then change it")
    await session.dispose()
    read_answer = model.requests[1].messages[-1]
    assert not read_answer.is_error and "SECRET" in read_answer.content[0].text
    write_answer = model.requests[2].messages[-1]
    assert write_answer.is_error and "2 hard links" in write_answer.content[0].text
    assert [d.source for d in result.denials] == ["path"]
    assert (outside / "secret.txt").read_text() == "SECRET\n"
    assert os.stat(ws / "alias.txt").st_nlink == 2


# ---------------------------------------------------------------------------- special files


def _without_blocking(action: Callable[[], Any]) -> BaseException | None:
    """Run ``action`` in a thread; it must end (a FIFO opened for reading or writing would
    block forever). Returns what it raised."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            action()
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=20)
    assert outcome, "the tool blocked on a special file"
    return outcome[0]


@pytest.mark.parametrize("kind", ["fifo", "socket", "device"])
@pytest.mark.parametrize("tool", ["read", "write", "edit"])
def test_special_files_are_refused_without_blocking(ctx, ws, kind, tool):
    if kind == "fifo":
        os.mkfifo(ws / "special")
        raw, what = "special", "a FIFO (named pipe)"
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(ws / "special"))
        raw, what = "special", "a socket"
    else:
        raw, what = "/dev/null", "a character device"
    ctx.file_state.record(Path(raw if kind == "device" else ws / raw),  # type: ignore[union-attr]
                          _fingerprint_of_nothing())
    tools = {"read": (READ, {}), "write": (WRITE, {"content": "x"}),
             "edit": (EDIT, {"edits": [{"old_text": "a", "new_text": "b"}]})}
    chosen, extra = tools[tool]
    error = _without_blocking(lambda: call(chosen, ctx, path=raw, **extra))
    assert isinstance(error, ToolFailure)
    assert f"is not a regular file: it is {what}" in str(error)
    if kind == "socket":
        server.close()


def _fingerprint_of_nothing() -> Any:
    from zpi_host.fs.files import FileFingerprint

    return FileFingerprint.of_bytes(b"", 0)


def test_commit_refuses_a_fifo_without_blocking(ws):
    os.mkfifo(ws / "pipe")
    error = _without_blocking(lambda: commit([FileChange(ws / "pipe", b"x", None)]))
    assert error is not None and "a FIFO" in str(error)


# ------------------------------------------------------------- only a successful read counts


@pytest.mark.parametrize(("name", "data", "args"), [
    ("bin.dat", b"a\x00b", {}),
    ("latin.txt", "caf\xe9".encode("latin-1"), {}),
    ("huge.png", PNG, {}),
    ("short.txt", b"one\n", {"offset": 5}),
])
def test_a_failed_read_is_not_recorded(ctx, ws, name, data, args):
    (ws / name).write_bytes(data)
    with pytest.raises(ToolFailure):
        call(READ, ctx, path=name, **args)
    assert ctx.file_state is not None and len(ctx.file_state) == 0
    with pytest.raises(FileNotReadError):
        call(WRITE, ctx, path=name, content="replaced")
    assert (ws / name).read_bytes() == data


# ------------------------------------------------------------------------ stale temp files


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temp_names_say_whose_they_are():
    name = temp_name("notes.md")
    match = TEMP_PATTERN.fullmatch(name)
    assert match is not None and int(match["pid"]) == os.getpid()
    assert name.startswith(".notes.md.zpi-") and name.endswith(".tmp")
    long = temp_name("x" * 250)
    assert len(long) <= 255 and TEMP_PATTERN.fullmatch(long)


def test_sweep_removes_only_stale_temps_of_dead_hosts(tmp_path):
    folder = tmp_path / "w"
    folder.mkdir()
    dead = _dead_pid()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = folder / temp_name("a.txt", dead)
        stale.write_bytes(b"partial")
        of_live = folder / temp_name("b.txt", live.pid)
        of_live.write_bytes(b"in use")
        mine = folder / temp_name("c.txt")
        mine.write_bytes(b"in use here")
        lookalike = folder / f".d.txt.zpi-{dead}-nothex00.tmp"
        lookalike.write_bytes(b"not ours")
        (tmp_path / "keep.txt").write_text("keep")
        link = folder / temp_name("e.txt", dead)
        os.symlink(tmp_path / "keep.txt", link)
        fifo = folder / temp_name("f.txt", dead)
        os.mkfifo(fifo)
        old_style = folder / ".g.txt.0123abcd.zpi-tmp"
        old_style.write_bytes(b"unknown owner")
        assert sweep_stale_temps(folder) == [stale]
        assert not stale.exists()
        for kept in (of_live, mine, lookalike, link, fifo, old_style):
            assert os.path.lexists(kept), kept
        assert (tmp_path / "keep.txt").read_text() == "keep"
        os.symlink(folder, tmp_path / "via-link")
        (folder / temp_name("h.txt", dead)).write_bytes(b"x")
        assert len(sweep_stale_temps(tmp_path / "via-link")) == 1  # resolved once, then walked
        assert sweep_stale_temps(tmp_path / "missing") == []
    finally:
        live.kill()
        live.wait()


def test_the_next_commit_into_a_folder_sweeps_it(tmp_path):
    stale = tmp_path / temp_name("a.txt", _dead_pid())
    stale.write_bytes(b"partial")
    commit([FileChange(tmp_path / "b.txt", b"new", None)])
    assert not stale.exists() and (tmp_path / "b.txt").read_bytes() == b"new"


@pytest.mark.anyio
async def test_resuming_a_session_sweeps_the_folders_it_wrote_into(zpi_env, ws):
    host = PluginHost(PluginConfig(autoload=False)).load()
    model = ScriptedModel([{"tool_calls": [
        {"name": "write", "arguments": {"path": "sub/a.txt", "content": "a\n"}}]}, "done"])
    session = await create_session(model="t:m", provider=model, cwd=ws, host=host)
    await session.run("write")
    await session.dispose()
    stale = ws / "sub" / temp_name("a.txt", _dead_pid())
    stale.write_bytes(b"half written")
    elsewhere = ws / temp_name("z.txt", _dead_pid())  # a folder this session never wrote to
    elsewhere.write_bytes(b"x")
    resumed = await create_session(model="t:m", provider=ScriptedModel(["ok"]), cwd=ws,
                                   host=host, resume=session.session_id)
    await resumed.dispose()
    assert not stale.exists() and elsewhere.exists()
    assert any("temporary file" in w for w in resumed.warnings)


def test_nofollow_open_refuses_a_symlink_as_final_component(tmp_path):
    (tmp_path / "a").write_text("a")
    os.symlink(tmp_path / "a", tmp_path / "l")
    with pytest.raises(nofollow.PathChangedError):
        nofollow.open_regular(tmp_path / "l")


@pytest.mark.anyio
@pytest.mark.parametrize("raw", ["bad\x00name", "\ud800.txt"])
async def test_a_path_that_cannot_be_a_file_name_is_a_denial(ws, ctx, raw):
    verdict = await check(policy(ws, "plan"), READ, path=raw)
    assert not verdict.allowed and "cannot be a file name" in verdict.reason
    # a lone surrogate is refused even earlier, as an argument strict JSON cannot carry
    refused = r"cannot be a file name|lone surrogate"
    with pytest.raises((ToolFailure, ToolArgumentError), match=refused):
        call(READ, ctx, path=raw)
    with pytest.raises((ToolFailure, ToolArgumentError), match=refused):
        call(WRITE, ctx, path=raw, content="x")
