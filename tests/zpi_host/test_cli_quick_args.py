"""The run command line read without the parser (cli/quick_args.py) gives what the parser
gives, and leaves to the parser everything else."""

from __future__ import annotations

import argparse

import pytest

from zpi_host.cli import build_parser, parse
from zpi_host.cli.quick_args import (
    EXCLUSIVE,
    RUN_DEFAULTS,
    RUN_OPTIONS,
    TOP_FLAGS,
    TOP_OPTIONS,
    run_arguments,
)


def kind_of(action: argparse.Action) -> object:
    if isinstance(action, argparse._StoreTrueAction):
        return "flag"
    if isinstance(action, argparse._AppendAction):
        return "append"
    if action.choices is not None:
        return tuple(action.choices)
    return "int" if action.type is int else "value"


def options_of(parser: argparse.ArgumentParser) -> dict[str, tuple[str, object]]:
    return {option: (action.dest, kind_of(action)) for action in parser._actions
            for option in action.option_strings if option not in ("-h", "--help")}


def run_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["run"]


def test_the_tables_name_every_option_of_the_parser_as_it_reads_it() -> None:
    run = run_parser()
    assert options_of(run) == dict(RUN_OPTIONS)
    defaults = {a.dest: a.default for a in run._actions if a.option_strings and a.dest != "help"}
    expected = {dest: [] if kind == "append" else False if kind == "flag" else None
                for dest, kind in RUN_OPTIONS.values()}
    assert defaults == {**expected, **RUN_DEFAULTS}
    assert [{a.dest for a in g._group_actions} for g in run._mutually_exclusive_groups] == [
        set(EXCLUSIVE)]
    top = options_of(build_parser())
    assert {o: v for o, v in top.items() if v[1] != "flag" or v[0] == "strict"} == dict(
        TOP_OPTIONS)
    assert {v[0] for o, v in top.items() if o not in TOP_OPTIONS} == set(TOP_FLAGS)


#: command lines the quick reading takes (each compared with the parser's reading)
QUICK = [
    ["run", "hello"],
    ["run"],
    ["run", "--model", "scripted:x.jsonl", "hello"],
    ["run", "hello", "--model=openai:gpt", "--max-turns", "3", "--verbose"],
    ["--cwd", "/tmp", "--plugin-dir", "a", "--plugin-dir=b", "--strict", "run", "--strict", "hi"],
    ["run", "--output-format", "stream-json", "--permission-mode=plan", "--allow", "read",
     "--allow", "bash(git:*)", "--deny", "edit", "--add-dir", "d", "--resume", "abc", "p"],
    ["run", "--continue", "--continue", "x"],
    ["run", "--no-session", "--session-store", "sqlite:s.db", "--project-key", "k", "x y"],
    ["run", "--tools", "", "--disallowed-tools=bash,read", "--system-prompt", "S",
     "--append-system-prompt", "A", "--base-url", "http://127.0.0.1:1", "--cwd", "w", "q"],
    ["run", "--zcode-plugin-dir", "z", "--plugin-dir", "p", "--model=", "--max-turns= 7 ", ""],
    ["--zcode-plugin-dir", "z", "run", "--model", "m", "hello=world"],
    ["run", "--permission-mode", "acceptEdits", "x"],
    ["run", "--permission-mode=bypassPermissions", "x"],
]

#: command lines left to the parser
PARSER = [
    ["run", "--help"], ["run", "-h"], ["--help"], ["run", "--mod", "x", "hi"],
    ["run", "--model", "--verbose"], ["run", "--model"], ["run", "a", "b"],
    ["run", "--max-turns", "two", "x"], ["run", "--output-format", "xml", "x"],
    ["run", "--resume", "a", "--continue", "x"], ["run", "--verbose=1", "x"],
    ["run", "-"], ["run", "--", "-x"], ["run", "-5"], ["--json", "run", "x"],
    ["--version", "run"], ["--cwd", "run", "run", "x"], ["models"], ["run", "--bogus", "x"],
    ["--list-plugins", "run"], ["run", "--model", "-x", "hi"], ["--cwd", "d"],
]


@pytest.mark.parametrize("args", QUICK, ids=" ".join)
def test_a_plain_run_line_is_read_as_the_parser_reads_it(args: list[str]) -> None:
    quick = run_arguments(args)
    assert quick is not None
    assert vars(quick) == vars(parse(build_parser(), list(args)))


@pytest.mark.parametrize("args", PARSER, ids=" ".join)
def test_anything_else_is_left_to_the_parser(args: list[str]) -> None:
    assert run_arguments(args) is None


def test_the_cli_modes_are_claude_codes_and_the_old_names_stay_aliases() -> None:
    from zpi_host.cli.quick_args import MODE_ALIASES, PERMISSION_MODES
    from zpi_host.cli.run import session_kwargs
    from zpi_host.permissions.modes import CLAUDE_MODES

    assert (*CLAUDE_MODES, *MODE_ALIASES) == PERMISSION_MODES
    kinds = {}
    for mode in PERMISSION_MODES:
        chosen = session_kwargs(run_arguments(["run", "--permission-mode", mode,
                                               "--allow", "read", "x"]))
        kinds[mode] = (chosen["permission_mode"], chosen["allow"])
    assert kinds == {"default": ("ask", ["read"]), "ask": ("ask", ["read"]),
                     "acceptEdits": ("ask", ["edit", "write", "notebook_edit", "batch_edit",
                                             "read"]),
                     "plan": ("plan", ["read"]), "bypassPermissions": ("bypass", ["read"]),
                     "bypass": ("bypass", ["read"])}
    unset = session_kwargs(run_arguments(["run", "x"]))
    # no mode given: the settings choose, and their "default" (or none) is the CLI's: ask
    assert (unset["permission_mode"], unset["permission_default"]) == (None, "ask")
