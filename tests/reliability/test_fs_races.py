"""Symlink-swap races against the workspace check: another process swaps names between an
inside and an outside target in a tight loop while real sessions read (plan mode) and write
(default mode, no approver) through them. Nothing outside may be read or changed, and no call
may end in a traceback, however the swaps fall between the check and the use.

Counts scale with ``ZPI_RELIABILITY=long``; each test also stops at a time budget (the
figures are printed, run with ``-s`` to see them)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from helpers.reliability import scaled

from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.providers.messages import ToolResultMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio

SECRET = "OUTSIDE-SECRET-7f3a"
INSIDE = "inside-data"
BATCH = 40
TIME_BUDGET_S = scaled(90, 1800)

#: Swaps each link name through its states forever: a symlink to each target, or (target
#: ``=TEXT``) a regular file holding TEXT. Every state is put in place with one rename.
SWAPPER = r"""
import os, sys
specs = [arg.split("|") for arg in sys.argv[1:]]
n = 0
while True:
    for link, *states in specs:
        for state in states:
            n += 1
            tmp = f"{link}.swap{n % 2}"
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            if state.startswith("="):
                with open(tmp, "w") as f:
                    f.write(state[1:])
            else:
                os.symlink(state, tmp)
            os.replace(tmp, link)
"""



@contextlib.contextmanager
def swapping(*specs: str) -> Iterator[None]:
    """Run the swapper in another process (so its renames interleave freely with ours)."""
    proc = subprocess.Popen([sys.executable, "-c", SWAPPER, *specs])
    try:
        time.sleep(0.05)
        yield
    finally:
        proc.kill()
        proc.wait(timeout=10)


@attrs.define
class Tally:
    """What the trials found."""

    trials: int = 0
    ok: int = 0
    changed: int = 0
    leaks: list[str] = attrs.Factory(list)
    crashes: list[str] = attrs.Factory(list)

    def report(self, name: str) -> str:
        return (f"{name}: {self.trials} trials, {self.ok} succeeded, {self.changed} refused as "
                f"changed during the call, {len(self.leaks)} leaks, {len(self.crashes)} crashes")


def host() -> PluginHost:
    return PluginHost(PluginConfig(autoload=False)).load()


def calls(*pairs: tuple[str, dict]) -> dict:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in pairs]}


def results(model: ScriptedModel) -> list:
    """Every tool result the model was sent, in order."""
    last = model.requests[-1].messages
    return [m for m in last if isinstance(m, ToolResultMessage)]


def crashed(text: str) -> bool:
    """An exception that escaped a tool (the runner's catch-all) or a traceback."""
    return "Traceback" in text or "' failed: " in text


async def run_batch(tally: Tally, turns: list, **options) -> list:
    model = ScriptedModel([*turns, "done"])
    try:
        session = await create_session(model="t:m", provider=model, host=host(),
                                       persist=False, **options)
        try:
            await session.run("go")
        finally:
            await session.dispose()
    except Exception as exc:  # a crash of the run: what the CLI showed as a traceback
        tally.crashes.append(f"{type(exc).__name__}: {exc}")
        return []
    found = results(model)
    for message in found:
        text = "".join(getattr(c, "text", "") for c in message.content)
        if crashed(text):
            tally.crashes.append(text[:300])
        tally.changed += message.is_error and "changed during the call" in text
    return found


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    return ws, outside


async def test_plan_mode_reads_never_return_an_outside_file(zpi_env, layout):
    ws, outside = layout
    (outside / "secret.txt").write_text(SECRET)
    (ws / "real.txt").write_text(INSIDE)
    (ws / "d").mkdir()
    (ws / "d" / "secret.txt").write_text(INSIDE)
    tally = Tally()
    wanted = scaled(300, 20_000)
    deadline = time.monotonic() + TIME_BUDGET_S
    with swapping(f"{ws / 'peek.txt'}|{ws / 'real.txt'}|{outside / 'secret.txt'}|={INSIDE}",
                  f"{ws / 'pdir'}|{ws / 'd'}|{outside}"):
        while tally.trials < wanted and time.monotonic() < deadline:
            names = ["peek.txt", "pdir/secret.txt"] * (BATCH // 2)
            found = await run_batch(tally, [calls(*[("read", {"path": n}) for n in names])],
                                    cwd=ws, permission_mode="plan")
            tally.trials += len(names)
            for message in found:
                text = "".join(getattr(c, "text", "") for c in message.content)
                if SECRET in text:
                    tally.leaks.append(text[:200])
                tally.ok += not message.is_error
    print("\n" + tally.report("plan-mode reads"))
    assert tally.trials > 0
    assert tally.leaks == [] and tally.crashes == []


async def test_writes_never_change_an_outside_file(zpi_env, layout):
    ws, outside = layout
    (ws / "wd").mkdir()
    (outside / "wd").mkdir()
    (ws / "same-real.txt").write_text("same\n")
    (outside / "same.txt").write_text("same\n")
    before = os.stat(outside / "same.txt")
    tally = Tally()
    wanted = scaled(300, 20_000)
    deadline = time.monotonic() + TIME_BUDGET_S
    batch = 0
    with swapping(f"{ws / 'wdir'}|{ws / 'wd'}|{outside / 'wd'}",
                  f"{ws / 'same.txt'}|{ws / 'same-real.txt'}|{outside / 'same.txt'}"):
        while tally.trials < wanted and time.monotonic() < deadline:
            batch += 1
            turns = []
            for i in range(BATCH // 4):
                turns.append(calls(("read", {"path": "same.txt"})))
                turns.append(calls(("write", {"path": "same.txt", "content": "same\n"}),
                                   ("write", {"path": f"wdir/new-{batch}-{i}.txt",
                                              "content": "new\n"})))
            found = await run_batch(tally, turns, cwd=ws)
            tally.trials += 2 * (BATCH // 4)
            tally.ok += sum(not m.is_error for m in found if m.tool_name == "write")
            after = os.stat(outside / "same.txt")
            if (after.st_ino, after.st_mtime_ns) != (before.st_ino, before.st_mtime_ns):
                tally.leaks.append(f"batch {batch}: outside/same.txt was replaced")
                before = after
            written = sorted(p.name for p in (outside / "wd").iterdir())
            if written:
                tally.leaks.append(f"batch {batch}: created outside: {written}")
                for name in written:
                    (outside / "wd" / name).unlink()
    print("\n" + tally.report("write sessions"))
    strays = [p.name for p in ws.rglob("*") if "zpi" in p.name and p.name.endswith("tmp")]
    assert tally.trials > 0
    assert tally.leaks == [] and tally.crashes == [] and strays == []
    assert (outside / "same.txt").read_text() == "same\n"
