"""``zpi-host run`` command lines read without building the argument parser.

Importing ``argparse`` and building the parser of ``run`` (its options, their help, the
formatter each option checks itself with, which imports ``shutil``) cost more than a tenth of
what a one-turn run spends before the model is asked. A plain command line (the exact
option names, their values, one prompt) is read here into the namespace the parser would
give; anything else (an abbreviation, ``--help``, a value that looks like an option, a
wrong value, two prompts, ``--``) returns None and goes to the parser, which reads it or
explains what is wrong. ``tests/zpi_host/test_cli_quick_args.py`` checks that both read the
same command lines alike and that the tables below name every option of the parser.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

OUTPUT_FORMATS = ("text", "json", "stream-json")
#: what ``-r`` alone leaves in ``args.resume``: pick one (cli/picker.py; never a session id:
#: ids are UUIDs)
PICK = "?pick"
#: the CLI's older names, kept so scripts that pass them work: the same as these modes
MODE_ALIASES = {"ask": "default", "bypass": "bypassPermissions"}
#: ``--permission-mode``: Claude Code's names (permissions/modes.py: CLAUDE_MODES), then the
#: aliases
PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", *MODE_ALIASES)

#: option -> (destination, kind): "flag" (store_true), "value", "int", "append", or a tuple of
#: the values allowed
Options = Mapping[str, tuple[str, Any]]

#: the top-level options a run's command line may give before ``run``
TOP_OPTIONS: Options = {
    "--strict": ("strict", "flag"), "--cwd": ("cwd", "value"),
    "--plugin-dir": ("plugin_dir", "append"), "--zcode-plugin-dir": ("zcode_plugin_dir", "append"),
}
#: the top-level flags a run never gives (they ask for something else): False
TOP_FLAGS = ("version", "list_plugins", "json", "wide")

#: the options of ``run`` (cli/run.py: add_run_parser)
RUN_OPTIONS: Options = {
    "--model": ("model", "value"), "--cwd": ("run_cwd", "value"),
    "--system-prompt": ("system_prompt", "value"),
    "--append-system-prompt": ("append_system_prompt", "value"),
    "--tools": ("tools", "value"), "--disallowed-tools": ("disallowed_tools", "value"),
    "--agent": ("agent", "value"),
    "--plugin-dir": ("run_plugin_dir", "append"), "--strict": ("run_strict", "flag"),
    "--zcode-plugin-dir": ("run_zcode_plugin_dir", "append"), "--base-url": ("base_url", "value"),
    "--trust-project": ("trust_project", "flag"),
    "--mcp-config": ("mcp_config", "append"), "--strict-mcp-config": ("strict_mcp_config", "flag"),
    "--max-turns": ("max_turns", "int"), "--image": ("images", "append"),
    "--output-format": ("output_format", OUTPUT_FORMATS),
    "--verbose": ("verbose", "flag"), "--permission-mode": ("permission_mode", PERMISSION_MODES),
    "--allow": ("allow", "append"), "--deny": ("deny", "append"),
    "--add-dir": ("add_dir", "append"), "--resume": ("resume", "value"),
    "-r": ("resume", "value"), "--continue": ("continue_recent", "flag"),
    "-c": ("continue_recent", "flag"), "--no-session": ("no_session", "flag"),
    "--session-store": ("session_store", "value"), "--project-key": ("project_key", "value"),
}
#: defaults other than False (flags), None (values) and [] (lists)
RUN_DEFAULTS = {"output_format": "text"}
#: at most one of these (a mutually exclusive group of the parser)
EXCLUSIVE = frozenset({"resume", "continue_recent", "no_session"})


def _defaults(options: Options) -> dict[str, Any]:
    kinds = {"flag": False, "append": None}
    return {dest: [] if kind == "append" else kinds.get(kind) if isinstance(kind, str) else None
            for dest, kind in options.values()}


def _read(options: Options, args: Sequence[str], into: dict[str, Any],
          positional: list[str] | None) -> bool:
    """Read ``args`` into ``into``; the words that are not options go to ``positional`` (None:
    there must be none). False for anything the parser should read."""
    given: set[str] = set()
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("-"):
            if positional is None:
                return False
            positional.append(arg)
            continue
        name, equals, value = arg.partition("=")
        if name not in options:
            return False  # --help, an abbreviation, "-", "--", an unknown option
        dest, kind = options[name]
        if kind == "flag":
            if equals:
                return False
            into[dest] = True
        else:
            if not equals:
                if i >= len(args) or args[i].startswith("-"):
                    return False
                value, i = args[i], i + 1
            if kind == "append":
                into[dest].append(value)
            elif kind == "int":
                try:
                    into[dest] = int(value)
                except ValueError:
                    return False
            elif kind == "value" or value in kind:
                into[dest] = value
            else:
                return False
        given.add(dest)
    return len(given & EXCLUSIVE) <= 1


def run_arguments(args: Sequence[str]) -> SimpleNamespace | None:
    """The namespace the parser gives for ``args`` (top-level options, ``run``, its options
    and prompt), or None when the parser must read them."""
    if "run" not in args:
        return None
    at = list(args).index("run")
    top = {**_defaults(TOP_OPTIONS), **dict.fromkeys(TOP_FLAGS, False)}
    run = {**_defaults(RUN_OPTIONS), **RUN_DEFAULTS}
    prompts: list[str] = []
    if not _read(TOP_OPTIONS, args[:at], top, None) or not _read(
            RUN_OPTIONS, args[at + 1:], run, prompts) or len(prompts) > 1:
        return None
    return SimpleNamespace(**top, command="run", prompt=prompts[0] if prompts else None, **run)
