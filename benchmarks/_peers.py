"""What the peer benchmarks share: one agent CLI running a scripted session as a whole process
against a fresh loopback model server, checked and measured, and the interleaved comparison.

A peer benchmark (``peer_claude_code.py``, ``peer_pi.py``) builds two :class:`Side` s, zpi's
and the peer's, over the same project (:func:`make_project`) and script (:func:`two_turns`),
and hands them to :func:`compare_sides`. Each run gets a fresh ``ModelServer``
(``zpi_host.testing.model_server``, Anthropic Messages format, in this process); its
``prepare`` points the command at the server's port (an environment variable, or a settings
file the peer reads). Every run is checked: exactly the scripted requests were made, each
read's result went back to the model without an error and holds its file, and the answer was
printed. The command's wall time and its own peak RSS come from ``_measure.MeasuredProcess``.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from _measure import MeasuredProcess, Row, compare, interleave

from zpi_host.testing.model_server import ModelServer

MODEL = "claude-sonnet-4-5"
PROMPT = "What is on the first line of notes.txt?"
ANSWER = "The first line of notes.txt says: line 1 of the notes."
FILE_LINES = 200
#: what the read of the two-turn session must have sent back to the model
READ_HOLDS = "line 1 of the notes"
TIMEOUT = 120.0
#: zpi asks for a session title after the exchange (its default ``builtins:title`` service)
TITLE_TURN: dict[str, Any] = {"text": "First line of notes"}


class Skip(Exception):
    """The peer cannot be run here; the message says why."""


#: a side's hook before each run: given the model server's port, the environment to add
Prepare = Callable[[int], Mapping[str, str]]


def anthropic_base_url(port: int) -> dict[str, str]:
    """For CLIs that read the Anthropic base URL from the environment (zpi, Claude Code)."""
    return {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"}


class Side:
    """One agent CLI running the session: its command, environment and scripted turns.

    ``reads`` is how many tool results the model must get back (one per read, in order) and
    ``holds`` what each of them must contain."""

    def __init__(self, name: str, command: list[str], env: dict[str, str],
                 turns: list[dict[str, Any]], project: Path, *,
                 prepare: Prepare = anthropic_base_url, answer: str = ANSWER,
                 holds: Sequence[str] = (READ_HOLDS,), timeout: float = TIMEOUT) -> None:
        self.name = name
        self.command = command
        self.env = env
        self.turns = turns
        self.project = project
        self.prepare = prepare
        self.answer = answer
        self.holds = list(holds)
        self.timeout = timeout
        self.rss_mib: list[float] = []
        self.cpu_seconds: list[float] = []

    def run(self) -> float:
        """Run the session once; returns its wall time (seconds), keeps its peak RSS and its
        CPU time."""
        # the check reads the request after the last read; zpi's title request may follow it
        with ModelServer(self.turns, keep_bodies=2) as server, tempfile.TemporaryFile() as out, \
                tempfile.TemporaryFile() as err:
            env = {**self.env, **self.prepare(server.port)}
            process = MeasuredProcess(self.command, cwd=self.project, env=env,
                                      stdin=subprocess.DEVNULL, stdout=out, stderr=err)
            watchdog = threading.Timer(self.timeout, process.kill)
            watchdog.start()
            # the launcher times the command from its fork to its exit, and gives its own peak
            finished = process.wait()
            watchdog.cancel()
            out.seek(0)
            err.seek(0)
            self.check(finished.returncode, out.read(), err.read(), server)
        self.rss_mib.append(finished.peak_rss / (1 << 20))
        self.cpu_seconds.append(finished.cpu_seconds)
        return finished.seconds

    def check(self, code: int, out: bytes, err: bytes, server: ModelServer) -> None:
        problem = None
        if code != 0:
            problem = f"exit status {code}"
        elif self.answer not in out.decode(errors="replace"):
            problem = "the answer is not in its output"
        elif len(server.requests) != len(self.turns):
            problem = f"{len(server.requests)} model requests, {len(self.turns)} scripted"
        else:
            problem = self.check_results(server)
        if problem:
            raise SystemExit(f"{self.name}: {problem}\nstdout: {out[-2000:]!r}\n"
                             f"stderr: {err[-2000:]!r}")

    def check_results(self, server: ModelServer) -> str | None:
        """The request after the last read holds every read's result, each one successful
        and holding its file's text; None when it does."""
        request = server.requests[len(self.holds)].json
        results = [block for message in request["messages"]
                   if isinstance(message.get("content"), list)
                   for block in message["content"] if block.get("type") == "tool_result"]
        if len(results) != len(self.holds) or any(r.get("is_error") for r in results):
            return (f"{len(results)} tool results ({sum(bool(r.get('is_error')) for r in results)}"
                    f" errors), {len(self.holds)} reads scripted: {json.dumps(results)[:500]}")
        for number, (result, text) in enumerate(zip(results, self.holds, strict=True), 1):
            if text not in json.dumps(result):
                return f"read {number}'s result does not hold its file ({text!r})"
        return None


