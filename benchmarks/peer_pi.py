"""The peer: ``zpi-host run`` against the pi coding agent (``pi -p``), the same session.

Both run as whole processes against the loopback Anthropic Messages server
(``zpi_host.testing.ModelServer``, a fresh one per run, in this process; the running and
checking is ``_peers.py``'s, shared with ``peer_claude_code.py``). pi reaches it as a custom
provider: its fresh ``HOME`` holds ``~/.pi/agent/models.json`` naming a provider ``loopback``
(``api: anthropic-messages``, ``baseUrl`` the server, a dummy ``apiKey``, one model), and it
runs ``pi -p PROMPT --model loopback/MODEL`` with its default tools and ``PI_OFFLINE=1`` (its
switch for no start-up network traffic: update checks, telemetry). zpi gets
``ANTHROPIC_BASE_URL`` and runs ``zpi-host run --model anthropic:MODEL`` in its default setup;
it also asks for a session title after the exchange (its default ``builtins:title``
service; ``pi -p`` does not): the server answers that request too, and it counts on zpi's
side. Both tools' ``read`` take a ``path``, so both sides get the very same script.

The session (default): the prompt, a first model turn that reads one 200-line file, a second
that answers text (target P1: wall <= 0.2x, peak RSS <= 0.2x). ``--turns N`` (P9: 1,000):
turns 1..N-1 each read a file of its own of about 4 KB (``long_session.write_files``: no
two results alike), turn N answers; each turn reports 1,200 input tokens, far below either
tool's context window, and pi's compaction is switched off in its settings as well, so
neither compacts: the whole history stays, the worst case (target: peak RSS <= 0.4x; the
wall time is printed for information, the in-process server parses every request body).
Each run is checked: exactly the scripted requests were made, the request after the last
read holds every read's result, none an error, each holding its file, and the answer was
printed. Wall time, CPU time (user + system; printed for information, a loaded machine
disturbs it less) and the command's own peak RSS come from ``_measure.MeasuredProcess``; the
sides alternate, ``--rounds`` times, after a warm-up round (``--turns 1000 --rounds 3``
takes about five minutes).

pi is the npm package ``@mariozechner/pi-coding-agent``, version ``PI_VERSION`` (pinned),
installed once with ``npm install --prefix CACHE/pi-VERSION`` (``--cache``, default
``~/.cache/zpi-bench``; ``--pi PATH`` names another ``pi``). Without npm, or when the
install fails, it prints a ``BENCH-SKIP`` line and exits 0. ``--quick`` never downloads: it
skips unless pi is already there. Not run in CI.

    python benchmarks/peer_pi.py [--rounds 10] [--turns 2] [--quick] [--pi PATH] [--cache DIR]
        [--zpi-env install|current|DIR]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import _install
from _measure import SKIP_PREFIX, Row, arguments, emit
from _peers import (
    MODEL,
    PROMPT,
    Side,
    Skip,
    base_env,
    compare_sides,
    make_project,
    two_turns,
    zpi_side,
)
from long_session import USAGE, write_files

PI_PACKAGE = "@mariozechner/pi-coding-agent"
PI_VERSION = "0.73.1"
WALL_TARGET = 0.2
RSS_TARGET = 0.2
LONG_RSS_TARGET = 0.4
PROVIDER = "loopback"
LONG_PROMPT = "Read each file in turn."
LONG_TIMEOUT = 1800.0
#: pi's documented switch for no start-up network traffic (update checks, telemetry)
PI_QUIET_ENV = {"PI_OFFLINE": "1"}


# ------------------------------------------------------------------------ the peer itself


def pi_binary(cache: Path, explicit: str | None, may_fetch: bool) -> Path:
    """The ``pi`` executable: ``explicit``, else the one installed into ``cache``, else
    installed there with npm now (only when ``may_fetch``)."""
    if explicit:
        path = Path(explicit).expanduser()
        if not os.access(path, os.X_OK):
            raise Skip(f"--pi {path} is not an executable file")
        return path
    prefix = cache / f"pi-{PI_VERSION}"
    binary = prefix / "node_modules" / ".bin" / "pi"
    if binary.exists():
        return binary
    if not may_fetch:
        raise Skip(f"pi {PI_VERSION} is not in {cache} and --quick never downloads it; run "
                   f"without --quick once to install it")
    npm = shutil.which("npm")
    if npm is None:
        raise Skip("npm is not on PATH: pi is installed from npm")
    print(f"installing pi: npm install --prefix {prefix} {PI_PACKAGE}@{PI_VERSION} (once)",
          flush=True)
    try:
        done = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit",
                               "--no-fund", f"{PI_PACKAGE}@{PI_VERSION}"],
                              capture_output=True, text=True, timeout=900, check=False)
    except subprocess.TimeoutExpired as exc:
        raise Skip(f"npm install of {PI_PACKAGE}@{PI_VERSION} took over 900 s") from exc
    if done.returncode != 0 or not binary.exists():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise Skip(f"could not install {PI_PACKAGE}@{PI_VERSION} (npm: {last})")
    return binary


def pi_version(pi: Path) -> str:
    try:
        done = subprocess.run([str(pi), "--version"], capture_output=True, text=True,
                              env={**PI_QUIET_ENV, "PATH": os.environ.get("PATH", ""),
                                   "HOME": tempfile.gettempdir()}, timeout=60, check=False)
    except OSError as exc:
        raise Skip(f"{pi} does not run: {exc}") from exc
    version = (done.stdout.strip() or done.stderr.strip()).removeprefix("pi ")  # to stderr
    if done.returncode != 0 or not version:
        raise Skip(f"{pi} --version failed ({done.returncode}): "
                   f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}; "
                   f"delete its install and run again")
    return version


class PiConfig:
    """pi's agent dir in its fresh ``HOME``: the loopback provider (its port changes every
    run, so ``models.json`` is written before each) and, for the long session, no
    compaction."""

    def __init__(self, home: Path, compaction: bool) -> None:
        self.agent = home / ".pi" / "agent"
        self.agent.mkdir(parents=True)
        if not compaction:
            (self.agent / "settings.json").write_text(
                json.dumps({"compaction": {"enabled": False}}))

    def __call__(self, port: int) -> dict[str, str]:
        (self.agent / "models.json").write_text(json.dumps({"providers": {PROVIDER: {
            "baseUrl": f"http://127.0.0.1:{port}", "api": "anthropic-messages",
            "apiKey": "sk-ant-bench-dummy", "models": [{"id": MODEL}]}}}, indent=2))
        return {}


# ------------------------------------------------------------------------------- sides


def sides(root: Path, pi: Path, turns: int, zpi_bin: Path) -> tuple[Side, Side]:
    project = make_project(root)
    home = root / "home-pi"
    env = {**base_env(home), **PI_QUIET_ENV}
    keywords: dict[str, Any] = {}
    if turns <= 2:
        script = two_turns({"name": "read", "arguments": {"path": "notes.txt"}})
        prompt = PROMPT
    else:
        script = write_files(project, turns)
        answer = f"All {turns - 1} files read."
        script[-1] = {"text": answer, "usage": USAGE}
        prompt = LONG_PROMPT
        keywords = {"answer": answer, "timeout": LONG_TIMEOUT,
                    "holds": [f"turn {n} line 1:" for n in range(1, turns)]}
    peer = Side("pi -p", [str(pi), "-p", prompt, "--model", f"{PROVIDER}/{MODEL}"], env,
                script, project, prepare=PiConfig(home, compaction=turns <= 2), **keywords)
    return zpi_side(root, project, zpi_bin, script, prompt, **keywords), peer


def main() -> int:
    args = arguments("peer_pi", __doc__, rounds=10, quick={"rounds": 1, "turns": 2}, options=[
        ("--turns", {"type": int, "default": 2,
                     "help": "model turns of the session (2; P9 is 1000: all but the last "
                             "read a 4 KB file)"}),
        ("--pi", {"metavar": "PATH", "help": "the pi executable to run"}),
        ("--cache", {"metavar": "DIR", "default": str(Path.home() / ".cache" / "zpi-bench"),
                     "help": "where pi is installed (pi-VERSION/), and zpi's own environment"}),
        _install.OPTION,
    ], minimum={"turns": 2})
    try:
        pi = pi_binary(Path(args.cache).expanduser(), args.pi, may_fetch=not args.quick)
        version = pi_version(pi)
    except Skip as exc:
        print(f"{SKIP_PREFIX}peer_pi: {exc}", flush=True)
        return 0
    print(f"peer: pi {version} at {pi}", flush=True)
    zpi_bin = _install.zpi_bin(args)
    print(_install.describe(zpi_bin), flush=True)
    long = args.turns > 2
    with tempfile.TemporaryDirectory(prefix="zpi-bench-peer-pi-") as tmp:
        zpi, peer = sides(Path(tmp), pi, args.turns, zpi_bin)
        rows: list[Row] = compare_sides(
            "peer_pi", zpi, peer, args.rounds, peer_label=f"pi {version} (pi -p)",
            wall_target=None if long else WALL_TARGET,
            rss_target=LONG_RSS_TARGET if long else RSS_TARGET,
            measure=f"{args.turns:,}-turn session, 4 KB results" if long
            else "two-turn session")
    emit(rows, "peer_pi")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
