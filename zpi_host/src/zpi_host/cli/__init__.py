"""The ``zpi-host`` command: argument parsing and dispatch; each command lives in its own module.

Imports stay lazy: ``--version`` must not import pluggy, and ``--list-plugins`` must not
import httpx, anyio or cattrs.
"""

from __future__ import annotations

import os
import sys

from .exits import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CliUsageError,
    print_error,
)
from .startup import import_plugin_modules, pause_gc, resume_gc

TYPE_CHECKING = False  # not ``typing``'s: ``--version`` and ``--help`` import no more than this
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

DISTRIBUTIONS = ("zpi-host", "zpi-builtins", "zpi-compat-claude", "zpi-compat-zcode")


LISTING_FLAGS = frozenset({"--list-plugins", "--json", "--strict", "--wide"})
LISTING_OPTIONS = ("--cwd", "--plugin-dir", "--zcode-plugin-dir")  # each takes a value


def extract_plugin_options(argv: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """Pull every ``-p no:NAME`` (blocks the plugin NAME) and ``-p MODULE`` (loads the module
    MODULE as a plugin for this command, as pytest's ``-p`` does) out of ``argv``, wherever
    they stand (also ``-pno:NAME``). Returns (blocked names, modules, remaining arguments)."""
    blocked: list[str] = []
    modules: list[str] = []
    rest: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        if arg == "-p" or (arg.startswith("-p") and not arg.startswith("--")):
            if arg == "-p":
                if i + 1 >= len(args):
                    raise CliUsageError("-p needs a value: -p no:NAME blocks the plugin NAME, "
                                        "-p MODULE loads the module MODULE as a plugin")
                value, i = args[i + 1], i + 2
            else:
                value, i = arg[2:], i + 1
            if value.startswith("no:"):
                if not value[3:]:
                    raise CliUsageError("-p no: needs a plugin name: -p no:NAME")
                blocked.append(value[3:])
            elif value and all(part.isidentifier() for part in value.split(".")):
                modules.append(value)
            else:
                raise CliUsageError(f"-p {value}: expected no:NAME (block a plugin) or a "
                                    "module name such as my_plugin or pkg.plugin")
            continue
        rest.append(arg)
        i += 1
    return blocked, modules, rest


def listing_arguments(args: Sequence[str]) -> dict[str, list[str]] | None:
    """The flags and options of a plain ``--list-plugins`` command line (each option and its
    value as two words), so that it needs no parser; None for anything else."""
    found: dict[str, list[str]] = {name: [] for name in (*LISTING_FLAGS, *LISTING_OPTIONS)}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in LISTING_FLAGS:
            found[arg].append(arg)
            i += 1
        elif arg in LISTING_OPTIONS and i + 1 < len(args) and not args[i + 1].startswith("-"):
            found[arg].append(args[i + 1])
            i += 2
        else:
            return None
    return found if found["--list-plugins"] else None


def versions() -> list[tuple[str, str]]:
    """Installed zpi distributions and their versions (no pluggy import; ``importlib.metadata``
    only for a distribution that is not found in a folder of ``sys.path``)."""
    from ..support.distinfo import installed_versions

    found = installed_versions(DISTRIBUTIONS)
    return [(name, ver) for name in DISTRIBUTIONS if (ver := found[name]) is not None]


#: the commands, in the order of ``--help``; each is built by ``add_NAME_parser`` of ``.NAME``
COMMANDS = ("run", "prompt", "chat", "sessions", "models", "mcp", "init-agent-dir",
            "completion")

#: each command's line in the top-level ``--help``, as its ``add_NAME_parser`` gives it (a test
#: compares them), so that ``zpi-host --help`` imports none of the command modules
COMMAND_SUMMARIES = {
    "run": "run the agent on a prompt",
    "prompt": "print the system prompt and tools a run would use (no model call)",
    "chat": "an interactive session (also: zpi-host alone, on a terminal)",
    "sessions": "list, show, rename, tag, fork or delete saved sessions",
    "models": "list configured models and whether they have credentials",
    "mcp": "MCP servers: list them with their status and tools",
    "init-agent-dir": "write the default settings, agents and skills where absent",
    "completion": "print a shell completion script (bash, zsh, fish)",
}
TOP_HELP = (["--help"], ["-h"])  # a command line that shows the top-level help alone


def given_command(args: Sequence[str]) -> str | None:
    """The command named in ``args`` when it can be told without the parser (the first word
    that is not an option or the value of a top-level option); None otherwise, and for a
    top-level ``--help`` (which lists every command)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("--", "-h", "--help"):
            return None
        if arg in LISTING_OPTIONS:
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        return arg if arg in COMMANDS else None
    return None


def build_parser(only: str | None = None, *, summary: bool = False):  # type: ignore[no-untyped-def]
    """The parser of every command, or with ``only``: of that command in full and of the
    others as placeholders, so a command's start does not import and build the options of
    the four others (a command not told in advance gets the full parser); with ``summary``
    every command is a placeholder with its line of the top-level help (``zpi-host --help``
    alone)."""
    import argparse
    from importlib import import_module

    parser = argparse.ArgumentParser(
        prog="zpi-host",
        description="A plugin-driven host for coding agents.",
        epilog="-p no:NAME (repeatable, any position) blocks the plugin NAME for this command;\n"
               "-p MODULE loads the Python module MODULE as a plugin for this command.\n\n"
               "examples:\n  zpi-host                          # a chat, on a terminal\n"
               "  zpi-host run \"fix the typo in greet.py\" --permission-mode acceptEdits\n"
               "  zpi-host --list-plugins\n  zpi-host sessions list\n"
               "  source <(zpi-host completion bash)\n\n"
               "zpi-host COMMAND --help shows each command's options and examples.",
        formatter_class=_summary_formatter() if summary else argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="store_true",
                        help="print the versions of the installed zpi distributions")
    parser.add_argument("--list-plugins", action="store_true",
                        help="list every plugin: where it came from, its hooks, what it "
                             "contributes, its status")
    parser.add_argument("--json", action="store_true", help="with --list-plugins: JSON output")
    parser.add_argument("--wide", action="store_true",
                        help="with --list-plugins on a terminal: every column on one line, "
                             "however wide (default: fit the terminal's width)")
    parser.add_argument("--strict", action="store_true",
                        help="with --list-plugins: exit 1 when a plugin failed to load; with "
                             "a command: a plugin that fails to load is an error")
    parser.add_argument("--cwd", default=None, metavar="DIR",
                        help="the project directory, for every command (default: current)")
    parser.add_argument("--plugin-dir", action="append", default=[], metavar="DIR",
                        help="with --list-plugins or a command: also load the plugin folder DIR "
                             "(ZCode's when it has .zcode-plugin/, else Claude Code's)")
    parser.add_argument("--zcode-plugin-dir", action="append", default=[], metavar="DIR",
                        help="with --list-plugins or a command: also load DIR as a ZCode plugin "
                             "folder")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if summary:
            commands.add_parser(name, help=COMMAND_SUMMARIES[name], add_help=False)
        elif only is None or name == only:
            module = name.replace("-", "_")
            adder = getattr(import_module(f".{module}", __name__), f"add_{module}_parser")
            adder(commands)
        else:  # stands in for a command not given: any arguments, nothing imported
            placeholder = commands.add_parser(name, add_help=False)
            placeholder.add_argument("unparsed", nargs=argparse.REMAINDER)
    return parser


def _summary_formatter() -> Any:
    """argparse's formatter of the top-level help at the width it would pick itself
    (``shutil.get_terminal_size``, read here as shutil reads it: importing shutil is a tenth
    of ``zpi-host --help``)."""
    import argparse
    import functools

    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return functools.partial(argparse.RawDescriptionHelpFormatter, width=columns - 2)


def parse(parser: Any, args: list[str]) -> Any:
    """Parse ``args``; an unknown flag is reported with the usage of the innermost command
    given (``zpi-host sessions list --bogus``: that of ``sessions list``), where argparse
    would print the top-level usage."""
    namespace, unknown = parser.parse_known_args(args)
    if unknown:
        _innermost(parser, namespace).error(f"unrecognized arguments: {' '.join(unknown)}")
    return namespace


def _innermost(parser: Any, namespace: Any) -> Any:
    import argparse

    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
                   None)
        chosen = None if sub is None else getattr(namespace, sub.dest, None)
        if sub is None or chosen not in sub.choices:
            return parser
        parser = sub.choices[chosen]


def _escape_unencodable_output() -> None:
    """Text that cannot be encoded (a lone surrogate a model or a file sent) is printed as a
    backslash escape instead of ending the command with a traceback."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    if sys.platform == "win32":  # POSIX only: process groups, signals, fcntl locks
        print("zpi-host supports POSIX systems (Linux, macOS); on Windows use WSL",
              file=sys.stderr)
        return EXIT_FAILED
    _escape_unencodable_output()
    pause_gc()
    try:
        code = _main(argv)
        sys.stdout.flush()  # here, not at exit: a reader that left is handled below
        return code
    except KeyboardInterrupt:  # Ctrl-C outside a run (a run handles its own: cli/signals.py)
        print("zpi-host: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _stdout_gone()
    finally:
        resume_gc()


def _asks_for_something(args: Any) -> bool:
    """Whether top-level flags alone ask for something (a listing, the versions)."""
    return bool(args.version or args.list_plugins)


def _on_a_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def _stdout_gone() -> int:
    """The reader of stdout left (``zpi-host ... | head``): no traceback, and no second error
    when Python flushes stdout at exit."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def _main(argv: Sequence[str] | None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    try:
        blocked, modules, rest = extract_plugin_options(args_in)
    except CliUsageError as exc:
        print_error(exc)
        return EXIT_USAGE
    if rest == ["--version"]:  # fast path: no parser, no pluggy
        for name, ver in versions():
            print(f"{name} {ver}")
        return EXIT_OK
    if rest in TOP_HELP:  # no command module imported: it prints the same (a test compares)
        resume_gc()
        parse(build_parser(summary=True), rest)
    listing = None if modules else listing_arguments(rest)
    if listing is not None:  # fast path: no parser
        from .list_plugins import list_plugins

        cwd = listing["--cwd"]
        return list_plugins(blocked, as_json=bool(listing["--json"]),
                            strict=bool(listing["--strict"]), cwd=cwd[-1] if cwd else None,
                            wide=bool(listing["--wide"]),
                            plugin_dirs=listing["--plugin-dir"],
                            zcode_plugin_dirs=listing["--zcode-plugin-dir"])
    only = given_command(rest)
    parser = None
    args = _quick_run_arguments(rest) if only == "run" else None
    if args is None:
        parser = build_parser(only)
        args = parse(parser, rest)
        if only is not None and args.command != only:  # told wrong: parse again, in full
            parser = build_parser()
            args = parse(parser, rest)
    if args.command is None and not _asks_for_something(args) and _on_a_terminal():
        args = parse(parser, [*rest, "chat"])  # zpi-host alone on a terminal: a chat
    args.plugin_modules = modules
    if args.command != "run":
        resume_gc()
    if args.version:
        for name, ver in versions():
            print(f"{name} {ver}")
        return EXIT_OK
    try:
        if args.list_plugins:
            from .list_plugins import list_plugins

            return list_plugins(blocked, as_json=args.json, strict=args.strict, cwd=args.cwd,
                                wide=args.wide,
                                plugin_dirs=args.plugin_dir,
                                zcode_plugin_dirs=args.zcode_plugin_dir,
                                modules=import_plugin_modules(modules, args.cwd))
        if args.command == "run":
            from .run import run_command

            return run_command(args, blocked)
        if args.command == "chat":
            from .chat import chat_command

            return chat_command(args, blocked)
        if args.command == "prompt":
            from .prompt import prompt_command

            return prompt_command(args, blocked)
        if args.command == "sessions":
            from .sessions import sessions_command

            return sessions_command(args)
        if args.command == "models":
            from .models import models_command

            return models_command(args, blocked)
        if args.command == "mcp":
            from .mcp import mcp_command

            return mcp_command(args, blocked)
        if args.command == "init-agent-dir":
            from .init_agent_dir import init_agent_dir_command

            return init_agent_dir_command(args)
        if args.command == "completion":
            from .completion import completion_command

            return completion_command(args)
    except CliUsageError as exc:
        print_error(exc)
        return EXIT_USAGE
    (parser or build_parser()).print_help(sys.stderr)
    return EXIT_USAGE


def _quick_run_arguments(rest: list[str]) -> Any:
    """A plain ``run`` command line read without the parser (None: the parser reads it)."""
    from .quick_args import run_arguments

    return run_arguments(rest)