# ------------------------------------------------------------------- the shared session


def make_project(root: Path) -> Path:
    """``root/project`` with the 200-line ``notes.txt`` the two-turn session reads."""
    project = root / "project"
    project.mkdir()
    (project / "notes.txt").write_text("".join(f"line {n} of the notes.\n"
                                               for n in range(1, FILE_LINES + 1)))
    return project


def base_env(home: Path) -> dict[str, str]:
    """The whole environment of a side but what it needs of its own: a fresh ``HOME``."""
    home.mkdir(parents=True, exist_ok=True)
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": os.environ.get("LANG", "C.UTF-8"), "ANTHROPIC_API_KEY": "sk-ant-bench-dummy",
            "HOME": str(home)}


def two_turns(read_call: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The peer's script: the read (``{"name": ..., "arguments": ...}``), then the answer."""
    return [{"tool_calls": [dict(read_call)]}, {"text": ANSWER}]


def zpi_side(root: Path, project: Path, bin_dir: Path,
             turns: list[dict[str, Any]] | None = None, prompt: str = PROMPT,
             **keywords: Any) -> Side:
    """``zpi-host run`` of the session (the one in ``bin_dir``: ``_install.zpi_bin``), in
    its default setup (title service included: its extra request is scripted after
    ``turns``, the two-turn session by default)."""
    home = root / "home-zpi"
    env = {**base_env(home), "ZPI_AGENT_DIR": str(home / ".zpi")}
    zpi_host = str(bin_dir / "zpi-host")
    script = turns if turns is not None else two_turns(
        {"name": "read", "arguments": {"path": "notes.txt"}})
    return Side("zpi-host run", [zpi_host, "run", "--model", f"anthropic:{MODEL}",
                                 "--output-format", "json", prompt],
                env, [*script, TITLE_TURN], project, **keywords)


def compare_sides(name: str, zpi: Side, peer: Side, rounds: int, *, peer_label: str,
                  wall_target: float | None, rss_target: float | None,
                  measure: str = "two-turn session") -> list[Row]:
    """Interleave the two sides (a warm-up round first, not kept); a wall time row and a
    peak RSS row, zpi over the peer, and the CPU time (user + system) for information: on a
    loaded machine it moves less than the wall time."""
    samples = interleave({"zpi": zpi.run, "peer": peer.run}, rounds)
    return [
        compare(f"{name}: {measure}, wall time", samples["zpi"], samples["peer"],
                target=wall_target, note=f"baseline = {peer_label} on the same session"),
        compare(f"{name}: {measure}, peak RSS", zpi.rss_mib[-rounds:], peer.rss_mib[-rounds:],
                unit="MiB", scale=1.0, target=rss_target),
        compare(f"{name}: {measure}, CPU time", zpi.cpu_seconds[-rounds:],
                peer.cpu_seconds[-rounds:]),
    ]
