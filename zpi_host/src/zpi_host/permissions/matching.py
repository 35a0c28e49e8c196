"""How a rule's argument pattern meets a call's arguments, for tools that are not file tools.

Shell tools (``COMMAND_ARGUMENTS``, ``bash`` by default) match their command with Claude-style
prefixes (``git status:*``) and globs (``npm run *``), aware of ``&&``, ``;``, ``|`` and command
substitution, so that an allow rule for one command does not let a second one ride along.
Every other tool matches a canonical argument string (``canonical_argument``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

#: Shell tools: tool name -> the argument holding the command line. Rules for these tools match
#: the command (prefix ``git status:*``, glob ``npm run *``); extend it for your own shell tool.
COMMAND_ARGUMENTS: dict[str, str] = {"bash": "command"}

#: Other tools whose rules match one argument's value instead of the whole input, e.g. a web
#: fetch tool registering ``{"web_fetch": "url"}`` so that ``web_fetch(https://docs.*)`` works.
RULE_ARGUMENTS: dict[str, str] = {}

# Longest first, so that "&&" is not read as two "&".
_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n", "\r", "$(", "<(", ">(", "(", ")", "`")
_SUBSTITUTION = re.compile(r"\$\(|`|<\(|>\(")
_ASSIGNMENTS = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|\"[^\"]*\"|\S*)\s+)+")


def split_command(command: str) -> list[str]:
    """The simple commands of a shell command line, split at control operators and command
    substitution outside single quotes. Best effort: it is a guard for rules, not a parser."""
    segments: list[str] = []
    buf: list[str] = []
    quote: str | None = None
    depth = 0  # "$(" opened inside double quotes, so that their ")" ends a command
    i, n = 0, len(command)

    def flush() -> None:
        text = "".join(buf).strip()
        if text:
            segments.append(text)
        buf.clear()

    while i < n:
        c = command[i]
        if quote == "'":
            buf.append(c)
            quote = None if c == "'" else quote
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            buf.append(command[i:i + 2])
            i += 2
            continue
        if quote == '"':
            op = next((o for o in ("$(", "`", ")") if command.startswith(o, i)), None)
            if op == ")" and depth == 0:
                op = None
            depth += {"$(": 1, ")": -1}.get(op or "", 0)
        else:
            op = next((o for o in _OPERATORS if command.startswith(o, i)), None)
        if op is not None:
            flush()
            i += len(op)
            continue
        if c == '"':
            quote = None if quote == '"' else '"'
        elif c == "'" and quote is None:
            quote = "'"
        buf.append(c)
        i += 1
    flush()
    return segments


def has_substitution(command: str) -> bool:
    """Whether the command runs other commands through ``$(...)``, backticks or ``<(...)``
    outside single quotes: an allow rule cannot vouch for those."""
    inside_single = False
    for i, c in enumerate(command):
        if c == "'" and not _escaped(command, i):
            inside_single = not inside_single
        elif not inside_single and _SUBSTITUTION.match(command, i) and not _escaped(command, i):
            return True
    return False


def _escaped(text: str, i: int) -> bool:
    backslashes = 0
    while i > 0 and text[i - 1] == "\\":
        backslashes += 1
        i -= 1
    return backslashes % 2 == 1


def normalize_command(command: str) -> str:
    """Whitespace runs become one space, so that ``git  status`` matches ``git status:*``."""
    return " ".join(command.split())


def check_command_pattern(pattern: str) -> str | None:
    """Why a command pattern is malformed, or None."""
    if ":*" in pattern[:-2]:
        return "':*' may only end the pattern (as in 'git status:*')"
    if pattern.endswith(":*") and not pattern[:-2].strip():
        return "':*' needs a command before it (as in 'git status:*')"
    return None


@lru_cache(maxsize=1024)
def _command_regex(pattern: str) -> re.Pattern[str]:
    pattern = normalize_command(pattern) if pattern.strip() else pattern
    prefix: str | None = None
    if pattern.endswith(":*") or pattern.endswith(" *"):
        prefix = pattern[:-2].rstrip()
    if prefix is not None:
        # "git status:*" and "git status *": the command itself, or it followed by arguments
        return re.compile(_glob_anything(prefix) + r"(?:\s.*)?", re.DOTALL)
    return re.compile(_glob_anything(pattern), re.DOTALL)


def _glob_anything(pattern: str) -> str:
    """``*`` matches any characters (including ``/`` and spaces); everything else is literal."""
    return ".*".join(re.escape(part) for part in pattern.split("*"))


def command_matches(pattern: str, command: str, *, strict: bool) -> bool:
    """Whether ``pattern`` matches the shell ``command``.

    ``strict`` (allow rules): every simple command of a compound line must match, and a line
    with command substitution never matches (unless the pattern is the exact line).
    Otherwise (deny and ask rules): the whole line or any simple command in it matches, also
    with leading ``VAR=value`` assignments removed.
    """
    regex = _command_regex(pattern)
    whole = normalize_command(command)
    if "*" not in pattern and whole == normalize_command(pattern):
        return True
    segments = [normalize_command(s) for s in split_command(command)]
    if strict:
        if has_substitution(command) or not segments:
            return False
        return all(regex.fullmatch(s) for s in segments)
    candidates = [whole, *segments]
    candidates += [_ASSIGNMENTS.sub("", s) for s in segments]
    return any(regex.fullmatch(c) for c in candidates if c)


def value_matches(pattern: str, value: str, *, prefix: bool = True) -> bool:
    """A glob (``*`` = anything) over a whole string. With ``prefix`` (command, skill and
    agent arguments) a pattern ending in ``:*`` or `` *`` also matches the bare prefix."""
    if prefix:
        return _command_regex(pattern).fullmatch(value) is not None
    return re.fullmatch(_glob_anything(pattern), value, re.DOTALL) is not None


def canonical_argument(tool_name: str, arguments: Mapping[str, Any]) -> str:
    """What an argument pattern of a tool that is neither a file nor a shell tool matches: the
    value of its ``RULE_ARGUMENTS`` entry (a string as is, anything else as JSON), else the
    whole input as compact JSON with sorted keys (``{"a":1,"b":"x"}``)."""
    key = RULE_ARGUMENTS.get(tool_name)
    if key is not None:
        value = arguments.get(key, "")
        return value if isinstance(value, str) else _json(value)
    return _json(arguments)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


def suggest_command_rules(tool_name: str, command: str) -> list[str]:
    """Rules a user might add to allow this command: ``bash(git push:*)`` per simple command
    (the first two words, or one when the second is an option or a path)."""
    rules: list[str] = []
    for segment in split_command(command) or [command]:
        words = normalize_command(_ASSIGNMENTS.sub("", segment)).split(" ")
        if not words or not words[0]:
            continue
        keep = words[:2] if len(words) > 1 and re.fullmatch(r"[A-Za-z][\w.-]*", words[1]) \
            else words[:1]
        rule = f"{tool_name}({' '.join(keep)}:*)"
        if "*" not in " ".join(keep) and rule not in rules:
            rules.append(rule)
    return rules
