"""The peer: one two-turn session, ``zpi-host run`` against the Claude Code CLI.

Both run the same session as whole processes against the loopback Anthropic-format server
(``zpi_host.testing.ModelServer``, a fresh one per run, in this process; the running and
checking is ``_peers.py``'s, shared with ``peer_pi.py``): the prompt, a
first model turn that reads one 200-line file with the agent's own read tool (zpi's ``read``,
Claude Code's ``Read``), and a second turn that answers text. Each run is checked: exactly the
scripted requests were made, the read's result went back to the model without an error, and
the answer was printed. zpi also asks for a session title after the exchange (its default
``builtins:title`` service; Claude Code's ``-p`` mode does not): the server answers that
third request too, and it counts on zpi's side.

- wall time of the whole process, zpi / Claude Code (target <= 0.35);
- peak RSS, zpi / Claude Code (target <= 0.15): ``ru_maxrss``, the largest resident set of
  the process (or of a child it waited for), taken through ``_measure.MeasuredProcess`` so it
  is the command's own and not this benchmark's;
- for information, CPU time (user + system), zpi / Claude Code: a loaded machine disturbs it
  less than the wall time.

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
        [--zpi-env install|current|DIR]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import _install
from _measure import SKIP_PREFIX, arguments, emit
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

WALL_TARGET = 0.35
RSS_TARGET = 0.15
WHEEL_MEMBER = "claude_agent_sdk/_bundled/claude"
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


# ------------------------------------------------------------------------------- sides


def sides(root: Path, claude: Path, zpi_bin_dir: Path) -> tuple[Side, Side]:
    project = make_project(root)
    claude_env = {**base_env(root / "home-claude"), **CLAUDE_QUIET_ENV}
    return (zpi_side(root, project, zpi_bin_dir),
            Side("claude -p", [str(claude), "-p", PROMPT, "--model", MODEL, "--output-format",
                               "json", "--allowedTools", "Read", "--max-turns", "4"], claude_env,
                 two_turns({"name": "Read",
                            "arguments": {"file_path": str(project / "notes.txt")}}),
                 project))


def main() -> int:
    args = arguments("peer_claude_code", __doc__, rounds=10, quick={"rounds": 1}, options=[
        ("--claude", {"metavar": "PATH", "help": "the Claude Code binary to run"}),
        ("--cache", {"metavar": "DIR", "default": str(Path.home() / ".cache" / "zpi-bench"),
                     "help": "where the claude-agent-sdk wheel and its binary are kept, "
                             "and zpi's own environment"}),
        _install.OPTION,
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
    zpi_bin = _install.zpi_bin(args)
    print(_install.describe(zpi_bin), flush=True)
    with tempfile.TemporaryDirectory(prefix="zpi-bench-peer-") as tmp:
        zpi, claude_side = sides(Path(tmp), claude, zpi_bin)
        rows = compare_sides("peer_claude_code", zpi, claude_side, args.rounds,
                             peer_label=f"Claude Code {version or '?'} (claude -p)",
                             wall_target=WALL_TARGET, rss_target=RSS_TARGET)
    emit(rows, "peer_claude_code")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
