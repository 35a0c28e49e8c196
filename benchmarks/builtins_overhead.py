"""What the zpi-builtins services cost: 200 turns with every service on against every
service off (``plugins.builtins.<name>.enabled``), on the path users run.

Both sides are the same installation, with the plugins loaded from their entry points as
always; only a settings file in the agent dir differs: on, the services at their defaults; off,
``enabled: false`` for every service of the settings schema (``plugins.builtins``). On, the
services do their real work: the behaviour instructions are in the system prompt, ``ask_user``
is offered to the model, the ``zpi_run_end`` services (title, notify, init) run after every
run, and the title service sends its one side request (the model answers it).

- ``zpi-host run``: a whole process running a 200-turn scripted session (199 ``read`` calls
  on a small file, then an answer), saved to a transcript as a user's run is. The process's
  CPU time (user + system, from ``getrusage``): start-up, plugin loading and the run, without
  the waits for the disk and for other load on the machine.
- chat-like session: one saved session in one process taking 100 prompts of 2 turns each (a
  ``read`` call, then an answer) through ``create_session().run()``, with an instant
  in-process model; the per-run services run 100 times. Process CPU time (the model and the
  tool use no other process, so other load on the machine does not decide the ratio).

The sides alternate, ``--rounds`` times. Target for both: on / off <= 1.15.

    python benchmarks/builtins_overhead.py [--turns 200] [--rounds 11] [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import _install
from _measure import ainterleave, arguments, compare, emit, interleave

RATIO_TARGET = 1.15
READ = {"name": "read", "arguments": {"path": "small.txt"}}
TITLE = "Reading a small file"


def services() -> list[str]:
    """Every built-in service the settings schema knows (``plugins.builtins.<name>``)."""
    from zpi_host.settings.schema import Section, find

    node = find("plugins.builtins")
    assert isinstance(node, Section)
    return [child.name for child in node.children if isinstance(child, Section)]


def agent_dir(root: Path, on: bool) -> Path:
    """An agent dir whose settings turn every service on (their defaults) or off."""
    folder = root / ("agent-on" if on else "agent-off")
    folder.mkdir()
    switch = {name: {"enabled": on} for name in services()}
    (folder / "settings.json").write_text(json.dumps({"plugins": {"builtins": switch}}))
    return folder


def check_services(agent: Path, project: Path, on: bool) -> None:
    """The sides differ as they should: the services' tool, command and instructions are in
    a session's prompt and tools exactly when they are on."""

    async def look() -> None:
        from zpi_host.session.assembly import create_session

        session = await create_session(model="function:bench", provider=instant_model(),
                                       cwd=project, agent_dir=agent, persist=False)
        try:
            shown = ("ask_user" in session.tools, "# Git safety" in session.system_prompt,
                     session.resources is not None and session.resources.command("init")
                     is not None)
        finally:
            await session.dispose()
        if shown != (on, on, on):
            raise SystemExit(f"the services are not {'on' if on else 'off'} as set: "
                             f"(ask_user, instructions, /init) = {shown}")

    asyncio.run(look())


# ----------------------------------------------------------------------- zpi-host run


def zpi_host() -> str:
    return str(_install.current_bin() / "zpi-host")


def write_script(root: Path, turns: int) -> Path:
    """199 reads then an answer (for ``turns`` 200), and the title turn."""
    lines = [{"tool_calls": [READ]}] * (turns - 1) + [{"text": "done"},
                                                      {"purpose": "title", "text": TITLE}]
    script = root / "script.jsonl"
    script.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return script


def run_process(script: Path, agent: Path, project: Path, turns: int) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZPI_")}
    env["ZPI_AGENT_DIR"] = str(agent)
    command = [zpi_host(), "run", "--model", f"scripted:{script}", "--output-format", "json",
               "read small.txt again and again"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"zpi-host run failed ({done.returncode}): {done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    if result["num_turns"] != turns or result["result"] != "done":
        raise SystemExit(f"zpi-host run gave a wrong result: {result}")
    return seconds


# ------------------------------------------------------------------ chat-like session


def instant_model() -> Any:
    """An instant model: a read, then an answer, run after run; it also answers the title
    side request."""
    from zpi_host.testing import FunctionModel

    def model(request: Any) -> Any:
        if request.purpose == "title":
            return {"text": TITLE}
        last = request.messages[-1]
        return {"text": "done"} if getattr(last, "role", "") == "tool" else {"tool_calls": [READ]}

    return FunctionModel(model, side=("title",))


async def run_session(agent: Path, project: Path, runs: int, on: bool) -> float:
    from zpi_host.session.assembly import create_session

    session = await create_session(model="function:bench", provider=instant_model(),
                                   cwd=project, agent_dir=agent)
    started = time.process_time()
    for index in range(runs):
        result = await session.run(f"read small.txt, time {index}")
        if result.is_error or result.num_turns != 2:
            raise SystemExit(f"run {index} failed: {result.stop_reason} {result.error}")
    await session.dispose()  # the services drain here (the title request)
    seconds = time.process_time() - started
    if (session.store.title == TITLE) != on:
        raise SystemExit(f"the title service did {'not ' if on else ''}run")
    return seconds


# ------------------------------------------------------------------------------- main


def main() -> int:
    args = arguments("builtins_overhead", __doc__, rounds=11,
                     quick={"turns": 10, "rounds": 1}, options=[
                         ("--turns", {"type": int, "default": 200,
                                      "help": "turns per session (even)"})],
                     minimum={"turns": 2})
    turns = args.turns + args.turns % 2
    with tempfile.TemporaryDirectory(prefix="zpi-bench-builtins-") as tmp:
        root = Path(tmp)
        project = root / "project"
        project.mkdir()
        (project / "small.txt").write_text("".join(f"line {i}\n" for i in range(1, 21)))
        agents = {"on": agent_dir(root, True), "off": agent_dir(root, False)}
        for side, agent in agents.items():
            check_services(agent, project, side == "on")
        script = write_script(root, turns)
        process = interleave({side: lambda agent=agent: run_process(script, agent, project,
                                                                    turns)
                              for side, agent in agents.items()}, args.rounds)
        chat = asyncio.run(ainterleave(
            {side: lambda agent=agent, side=side: run_session(agent, project, turns // 2,
                                                              side == "on")
             for side, agent in agents.items()}, args.rounds))
    off_note = "baseline = the same install with plugins.builtins.<name>.enabled false for " + \
        ", ".join(services())
    emit([
        compare(f"builtins_overhead: zpi-host run, {turns} turns, services on vs off",
                process["on"], process["off"], target=RATIO_TARGET,
                note="whole process, its CPU time, saved transcript; " + off_note),
        compare(f"builtins_overhead: one session, {turns // 2} prompts x 2 turns, on vs off",
                chat["on"], chat["off"], target=RATIO_TARGET,
                note="in process, CPU time, saved transcript, title request answered"),
    ], "builtins_overhead")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
