"""The ``zpi-host`` command: argument parsing and dispatch; each command lives in its own module.

Imports stay lazy: ``--version`` must not import pluggy, and ``--list-plugins`` must not
import httpx, anyio or cattrs.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT; a run stopped by SIGTERM exits 143 (cli/signals.py)
DISTRIBUTIONS = ("zpi-host", "zpi-builtins", "zpi-compat-claude", "zpi-compat-zcode")


LISTING_FLAGS = frozenset({"--list-plugins", "--json", "--strict"})
LISTING_OPTIONS = ("--cwd", "--plugin-dir", "--zcode-plugin-dir")  # each takes a value


class CliUsageError(Exception):
    """Bad command-line usage (exit 2)."""


def extract_plugin_blocks(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Pull every ``-p no:NAME`` (also ``-pno:NAME``) out of ``argv``, wherever it stands, so that
    it works with every command. Returns (blocked names, remaining arguments)."""
    blocked: list[str] = []
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
                    raise CliUsageError("-p needs a value: -p no:NAME blocks the plugin NAME")
                value, i = args[i + 1], i + 2
            else:
                value, i = arg[2:], i + 1
            if not value.startswith("no:") or not value[3:]:
                raise CliUsageError(
                    f"-p {value}: only -p no:NAME is supported (it blocks the plugin NAME); "
                    "plugins are loaded from installed entry points"
                )
            blocked.append(value[3:])
            continue
        rest.append(arg)
        i += 1
    return blocked, rest


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
    """Installed zpi distributions and their versions (no pluggy import)."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in DISTRIBUTIONS:
        try:
            found.append((name, version(name)))
        except PackageNotFoundError:
            continue
    return found


def build_parser():  # type: ignore[no-untyped-def]
    import argparse

    parser = argparse.ArgumentParser(
        prog="zpi-host",
        description="A plugin-driven host for coding agents.",
        epilog="-p no:NAME (repeatable, any position) blocks the plugin NAME for this command.",
    )
    parser.add_argument("--version", action="store_true",
                        help="print the versions of the installed zpi distributions")
    parser.add_argument("--list-plugins", action="store_true",
                        help="list every plugin: where it came from, its hooks, what it "
                             "contributes, its status")
    parser.add_argument("--json", action="store_true", help="with --list-plugins: JSON output")
    parser.add_argument("--strict", action="store_true",
                        help="with --list-plugins: exit 1 when a plugin failed to load")
    parser.add_argument("--cwd", default=None, help="working directory (default: current)")
    parser.add_argument("--plugin-dir", action="append", default=[], metavar="DIR",
                        help="with --list-plugins: also load the plugin folder DIR (ZCode's when "
                             "it has .zcode-plugin/, else Claude Code's)")
    parser.add_argument("--zcode-plugin-dir", action="append", default=[], metavar="DIR",
                        help="with --list-plugins: also load DIR as a ZCode plugin folder")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    from .models import add_models_parser
    from .run import add_run_parser
    from .sessions import add_sessions_parser

    add_run_parser(commands)
    add_sessions_parser(commands)
    add_models_parser(commands)
    return parser


def _escape_unencodable_output() -> None:
    """Text that cannot be encoded (a lone surrogate a model or a file sent) is printed as a
    backslash escape instead of ending the command with a traceback."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    _escape_unencodable_output()
    # Start-up builds long-lived objects and next to no garbage: no cyclic collections until
    # the work begins (``run`` turns them on once its session is built: cli/run.py).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C outside a run (a run handles its own: cli/signals.py)
        print("zpi-host: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if collecting:
            gc.enable()


def _main(argv: Sequence[str] | None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    try:
        blocked, rest = extract_plugin_blocks(args_in)
    except CliUsageError as exc:
        print(f"zpi-host: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if rest == ["--version"]:  # fast path: no parser, no pluggy
        for name, ver in versions():
            print(f"{name} {ver}")
        return EXIT_OK
    listing = listing_arguments(rest)
    if listing is not None:  # fast path: no parser
        from .list_plugins import list_plugins

        cwd = listing["--cwd"]
        return list_plugins(blocked, as_json=bool(listing["--json"]),
                            strict=bool(listing["--strict"]), cwd=cwd[-1] if cwd else None,
                            plugin_dirs=listing["--plugin-dir"],
                            zcode_plugin_dirs=listing["--zcode-plugin-dir"])
    parser = build_parser()
    args = parser.parse_args(rest)
    if args.version:
        for name, ver in versions():
            print(f"{name} {ver}")
        return EXIT_OK
    try:
        if args.list_plugins:
            from .list_plugins import list_plugins

            return list_plugins(blocked, as_json=args.json, strict=args.strict, cwd=args.cwd,
                                plugin_dirs=args.plugin_dir,
                                zcode_plugin_dirs=args.zcode_plugin_dir)
        if args.command == "run":
            from .run import run_command

            return run_command(args, blocked)
        if args.command == "sessions":
            from .sessions import sessions_command

            return sessions_command(args)
        if args.command == "models":
            from .models import models_command

            return models_command(args, blocked)
    except CliUsageError as exc:
        print(f"zpi-host: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    parser.print_help(sys.stderr)
    return EXIT_USAGE
