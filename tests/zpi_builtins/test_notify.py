"""builtins:notify: notifications to the terminal port and the configured command."""

from __future__ import annotations

import io
import json
import sys

import pytest
from helpers.builtins import builtins_settings, scripted_session

from zpi_builtins.notify import terminal_sequence
from zpi_host.session.assembly import create_session
from zpi_host.session.ports import HostPorts
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def test_terminal_sequences():
    assert terminal_sequence("bell", "t", "m") == "\a"
    assert terminal_sequence("osc9", "zpi", "needs\x1b you") == "\x1b]9;zpi: needs  you\x07"
    assert terminal_sequence("off", "t", "m") == ""


async def test_a_notification_rings_the_terminal_as_configured(zpi_env, tmp_path):
    bell, osc = io.StringIO(), io.StringIO()
    first = await scripted_session(tmp_path, [], ports=HostPorts(terminal=bell))
    second = await scripted_session(tmp_path, [], ports=HostPorts(terminal=osc),
                                    settings=builtins_settings(notify={"terminal": "osc9"}))
    off = await scripted_session(tmp_path, [], ports=HostPorts(terminal=io.StringIO()),
                                 settings=builtins_settings(notify={"enabled": False}))
    for session in (first, second, off):
        await session.notify("bash needs your approval", "Permission", "permission_prompt")
        await session.dispose()
    assert bell.getvalue() == "\a"
    assert osc.getvalue() == "\x1b]9;Permission: bash needs your approval\x07"
    assert off.ports.terminal.getvalue() == ""


def recorder(tmp_path):
    """A notification command that appends its arguments to a file."""
    log = tmp_path / "notified.jsonl"
    code = ("import json, sys; open(sys.argv[1], 'a').write(json.dumps(sys.argv[2:]) + '\\n')")
    return log, [sys.executable, "-c", code, str(log)]


async def test_the_command_runs_when_input_is_needed_and_is_awaited_at_the_end(
        zpi_env, tmp_path):
    log, command = recorder(tmp_path)
    session = await scripted_session(tmp_path, [], settings=builtins_settings(
        notify={"command": command}))
    await session.notify("just so you know", None, "info")  # not a reason to call the user
    await session.notify("bash needs your approval", "Permission", "permission_prompt")
    await session.dispose()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines == [["Permission", "bash needs your approval"]]


async def test_a_run_longer_than_the_threshold_notifies_when_it_ends(zpi_env, tmp_path):
    log, command = recorder(tmp_path)
    terminal = io.StringIO()
    slow = builtins_settings(notify={"command": command, "min_run_seconds": 0})
    session = await scripted_session(tmp_path, ["done"], settings=slow,
                                     ports=HostPorts(terminal=terminal))
    await session.run("go")
    await session.dispose()
    (line,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert line[0] == "zpi" and line[1].startswith("the run finished after")
    assert terminal.getvalue() == "\a"
    # under the threshold: nothing
    quiet = await scripted_session(tmp_path, ["done"], ports=HostPorts(terminal=io.StringIO()),
                                   settings=builtins_settings(notify={"min_run_seconds": 3600}))
    await quiet.run("go")
    await quiet.dispose()
    assert quiet.ports.terminal.getvalue() == ""


async def test_a_failing_command_is_a_warning_not_an_error(zpi_env, tmp_path):
    session = await scripted_session(tmp_path, [], settings=builtins_settings(
        notify={"command": [sys.executable, "-c", "raise SystemExit(3)"]}))
    await session.notify("hello", None, "idle_prompt")
    await session.dispose()
    assert any("exited with 3" in w for w in session.take_warnings())


@pytest.mark.parametrize("name", ["settings.json", "settings.local.json"])
async def test_a_project_may_not_choose_the_notification_command(zpi_env, tmp_path, name):
    """A cloned repository's ``.zpi`` settings would run a program of its choosing at the first
    permission prompt: its command is ignored with a warning and the user's own one runs."""
    (tmp_path / "planted").mkdir()
    planted, theirs = recorder(tmp_path / "planted")
    log, mine = recorder(tmp_path)
    work = tmp_path / "work"
    (work / ".zpi").mkdir(parents=True)
    (work / ".zpi" / name).write_text(json.dumps(
        {"plugins": {"builtins": {"notify": {"command": theirs, "terminal": "off"}}}}))
    (zpi_env.agent_dir / "settings.json").write_text(json.dumps(
        {"plugins": {"builtins": {"notify": {"command": mine}}}}))
    session = await create_session(model="scripted:m", provider=ScriptedModel([]), cwd=work)
    await session.notify("bash needs your approval", "Permission", "permission_prompt")
    await session.dispose()
    assert not planted.exists()
    assert [json.loads(line) for line in log.read_text().splitlines()] == [
        ["Permission", "bash needs your approval"]]
    assert session.settings["plugins"]["builtins"]["notify"]["terminal"] == "off"  # the rest
    said = " ".join(session.warnings)
    assert "may not set plugins.builtins.notify.command" in said
    assert "run a program of the repository's choosing" in said
