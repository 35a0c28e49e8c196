"""The peer: one two-turn session, ``zpi-host run`` against the Claude Code CLI.

Both run the same session as whole processes against the loopback Anthropic-format server
(``zpi_host.testing.ModelServer``, a fresh one per run, in this process): the prompt, a
first model turn that reads one 200-line file with the agent's own read tool (zpi's ``read``,
Claude Code's ``Read``), and a second turn that answers text. Each run is checked: exactly the
scripted requests were made, the read's result went back to the model without an error, and
the answer was printed. zpi also asks for a session title after the exchange (its default
``builtins:title`` service; Claude Code's ``-p`` mode does not): the server answers that
third request too, and it counts on zpi's side.

- wall time of the whole process, zpi / Claude Code (target <= 0.5);
- peak RSS, zpi / Claude Code (target <= 0.3): ``ru_maxrss``, the largest resident set of
  the process (or of a child it waited for), taken through ``_measure.MeasuredProcess`` so it
  is the command's own and not this benchmark's.

The sides alternate, ``--rounds`` times, after a warm-up round. Both get a fresh temporary
``HOME`` (Claude Code keeps its settings and transcripts there; zpi its agent dir), a dummy
API key, ``ANTHROPIC_BASE_URL`` pointing at the loopback server, and no other environment
but ``PATH`` and ``LANG``; Claude Code also gets the variables that switch off its
telemetry, error reporting, update checks and other non-essential traffic.

Claude Code's binary ships in the ``claude-agent-sdk`` wheel. Unless ``--claude PATH`` names
one, the benchmark uses the binary extracted into the cache (``--cache``, default
``~/.cache/zpi-bench``), fetching the wheel once with ``pip download --no-deps
claude-agent-sdk`` (about 180 MB; it says so first). When that fails it prints a
``BENCH-SKIP`` line and exits 0. ``--quick`` never downloads: it skips unless the binary is
already there. Not run in CI.

    python benchmarks/peer_claude_code.py [--rounds 10] [--quick] [--claude PATH] [--cache DIR]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _measure import SKIP_PREFIX, MeasuredProcess, arguments, compare, emit, interleave

from zpi_host.testing.model_server import ModelServer

WALL_TARGET = 0.5
RSS_TARGET = 0.3
MODEL = "claude-sonnet-4-5"
PROMPT = "What is on the first line of notes.txt?"
ANSWER = "The first line of notes.txt says: line 1 of the notes."
FILE_LINES = 200
WHEEL_MEMBER = "claude_agent_sdk/_bundled/claude"
TIMEOUT = 120.0
#: switch off what Claude Code would otherwise send to the network besides the model requests
CLAUDE_QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "DISABLE_COST_WARNINGS": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
}


class Skip(Exception):
    """The peer cannot be run here; the message says why."""


# ------------------------------------------------------------------------ the peer's binary


def claude_binary(cache: Path, explicit: str | None, may_fetch: bool) -> Path:
    """The Claude Code executable: ``explicit``, else the one extracted into ``cache``, else
    extracted from a wheel fetched into ``cache`` (only when ``may_fetch``)."""
    if explicit:
        path = Path(explicit).expanduser()
        if not os.access(path, os.X_OK):
            raise Skip(f"--claude {path} is not an executable file")
        return path
    extracted = sorted(cache.glob("claude-*/claude"))
    if extracted:
        return extracted[-1]
    wheels = sorted(cache.glob("claude_agent_sdk-*.whl"))
    if not wheels:
        if not may_fetch:
            raise Skip(f"Claude Code is not in {cache} and --quick never downloads it; run "
                       f"without --quick once to fetch it")
        wheels = [fetch_wheel(cache)]
    return extract(wheels[-1], cache)


def fetch_wheel(cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    print(f"fetching Claude Code: pip download --no-deps claude-agent-sdk into {cache} "
          f"(about 180 MB, once)", flush=True)
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                           "--only-binary=:all:", "claude-agent-sdk", "-d", str(cache)],
                          capture_output=True, text=True, timeout=900, check=False)
    wheels = sorted(cache.glob("claude_agent_sdk-*.whl"))
    if done.returncode != 0 or not wheels:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise Skip(f"could not fetch the claude-agent-sdk wheel (pip: {last})")
    return wheels[-1]


def extract(wheel: Path, cache: Path) -> Path:
    """The bundled binary of ``wheel``, extracted once into ``cache/claude-VERSION/``."""
    version = wheel.name.split("-")[1]
    target = cache / f"claude-{version}" / "claude"
    try:
        with zipfile.ZipFile(wheel) as archive:
            if WHEEL_MEMBER not in archive.namelist():
                raise Skip(f"{wheel.name} holds no {WHEEL_MEMBER} (no build for this platform?)")
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".partial")
            with archive.open(WHEEL_MEMBER) as source, open(partial, "wb") as sink:
                shutil.copyfileobj(source, sink, 1 << 20)
    except zipfile.BadZipFile as exc:
        raise Skip(f"{wheel} is not a readable wheel ({exc}); delete it and run again") from exc
    partial.chmod(0o755)
    partial.replace(target)
    return target


# ------------------------------------------------------------------------------ one run


class Side:
    """One agent CLI running the session: its command, environment and scripted turns."""

    def __init__(self, name: str, command: list[str], env: dict[str, str],
                 turns: list[dict[str, Any]], project: Path) -> None:
        self.name = name
        self.command = command
        self.env = env
        self.turns = turns
        self.project = project
        self.rss_mib: list[float] = []

    def run(self) -> float:
        """Run the session once; returns its wall time (seconds), keeps its peak RSS."""
        with ModelServer(self.turns) as server, tempfile.TemporaryFile() as out, \
                tempfile.TemporaryFile() as err:
            env = {**self.env, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.port}"}
            process = MeasuredProcess(self.command, cwd=self.project, env=env,
                                      stdin=subprocess.DEVNULL, stdout=out, stderr=err)
            watchdog = threading.Timer(TIMEOUT, process.kill)
            watchdog.start()
            # the launcher times the command from its fork to its exit, and gives its own peak
            finished = process.wait()
            watchdog.cancel()
            out.seek(0)
            err.seek(0)
            self.check(finished.returncode, out.read(), err.read(), server)
        self.rss_mib.append(finished.peak_rss / (1 << 20))
        return finished.seconds

    def check(self, code: int, out: bytes, err: bytes, server: ModelServer) -> None:
        problem = None
        if code != 0:
            problem = f"exit status {code}"
        elif ANSWER not in out.decode(errors="replace"):
            problem = "the answer is not in its output"
        elif len(server.requests) != len(self.turns):
            problem = f"{len(server.requests)} model requests, {len(self.turns)} scripted"
        else:
            results = [block for message in server.requests[1].json["messages"]
                       if isinstance(message.get("content"), list)
                       for block in message["content"] if block.get("type") == "tool_result"]
            if len(results) != 1 or results[0].get("is_error"):
                problem = f"the read's result is not one successful tool result: {results}"
            elif "line 1 of the notes" not in json.dumps(results[0]):
                problem = "the read's result does not hold the file"
        if problem:
            raise SystemExit(f"{self.name}: {problem}\nstdout: {out[-2000:]!r}\n"
                             f"stderr: {err[-2000:]!r}")


# ------------------------------------------------------------------------------- sides


def sides(root: Path, claude: Path) -> dict[str, Side]:
    project = root / "project"
    project.mkdir()
    (project / "notes.txt").write_text("".join(f"line {n} of the notes.\n"
                                               for n in range(1, FILE_LINES + 1)))
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": os.environ.get("LANG", "C.UTF-8"), "ANTHROPIC_API_KEY": "sk-ant-bench-dummy"}
    homes = {name: root / f"home-{name}" for name in ("zpi", "claude")}
    for home in homes.values():
        home.mkdir()
    zpi_env = {**base, "HOME": str(homes["zpi"]), "ZPI_AGENT_DIR": str(homes["zpi"] / ".zpi")}
    claude_env = {**base, **CLAUDE_QUIET_ENV, "HOME": str(homes["claude"])}
    zpi_host = shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))
    answer = {"text": ANSWER}
    return {
        "zpi": Side("zpi-host run",
                    [zpi_host, "run", "--model", f"anthropic:{MODEL}", "--output-format", "json",
                     PROMPT], zpi_env,
                    [{"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
                     answer, {"text": "First line of notes"}], project),
        "claude": Side("claude -p",
                       [str(claude), "-p", PROMPT, "--model", MODEL, "--output-format", "json",
                        "--allowedTools", "Read", "--max-turns", "4"], claude_env,
                       [{"tool_calls": [{"name": "Read", "arguments":
                                         {"file_path": str(project / "notes.txt")}}]},
                        answer], project),
    }


def main() -> int:
    args = arguments("peer_claude_code", __doc__, rounds=10, quick={"rounds": 1}, options=[
        ("--claude", {"metavar": "PATH", "help": "the Claude Code binary to run"}),
        ("--cache", {"metavar": "DIR", "default": str(Path.home() / ".cache" / "zpi-bench"),
                     "help": "where the claude-agent-sdk wheel and its binary are kept"}),
    ])
    try:
        claude = claude_binary(Path(args.cache).expanduser(), args.claude,
                               may_fetch=not args.quick)
    except Skip as exc:
        print(f"{SKIP_PREFIX}peer_claude_code: {exc}", flush=True)
        return 0
    version = subprocess.run([str(claude), "--version"], capture_output=True, text=True,
                             env={**CLAUDE_QUIET_ENV, "PATH": os.environ.get("PATH", "")},
                             timeout=60, check=False).stdout.strip().removesuffix(" (Claude Code)")
    print(f"peer: Claude Code {version or '(version unknown)'} at {claude}", flush=True)
    with tempfile.TemporaryDirectory(prefix="zpi-bench-peer-") as tmp:
        both = sides(Path(tmp), claude)
        runs: dict[str, Callable[[], float]] = {name: side.run for name, side in both.items()}
        samples = interleave(runs, args.rounds)
    warm = args.rounds  # the warm-up round's RSS is dropped like its time
    rss = {name: side.rss_mib[-warm:] for name, side in both.items()}
    emit([
        compare("peer_claude_code: two-turn session, wall time", samples["zpi"],
                samples["claude"], target=WALL_TARGET,
                note=f"baseline = Claude Code {version or '?'} (claude -p) on the same session"),
        compare("peer_claude_code: two-turn session, peak RSS", rss["zpi"], rss["claude"],
                unit="MiB", scale=1.0, target=RSS_TARGET),
    ], "peer_claude_code")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
