"""``zpi-host completion bash|zsh|fish``: a shell completion script, made from the parser.

The commands and options come from the argument parser when the script is printed, so they
never drift from it. Values that change (the saved sessions of the directory, the models of
the catalog) are asked for while completing, through ``zpi-host completion --values KIND``,
which prints one per line and never fails loudly (a broken settings file completes nothing).

Install: ``source <(zpi-host completion bash)`` in ``~/.bashrc``; ``zpi-host completion zsh >
"${fpath[1]}/_zpi-host"`` (with ``compinit``); ``zpi-host completion fish >
~/.config/fish/completions/zpi-host.fish``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from .exits import EXIT_OK

SHELLS = ("bash", "zsh", "fish")
VALUE_KINDS = ("sessions", "models")
#: options whose value is a directory or a file (completed by the shell's own)
PATH_OPTIONS = ("--cwd", "--plugin-dir", "--zcode-plugin-dir", "--add-dir", "--image",
                "--mcp-config")
#: options whose value is asked for with ``--values``
DYNAMIC = {"--resume": "sessions", "-r": "sessions", "--model": "models"}

EXAMPLES = """examples:
  source <(zpi-host completion bash)        # bash, e.g. in ~/.bashrc
  zpi-host completion zsh > "${fpath[1]}/_zpi-host"
  zpi-host completion fish > ~/.config/fish/completions/zpi-host.fish"""


def add_completion_parser(commands: Any) -> None:
    completion = commands.add_parser(
        "completion", help="print a shell completion script (bash, zsh, fish)",
        description="Print the completion script of SHELL: commands, options, their "
                    "choices, and while completing the saved sessions and the models.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    completion.add_argument("shell", nargs="?", choices=SHELLS, help="the shell")
    completion.add_argument("--values", choices=VALUE_KINDS, default=None,
                            help=argparse.SUPPRESS)  # what the scripts call while completing


def completion_command(args: Any) -> int:
    from .exits import CliUsageError

    if args.values is not None:
        for value in completion_values(args.values, args.cwd):
            print(value)
        return EXIT_OK
    if args.shell is None:
        raise CliUsageError("completion needs a shell: zpi-host completion bash|zsh|fish")
    from . import build_parser

    tree = command_tree(build_parser())
    script = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}[args.shell](tree)
    sys.stdout.write(script)
    return EXIT_OK


# ---------------------------------------------------------------------------- the parser

class Option:
    """One option as the scripts need it."""

    def __init__(self, action: argparse.Action) -> None:
        self.names = [o for o in action.option_strings if o not in ("-h",)]
        self.takes_value = action.nargs != 0 and not isinstance(
            action, argparse._StoreTrueAction | argparse._StoreFalseAction |
            argparse._HelpAction | argparse._CountAction)
        self.choices = [str(c) for c in action.choices] if action.choices else []
        text = action.help if isinstance(action.help, str) else ""
        self.help = " ".join(text.split("(")[0].split())[:70] if text else ""


def command_tree(parser: argparse.ArgumentParser) -> dict[str, list[Option]]:
    """``{"": top-level options, "run": its options, "sessions list": ..., ...}``."""
    tree: dict[str, list[Option]] = {}

    def walk(prefix: str, p: argparse.ArgumentParser) -> None:
        tree[prefix] = [Option(a) for a in p._actions if a.help is not argparse.SUPPRESS
                        and (a.option_strings or (a.choices and not isinstance(
                            a, argparse._SubParsersAction)))]
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(f"{prefix} {name}".strip(), sub)

    walk("", parser)
    return tree


def _subcommands(tree: dict[str, list[Option]], prefix: str) -> list[str]:
    depth = len(prefix.split()) + 1 if prefix else 1
    return [key.split()[-1] for key in tree if key and len(key.split()) == depth
            and key.startswith(f"{prefix} ".lstrip() if prefix else "")]


def _words(options: list[Option]) -> list[str]:
    """The options' names, and the choices of positional arguments (``completion SHELL``)."""
    return [word for option in options for word in (option.names or option.choices)]


# ---------------------------------------------------------------------------- the scripts

def bash_script(tree: dict[str, list[Option]]) -> str:
    """A bash completion function: words and values after the last space typed (so model
    names with a colon complete whole), directories for path options."""
    cases = []
    for key, options in tree.items():
        words = [*_subcommands(tree, key), *_words(options)]
        cases.append(f"        {shlex.quote(key or '-')}) opts={shlex.quote(' '.join(words))};;")
    choices = []
    for options in tree.values():
        for option in options:
            if option.choices and option.names:
                pattern = "|".join(option.names)
                choices.append(f"        {pattern}) COMPREPLY=($(compgen -W "
                               f"{shlex.quote(' '.join(option.choices))} -- \"$cur\")); "
                               "return;;")
    paths = "|".join(PATH_OPTIONS)
    commands = "|".join(sorted({k.split()[0] for k in tree if k}))
    return f"""# zpi-host completion for bash: source <(zpi-host completion bash)
_zpi_host() {{
    local line="${{COMP_LINE:0:COMP_POINT}}"
    local cur="${{line##*[[:space:]]}}"
    local before="${{line%"$cur"}}"
    local -a typed
    read -r -a typed <<< "$before"
    local prev="${{typed[${{#typed[@]}}-1]}}"
    local key="" word
    for word in "${{typed[@]:1}}"; do
        case "$word" in -*) continue;; esac
        if [[ -z "$key" ]]; then
            case "$word" in {commands}) key="$word";; esac
        elif [[ "$key" == sessions || "$key" == mcp ]] && [[ "$key" != *" "* ]]; then
            key="$key $word"
        fi
    done
    case "$prev" in
        -r|--resume) _zpi_host_values sessions; return;;
        --model) _zpi_host_values models; return;;
        {paths}) COMPREPLY=($(compgen -f -- "$cur")); return;;
{chr(10).join(dict.fromkeys(choices))}
    esac
    local opts
    case "${{key:--}}" in
{chr(10).join(cases)}
        *) opts="";;
    esac
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}}
_zpi_host_values() {{
    local IFS=$'\\n' value
    local -a found
    found=($(zpi-host completion --values "$1" 2>/dev/null))
    COMPREPLY=()
    for value in "${{found[@]}}"; do
        [[ "$value" == "$cur"* ]] || continue
        if [[ "$cur" == *:* && "$COMP_WORDBREAKS" == *:* ]]; then
            value="${{value#"${{cur%"${{cur##*:}}"}}"}}"  # bash splits words at ':'
        fi
        COMPREPLY+=("$value")
    done
}}
complete -o default -F _zpi_host zpi-host
"""


