"""How a rule's argument pattern meets a call's arguments, for tools that are not file tools.

Shell tools (``COMMAND_ARGUMENTS``, ``bash`` by default) match their command with Claude-style
prefixes (``git status:*``) and globs (``npm run *``) against every simple command the line
runs, as :mod:`.shell` reads it: an allow rule must match each of them, a deny or ask rule any
of them, and what cannot be seen counts as a match for deny and ask rules, never for allow
rules. Every other tool matches a canonical argument string (``canonical_argument``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import shell


def _parse_line(command: str) -> shell.ShellLine:
    """:func:`.shell.parse_line`, imported on first use: only a bash rule needs the parser
    (tree-sitter), so a session without one does not import it."""
    from .shell import parse_line

    return parse_line(command)


def _program_name(word: str) -> str:
    from .wrappers import program_name

    return program_name(word)


#: Shell tools: tool name -> the argument holding the command line. Rules for these tools match
#: the command (prefix ``git status:*``, glob ``npm run *``); extend it for your own shell tool.
COMMAND_ARGUMENTS: dict[str, str] = {"bash": "command"}

#: Other tools whose rules match one argument's value instead of the whole input, e.g. a tool
#: registering ``{"fetch": "url"}`` so that ``fetch(https://docs.*)`` works; or a function of
#: the input giving the subjects a rule may match, alternatives (a rule matches when it
#: matches one): ``builtins:web`` gives ``("https://example.com/x", "domain:example.com")``
#: so that both ``web_fetch(domain:example.com)`` and ``web_fetch(https://example.com/*)`` work.
RuleSubjects = Callable[[Mapping[str, Any]], Sequence[str]]
RULE_ARGUMENTS: dict[str, str | RuleSubjects] = {}


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

    ``strict`` (allow rules): the rule must match every simple command the line runs (see
    :func:`cover_command`). Otherwise (deny and ask rules): it matches when it may match any
    simple command the line runs, or when some of what the line runs cannot be seen. A
    pattern without ``*`` that equals the whole line always matches.
    """
    if _names_line(pattern, command):
        return True
    if strict:
        return cover_command([pattern], command) is not None
    line = _parse_line(command)
    if next(line.unknowns(), None) is not None:
        return True
    return _may_match_line(_deny_form(pattern), line) or \
        _command_regex(pattern).fullmatch(normalize_command(command)) is not None


def unseen_note(pattern: str, command: str) -> str:
    """For a deny or ask rule that matched ``command``: "" when it matched a command the line
    visibly runs, else a note saying what could not be seen (for the reason text)."""
    if _names_line(pattern, command):
        return ""
    line = _parse_line(command)
    why = next(line.unknowns(), None)
    if why is None or _may_match_line(_deny_form(pattern), line):
        return ""
    return (f" (the command cannot be fully checked: {why}; a rule that may match what it "
            "cannot see counts as matching)")


def cover_command(patterns: Sequence[str], command: str) -> list[int] | None:
    """Indexes of ``patterns`` (allow rules) that together cover ``command``, or None: every
    simple command the line runs must be matched by one of them, a line with something the
    rules cannot see is never covered, and a pattern without ``*`` naming the exact line
    covers it."""
    for i, pattern in enumerate(patterns):
        if _names_line(pattern, command):
            return [i]
    used: list[int] = []
    return used if _allowed_line(patterns, _parse_line(command), used) else None


def _names_line(pattern: str, command: str) -> bool:
    return "*" not in pattern and normalize_command(command) == normalize_command(pattern)


def _allowed_line(patterns: Sequence[str], line: shell.ShellLine, used: list[int]) -> bool:
    if line.unknown is not None or line.quoted_code or not line.invocations:
        return False
    return all(_allowed_invocation(patterns, inv, used) for inv in line.invocations)


def _allowed_invocation(patterns: Sequence[str], inv: shell.Invocation, used: list[int]
                        ) -> bool:
    for n, view in enumerate(inv.views[:inv.allow_views]):
        text = _text((*inv.assignments, *view) if n == 0 else view)
        for i, pattern in enumerate(patterns):
            if _command_regex(pattern).fullmatch(text):
                used.append(i)
                return True
    if inv.unknown is not None or inv.script is None or not inv.script_allowable:
        return False
    return _allowed_line(patterns, inv.script, used)


def _may_match_line(pattern: str, line: shell.ShellLine) -> bool:
    if any(_may_match_line(pattern, code) for code in line.quoted_code):
        return True
    for inv in line.invocations:
        if any(_may_match(pattern, _text(view, basename=True)) for view in inv.views):
            return True
        if any(_may_match_line(pattern, inner) for inner in (inv.script, *inv.extras)
               if inner is not None):
            return True
    return False


#: Stands for a word known only at run time in the text a pattern is matched with.
RUNTIME = "\x00"
_LONGEST_TEXT = 4096


