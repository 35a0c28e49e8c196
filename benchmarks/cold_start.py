"""Cold start of whole ``zpi-host`` processes against the floor of any pluggy host.

The floor imports pluggy and scans the ``zpi.plugins`` entry points, which every entry-point
plugin host must do. Measured against it, alternating, ``--rounds`` times each:

- ``zpi-host --list-plugins --json`` (target <= 2.0);
- the same with one Claude plugin folder (``--plugin-dir``: a manifest, a skill, a command and
  a hooks file) (target <= 2.0);
- a one-turn ``zpi-host run --model scripted:FILE "hello"`` (answers text; the session is
  written into a temporary agent dir, as a user's run is) (target <= 2.5).

And against a bare ``python -c pass``: ``zpi-host --version`` and ``zpi-host --help`` (target
<= 1.5 each), and for information the same floor plus what the installed ``zpi-host``
script itself imports before any zpi module (the ``import`` lines of the installed script:
older pips wrote ``import re``; pip 26.3 and uv 0.13 write only ``import sys``).

Also shown, for information, the same ratios in CPU time (user + system, from ``wait4``): on
a shared machine other load stretches wall time more than CPU time.

The ``zpi-host`` measured, and the ``python`` of the floor and of ``-c pass``, are those of
zpi installed as a user installs it (``_install.py``: this checkout's four distributions in
an environment of their own; ``--zpi-env current`` measures this environment's instead).

All run with a temporary ``ZPI_AGENT_DIR`` and with bytecode caching allowed
(``PYTHONDONTWRITEBYTECODE`` removed from their environment) after a warm-up run: pip
compiles an installed package's modules and an editable install writes them on first import,
so a user's second start never compiles.

    python benchmarks/cold_start.py [--rounds 15] [--quick] [--zpi-env install|current|DIR]
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import _install
from _measure import arguments, compare, emit, interleave, timed

FLOOR = ["-c", "import pluggy, importlib.metadata as m; m.entry_points(group='zpi.plugins')"]
BARE = ["-c", "pass"]


def script_imports(script: str) -> str:
    """The top-level ``import`` lines of the installed ``zpi-host`` script, as one program:
    what it costs before any zpi module is imported (an installer's template, not ours)."""
    try:
        lines = Path(script).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):  # a binary launcher (Windows): nothing to read
        return "pass"
    return "; ".join(line for line in lines if line.startswith("import ")) or "pass"


def claude_plugin(root: Path) -> Path:
    """A small Claude plugin folder: manifest, one skill, one command, one hooks file."""
    folder = root / "bench-plugin"
    (folder / ".claude-plugin").mkdir(parents=True)
    (folder / ".claude-plugin" / "plugin.json").write_text(json.dumps(
        {"name": "bench-plugin", "version": "1.0.0", "description": "benchmark plugin"}))
    (folder / "skills" / "greet").mkdir(parents=True)
    (folder / "skills" / "greet" / "SKILL.md").write_text(
        "---\nname: greet\ndescription: Greets the user.\n---\nSay hello.\n")
    (folder / "commands").mkdir()
    (folder / "commands" / "hello.md").write_text("---\ndescription: Say hello\n---\nHello!\n")
    (folder / "hooks").mkdir()
    (folder / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}))
    return folder


def runner(command: list[str], env: dict[str, str], cwd: Path,
           cpu: list[float]) -> Callable[[], None]:
    """Run ``command`` to its end; its CPU time (user + system, from ``wait4``) goes to
    ``cpu``."""
    def run() -> None:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=env, cwd=cwd)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            raise subprocess.CalledProcessError(process.returncode, command)
        cpu.append(usage.ru_utime + usage.ru_stime)
    return run


def main() -> int:
    args = arguments("cold_start", __doc__, rounds=15, quick={"rounds": 1},
                     options=[_install.OPTION])
    rounds = args.rounds if args.quick else max(3, args.rounds)
    bin_dir = _install.zpi_bin(args)
    print(_install.describe(bin_dir), flush=True)
    zpi_host, python = str(bin_dir / "zpi-host"), str(bin_dir / "python")
    with tempfile.TemporaryDirectory(prefix="zpi-bench-start-") as tmp:
        root = Path(tmp)
        project = root / "project"
        project.mkdir()
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["ZPI_AGENT_DIR"] = str(root / "agent")
        script = root / "hello.jsonl"
        script.write_text(json.dumps({"text": "hello"}) + "\n")
        plugin = claude_plugin(root)
        commands = {
            "list": [zpi_host, "--list-plugins", "--json"],
            "list_claude": [zpi_host, "--plugin-dir", str(plugin), "--list-plugins",
                            "--json"],
            "run": [zpi_host, "run", "--model", f"scripted:{script}", "hello"],
            "version": [zpi_host, "--version"],
            "help": [zpi_host, "--help"],
            "floor": [python, *FLOOR],
            "bare": [python, *BARE],
            "wrapper": [python, "-c", script_imports(zpi_host)],
        }
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        sides = {name: timed(runner(command, env, project, cpu[name]))
                 for name, command in commands.items()}
        samples = interleave(sides, rounds)
    cpu = {name: taken[-rounds:] for name, taken in cpu.items()}  # without the warm-up
    floor = samples["floor"]
    rows = [
        compare("cold_start: --list-plugins --json", samples["list"], floor, target=2.0,
                note="baseline = python importing pluggy and scanning the zpi.plugins "
                "entry points"),
        compare("cold_start: --list-plugins --json, one Claude plugin folder",
                samples["list_claude"], floor, target=2.0),
        compare("cold_start: one-turn scripted `run`, whole process", samples["run"], floor,
                target=2.5),
        compare("cold_start: `zpi-host --version`, whole process", samples["version"],
                samples["bare"], target=1.5, note="baseline = python -c pass"),
        compare("cold_start: `zpi-host --help`, whole process", samples["help"],
                samples["bare"], target=1.5),
        compare("cold_start: the installed script's own imports "
                f"(`{script_imports(zpi_host)}`)", samples["wrapper"], samples["bare"],
                target=None),
        compare("cold_start (CPU time): `zpi-host --version`", cpu["version"], cpu["bare"],
                target=None),
        compare("cold_start (CPU time): `zpi-host --help`", cpu["help"], cpu["bare"],
                target=None),
        *(compare(f"cold_start (CPU time): {what}", cpu[name], cpu["floor"], target=None,
                  note="for information: user + system time of the same runs, which other "
                  "load on a shared machine changes less than wall time" if name == "list"
                  else "")
          for name, what in (("list", "--list-plugins --json"),
                             ("list_claude", "--list-plugins --json, one Claude plugin folder"),
                             ("run", "one-turn scripted `run`"))),
    ]
    emit(rows, "cold_start")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
