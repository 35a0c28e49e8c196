"""Claude Code hook matchers, compiled once per configuration.

Claude's rule: an empty, missing or ``*`` matcher matches everything; a value made only of
letters, digits, ``_``, ``-``, ``,``, ``|`` and spaces is a list of exact names (``Edit|Write``,
``Read, Grep``); anything else is an unanchored regular expression searched in the name
(``Edit.*`` also matches ``NotebookEdit``; ``mcp__.*`` every MCP tool).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from ..records import field, record

_EXACT_LIST = re.compile(r"[A-Za-z0-9_ ,|-]*")
_SPLIT = r"[|,]"  # compiled on first use

MatcherKind = Literal["all", "names", "regex"]


class MatcherError(ValueError):
    """A matcher that is not a valid regular expression; the handlers under it are skipped."""

    def __init__(self, value: str, problem: str) -> None:
        super().__init__(f"matcher {value!r} is not a valid regular expression: {problem}")
        self.value, self.problem = value, problem


@record
class Matcher:
    """One compiled matcher; :meth:`matches` is all a dispatch pays for a group."""

    source: str
    kind: MatcherKind
    names: frozenset[str] = frozenset()
    pattern: re.Pattern[str] | None = None
    #: name -> the other name of the same tool (a regular expression is tried on both)
    aliases: Mapping[str, str] = field(factory=dict, eq=False)

    def matches(self, value: str | None) -> bool:
        """Whether ``value`` (a tool name in Claude's spelling, a source, a trigger, ...) is
        matched. ``None`` (an event without a matcher field) is matched by everything."""
        if self.kind == "all" or value is None:
            return True
        if self.kind == "names":
            return value in self.names
        assert self.pattern is not None
        if self.pattern.search(value) is not None:
            return True
        alias = self.aliases.get(value)
        return alias is not None and self.pattern.search(alias) is not None


MATCH_ALL = Matcher("*", "all")


def compile_matcher(value: str | None, exact: re.Pattern[str] = _EXACT_LIST,
                    aliases: Mapping[str, str] | None = None) -> Matcher:
    """Compile a matcher string; MatcherError when it is an invalid regular expression.
    ``exact``: the characters of a list of exact names (the dialect's); ``aliases``: names
    that mean the same tool (ZCode's ``Agent`` and ``Task``)."""
    if value is None:
        return MATCH_ALL
    text = value.strip()
    if text in ("", "*"):
        return Matcher(value, "all")
    if exact.fullmatch(text):
        names = {part.strip() for part in re.split(_SPLIT, text) if part.strip()}
        if not names:
            return Matcher(value, "all")
        names |= {aliases[name] for name in names if aliases and name in aliases}
        return Matcher(value, "names", names=frozenset(names))
    try:
        pattern = re.compile(value)
    except re.error as exc:
        raise MatcherError(value, str(exc)) from None
    return Matcher(value, "regex", pattern=pattern, aliases=dict(aliases or {}))