def _text(view: Sequence[shell.Word], *, basename: bool = False) -> str:
    """A simple command as the text a pattern is matched with: its words joined by spaces,
    :data:`RUNTIME` for a word known only at run time; with ``basename`` the program by its
    name alone (``/bin/rm`` → ``rm``)."""
    words = [RUNTIME if w is None else w for w in view]
    if basename and words and words[0] != RUNTIME:
        words[0] = _program_name(words[0])
    return normalize_command(" ".join(words))


def _deny_form(pattern: str) -> str:
    """A deny or ask pattern with its program by name alone: ``/bin/rm:*`` also denies
    ``rm``."""
    pattern = normalize_command(pattern)
    program, space, rest = pattern.partition(" ")
    if "/" in program and not program.endswith(":*"):
        return _program_name(program) + space + rest
    if program.endswith(":*") and "/" in program:
        return _program_name(program[:-2]) + ":*" + space + rest
    return pattern


def _may_match(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches ``text`` for some value of its run-time words."""
    if RUNTIME not in text:
        return _command_regex(pattern).fullmatch(text) is not None
    if len(text) > _LONGEST_TEXT:  # what is cut may be anything: still a safe answer
        text = text[:_LONGEST_TEXT] + RUNTIME
    if pattern.endswith(":*") or pattern.endswith(" *"):
        prefix = pattern[:-2].rstrip()
        return _globs_meet(prefix, text) or _globs_meet(prefix + " *", text)
    return _globs_meet(pattern, text)


def _globs_meet(glob: str, template: str) -> bool:
    """Whether some string matches both ``glob`` (``*``: any characters) and ``template``
    (:data:`RUNTIME`: any characters): the positions of ``glob`` reachable after each
    character of ``template``."""
    end = len(glob)

    def closure(states: set[int]) -> set[int]:
        todo, seen = list(states), set()
        while todo:
            i = todo.pop()
            if i not in seen:
                seen.add(i)
                if i < end and glob[i] == "*":
                    todo.append(i + 1)
        return seen

    states = closure({0})
    for char in template:
        if not states:
            return False
        if char == RUNTIME:
            states = closure(set(range(min(states), end + 1)))
        else:
            states = closure({i + 1 for i in states if i < end and glob[i] == char}
                             | {i for i in states if i < end and glob[i] == "*"})
    return end in states


def value_matches(pattern: str, value: str, *, prefix: bool = True) -> bool:
    """A glob (``*`` = anything) over a whole string. With ``prefix`` (command, skill and
    agent arguments) a pattern ending in ``:*`` or `` *`` also matches the bare prefix."""
    if prefix:
        return _command_regex(pattern).fullmatch(value) is not None
    return re.fullmatch(_glob_anything(pattern), value, re.DOTALL) is not None


def canonical_argument(tool_name: str, arguments: Mapping[str, Any]) -> str:
    """What an argument pattern of a tool that is neither a file nor a shell tool matches: the
    value of its ``RULE_ARGUMENTS`` entry (a string as is, anything else as JSON), else the
    whole input as compact JSON with sorted keys (``{"a":1,"b":"x"}``); for a function entry,
    the first subject it gives."""
    return rule_subjects(tool_name, arguments)[0]


def rule_subjects(tool_name: str, arguments: Mapping[str, Any]) -> tuple[str, ...]:
    """What argument patterns of the tool may match (at least one string): the subjects its
    ``RULE_ARGUMENTS`` function gives, else :func:`canonical_argument`'s one string."""
    key = RULE_ARGUMENTS.get(tool_name)
    if callable(key):
        return tuple(key(arguments)) or ("",)
    return (_canonical(key, arguments),)


def _canonical(key: str | None, arguments: Mapping[str, Any]) -> str:
    if key is not None:
        value = arguments.get(key, "")
        return value if isinstance(value, str) else _json(value)
    return _json(arguments)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


def suggest_command_rules(tool_name: str, command: str) -> list[str]:
    """Rules a user might add to allow this command: ``bash(git push:*)`` per simple command
    it runs (the first two words, or one when the second is an option or a path)."""
    rules: list[str] = []
    for assignments, view in _allow_views(_parse_line(command)):
        words = [w for w in view if w is not None]
        if not words or view[0] is None or None in assignments:
            continue
        keep = words[:2] if len(words) > 1 and re.fullmatch(r"[A-Za-z][\w.-]*", words[1]) \
            else words[:1]
        keep = [str(a) for a in assignments] + keep
        rule = f"{tool_name}({normalize_command(' '.join(keep))}:*)"
        if "*" not in " ".join(keep) and "(" not in " ".join(keep) and rule not in rules:
            rules.append(rule)
    return rules


def _allow_views(line: shell.ShellLine
                 ) -> list[tuple[tuple[shell.Word, ...], tuple[shell.Word, ...]]]:
    """The innermost view of each invocation an allow rule may judge it by, with the
    assignments an allow rule must name with it."""
    views: list[tuple[tuple[shell.Word, ...], tuple[shell.Word, ...]]] = []
    for inv in line.invocations:
        if inv.script is not None and inv.script_allowable and inv.script.invocations:
            views += _allow_views(inv.script)
        else:
            last = inv.allow_views - 1
            views.append((inv.assignments if last == 0 else (), inv.views[last]))
    return views
