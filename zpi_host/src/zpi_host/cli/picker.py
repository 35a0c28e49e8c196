"""``-r``/``--resume`` without an ID: pick one of this directory's recent sessions.

On a terminal the recent sessions are listed, numbered, newest first, and the person types a
number (Enter: the newest); without a terminal there is nobody to pick, so the ID is asked
for. Blocking reads, before the event loop starts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TextIO

from ..support.terminal_text import for_terminal
from .exits import CliUsageError
from .quick_args import PICK

#: sessions the picker lists
RECENT = 10


def pick_session(cwd: Path, agent_dir: Path, stdin: TextIO, stderr: TextIO) -> str:
    """The id of the session the person picks among ``cwd``'s recent ones."""
    from ..transcript import list_sessions
    from .sessions import session_line

    if not (_isatty(stdin) and _isatty(stderr)):
        raise CliUsageError("--resume without an ID picks a session on a terminal; here give "
                            "the ID (zpi-host sessions list shows them) or use --continue")
    infos = list_sessions(cwd, agent_dir=agent_dir)[:RECENT]
    if not infos:
        raise CliUsageError(f"no saved sessions for {cwd} to resume; start one with "
                            "zpi-host chat or zpi-host run PROMPT")
    stderr.write("Recent sessions of this directory:\n")
    for number, info in enumerate(infos, 1):
        stderr.write(f"{number:>3}. {for_terminal(session_line(info))}\n")
    while True:
        stderr.write(f"resume which? [1-{len(infos)}, Enter: 1, q: quit] ")
        stderr.flush()
        line = stdin.readline()
        answer = line.strip().lower()
        if not line or answer in ("q", "quit"):
            raise CliUsageError("no session picked")
        if not answer:
            return str(infos[0].session_id)
        if answer.isdigit() and 1 <= int(answer) <= len(infos):
            return str(infos[int(answer) - 1].session_id)
        stderr.write(f"type a number from 1 to {len(infos)}\n")


def resolve_pick(args: Any) -> None:
    """Replace ``args.resume == PICK`` (``-r`` given alone) by the id picked."""
    if getattr(args, "resume", None) != PICK:
        return
    import sys

    from ..session.assembly import resolve_agent_dir

    cwd = Path(args.run_cwd or args.cwd or ".").expanduser().resolve()
    args.resume = pick_session(cwd, resolve_agent_dir(None, os.environ), sys.stdin,
                               sys.stderr)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