def zsh_script(tree: dict[str, list[Option]]) -> str:
    """A zsh completion function (compsys: ``compinit`` loaded)."""
    cases = []
    for key, options in tree.items():
        words = [*_subcommands(tree, key), *_words(options)]
        cases.append(f"    {shlex.quote(key or '-')}) opts=({' '.join(map(shlex.quote, words))});;")
    commands = " ".join(sorted({k.split()[0] for k in tree if k}))
    return f"""#compdef zpi-host
# zpi-host completion for zsh: zpi-host completion zsh > "${{fpath[1]}}/_zpi-host"
_zpi_host() {{
  local -a opts values
  local key="" word
  local -a commands=({commands})
  for word in ${{words[2,CURRENT-1]}}; do
    [[ $word == -* ]] && continue
    if [[ -z $key ]]; then
      (( ${{commands[(Ie)$word]}} )) && key=$word
    elif [[ ($key == sessions || $key == mcp) && $key != *" "* ]]; then
      key="$key $word"
    fi
  done
  case $words[CURRENT-1] in
    -r|--resume) values=(${{(f)"$(zpi-host completion --values sessions 2>/dev/null)"}});
      compadd -a values; return;;
    --model) values=(${{(f)"$(zpi-host completion --values models 2>/dev/null)"}});
      compadd -a values; return;;
    {"|".join(PATH_OPTIONS)}) _files; return;;
  esac
  case ${{key:--}} in
{chr(10).join(cases)}
    *) opts=();;
  esac
  compadd -a opts
}}
compdef _zpi_host zpi-host
"""


def fish_script(tree: dict[str, list[Option]]) -> str:
    """``complete`` lines for fish, one per option of each command."""
    lines = ["# zpi-host completion for fish: zpi-host completion fish > "
             "~/.config/fish/completions/zpi-host.fish", "complete -c zpi-host -f"]
    top = _subcommands(tree, "")
    lines.append(f"complete -c zpi-host -n __fish_use_subcommand -a {shlex.quote(' '.join(top))}")
    for key, options in tree.items():
        if not key:
            condition = "__fish_use_subcommand"
        else:
            condition = " && ".join(f"__fish_seen_subcommand_from {w}" for w in key.split())
            subs = _subcommands(tree, key)
            if subs:
                lines.append(f"complete -c zpi-host -n {shlex.quote(condition)} "
                             f"-a {shlex.quote(' '.join(subs))}")
        for option in options:
            parts = [f"complete -c zpi-host -n {shlex.quote(condition)}"]
            if not option.names:  # a positional argument's choices
                lines.append(f"{parts[0]} -a {shlex.quote(' '.join(option.choices))}")
                continue
            for name in option.names:
                parts.append(f"-l {name[2:]}" if name.startswith("--") else f"-s {name[1:]}")
            kind = next((DYNAMIC[n] for n in option.names if n in DYNAMIC), None)
            if kind is not None:
                parts.append(f"-x -a {shlex.quote(f'(zpi-host completion --values {kind})')}")
            elif option.choices:
                parts.append(f"-x -a {shlex.quote(' '.join(option.choices))}")
            elif any(n in PATH_OPTIONS for n in option.names):
                parts.append("-r -F")
            elif option.takes_value:
                parts.append("-x")
            if option.help:
                parts.append(f"-d {shlex.quote(option.help)}")
            lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- values

def completion_values(kind: str, cwd: str | None) -> list[str]:
    """What ``--values KIND`` prints; nothing when it cannot be told (never an error)."""
    try:
        return _find_values(kind, Path(cwd or ".").expanduser().resolve())
    except Exception:  # completing must never print a traceback into the shell
        return []


def _find_values(kind: str, cwd: Path) -> list[str]:
    from ..session.assembly import resolve_agent_dir

    agent_dir = resolve_agent_dir(None, os.environ)
    if kind == "sessions":
        from ..transcript import list_sessions

        return [str(i.session_id) for i in list_sessions(cwd, agent_dir=agent_dir)]
    from ..providers.catalog import list_models
    from ..settings.manager import SettingsManager

    settings = SettingsManager(agent_dir, cwd).snapshot()
    names: list[str] = []
    for entry in list_models(settings):  # the catalog's names, then PROVIDER:MODEL
        names += [entry.name, *entry.aliases, f"{entry.provider}:{entry.model}"]
    return list(dict.fromkeys(names))
