"""``zpi-host init-agent-dir``: set up the agent directory (default settings, agent
definitions, the hand-off skill), and the same, quietly, at the first run of ``run``,
``chat`` and ``prompt`` (see :mod:`zpi_host.session.bootstrap`: nothing the user changed is
overwritten)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .exits import EXIT_FAILED, EXIT_OK, print_error, print_warning


def add_init_agent_dir_parser(commands: Any) -> None:
    import argparse

    parser = commands.add_parser(
        "init-agent-dir", help="write the default settings, agents and skills where absent",
        description="Write the default settings.json (the service presets), the default agent "
                    "definitions and the hand-off skill into the agent directory "
                    "(ZPI_AGENT_DIR, default ~/.zpi/agent), each only when absent. A file "
                    "shipped earlier and not changed since is updated to this version's; a "
                    "file you changed, or one marked metadata.custom, is never touched. "
                    "Running it again changes nothing.",
        epilog="examples:\n  zpi-host init-agent-dir\n"
               "  zpi-host init-agent-dir --agent-dir /tmp/agent --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent-dir", default=None, metavar="DIR",
                        help="the agent directory (default: ZPI_AGENT_DIR, else ~/.zpi/agent)")
    parser.add_argument("--json", dest="as_json", action="store_true",
                        help="one JSON object per file: path, action, reason")


def init_agent_dir_command(args: Any) -> int:
    from ..errors import ZpiError
    from ..session.bootstrap import describe, init_agent_dir
    from ..settings.manager import agent_dir

    directory = Path(args.agent_dir).expanduser().absolute() if args.agent_dir else agent_dir()
    try:
        outcomes = init_agent_dir(directory)
    except (OSError, ZpiError) as exc:
        print_error(exc)
        return EXIT_FAILED
    if args.as_json:
        for outcome in outcomes:
            print(json.dumps(outcome._asdict()))
    else:
        print(f"agent directory {directory}:")
        for line in describe(outcomes):
            print(f"  {line}")
    failed = [o.path for o in outcomes if o.action == "failed"]
    if failed:
        print_error(f"{', '.join(failed)} could not be set up (see above); fix what the "
                    f"reason names and run zpi-host init-agent-dir again")
        return EXIT_FAILED
    return EXIT_OK


def first_run() -> None:
    """What ``run``, ``chat`` and ``prompt`` do before they assemble a session: the agent
    directory set up at the first run and after an upgrade (one small read otherwise);
    problems are warnings."""
    from ..session.bootstrap import ensure_agent_dir
    from ..settings.manager import agent_dir

    ensure_agent_dir(agent_dir(), print_warning)
