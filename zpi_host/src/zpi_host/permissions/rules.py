"""Permission rules: parsing ``bash(git status:*)``-style strings and finding the rule that
matches a call.

A rule is ``[dimension:]name[(pattern)]``. Names are tool names, case-sensitive, with ``*`` as
a wildcard (``mcp__*``; ``mcp__server`` alone names every tool of that MCP server, as in Claude
Code); a tool rule names the tool in this host's spelling or Claude Code's
(``bash`` or ``Bash``, :mod:`.toolnames`) and matches it under either name. The dimension prefix
(``tool:``, ``command:``, ``skill:``, ``agent:``) chooses what the rule is about; without one a
rule is about tools. What the pattern is compared with depends on the tool: a resolved path for
file tools (``paths.PATH_ARGUMENTS``), the command line for shell tools
(``matching.COMMAND_ARGUMENTS``), a canonical argument string for the rest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import attrs

from ..support.attrs_methods import FieldsEq, FrozenFieldsEq
from . import matching, paths
from .errors import PermissionConfigError
from .toolnames import same_tool

Dimension = Literal["tools", "commands", "skills", "agents"]
DIMENSIONS: tuple[Dimension, ...] = ("tools", "commands", "skills", "agents")
RuleKind = Literal["allow", "deny", "ask"]
RULE_KINDS: tuple[RuleKind, ...] = ("allow", "deny", "ask")

#: The prefix a rule string may start with, and the dimension it selects.
PREFIXES: dict[str, Dimension] = {
    "tool": "tools", "command": "commands", "skill": "skills", "agent": "agents",
}
PREFIX_OF: dict[Dimension, str] = {v: k for k, v in PREFIXES.items()}

_TOOL_NAME = re.compile(r"[A-Za-z0-9_*-]+")
_OTHER_NAME = re.compile(r"[A-Za-z0-9_.:*-]+")
_PREFIX = re.compile(r"([A-Za-z]+):")


class PermissionRuleError(PermissionConfigError):
    """A rule string that does not parse, or two rules that contradict each other."""

    def __init__(self, rule: str, source: str, problem: str) -> None:
        where = f" (from {source})" if source else ""
        super().__init__(f"permission rule {rule!r}{where}: {problem}")
        self.rule, self.source, self.problem = rule, source, problem


@attrs.frozen(repr=False, eq=False, slots=False)
class Rule(FrozenFieldsEq):
    """One parsed rule. ``argument`` None means every call of the named tool (``name`` or
    ``name(*)``). ``text`` and ``source`` say what was written where, for messages."""

    dimension: Dimension
    name: str
    argument: str | None = None
    text: str = attrs.field(default="", eq=False)
    source: str = attrs.field(default="", eq=False)

    def __str__(self) -> str:
        prefix = "" if self.dimension == "tools" else PREFIX_OF[self.dimension] + ":"
        prefix += "/" if self.dimension == "commands" else ""
        return prefix + self.name + ("" if self.argument is None else f"({self.argument})")

    def describe(self) -> str:
        """``rule 'bash(rm:*)' (settings permissions.deny[0])``, for reasons."""
        return f"rule {self.text or str(self)!r}" + (f" ({self.source})" if self.source else "")

    def matches_name(self, name: str) -> bool:
        """Whether the rule names ``name``; a tool rule in any of its spellings
        (``Bash`` names ``bash`` too)."""
        regex = _name_regex(self.name)
        if self.dimension != "tools":
            return regex.fullmatch(_bare(self.dimension, name)) is not None
        if _names_mcp_server(self.name) and name.startswith(f"{self.name}__"):
            return True  # ``mcp__server`` names every tool of that server, as in Claude Code
        return any(regex.fullmatch(n) is not None for n in same_tool(name))

    def matches(self, name: str, arguments: Any, cwd: Path, *, strict: bool) -> bool:
        """Whether this rule covers a call. ``arguments``: the tool's input mapping, or for
        other dimensions the invocation's argument string. ``strict`` is for allow rules:
        every path and every part of a compound command must match."""
        if not self.matches_name(name):
            return False
        if self.argument is None:
            return True
        if self.dimension != "tools":
            return matching.value_matches(self.argument, str(arguments or ""))
        if not isinstance(arguments, Mapping):
            return False
        if name in paths.PATH_ARGUMENTS:
            found = paths.paths_of(name, arguments)
            if not found:
                return False
            if strict:
                return all(self.matches_path(paths.resolve(p, cwd), cwd) for p in found)
            return any(self.matches_path(c, cwd) for p in found for c in (
                paths.resolve(p, cwd), paths.resolve_parent(p, cwd)))
        if name in matching.COMMAND_ARGUMENTS:
            command = arguments.get(matching.COMMAND_ARGUMENTS[name])
            return isinstance(command, str) and matching.command_matches(
                self.argument, command, strict=strict)
        return any(matching.value_matches(self.argument, subject, prefix=False)
                   for subject in matching.rule_subjects(name, arguments))

    def matches_path(self, resolved: Path, cwd: Path) -> bool:
        """Whether this rule's pattern covers an already resolved path (no name check)."""
        return self.argument is not None and paths.path_pattern_matches(
            self.argument, resolved, cwd)


def _bare(dimension: Dimension, name: str) -> str:
    return name.lstrip("/") if dimension == "commands" else name


def _names_mcp_server(name: str) -> bool:
    """``mcp__server`` (no tool part, no wildcard): a rule about all of a server's tools."""
    return name.startswith("mcp__") and "__" not in name[5:] and "*" not in name and \
        len(name) > 5


@lru_cache(maxsize=512)
def _name_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(p) for p in pattern.split("*")))


def parse_rule(text: str, dimension: Dimension = "tools", source: str = "") -> Rule:
    """Parse ``[dimension:]name[(pattern)]``; ``dimension`` applies when there is no prefix.
    Raises :class:`PermissionRuleError` naming the rule, its ``source`` and the problem."""
    if not isinstance(text, str):
        raise PermissionRuleError(repr(text), source, "a rule must be a string such as "
                                  "'bash(git status:*)'")
    if dimension not in DIMENSIONS:
        raise PermissionRuleError(text, source, f"unknown dimension {dimension!r}; "
                                  f"known: {', '.join(DIMENSIONS)}")
    body = text.strip()
    if not body:
        raise PermissionRuleError(text, source, "a rule must not be empty")
    prefix = _PREFIX.match(body)
    if prefix and "(" not in body[:prefix.end()]:
        word = prefix.group(1)
        if word not in PREFIXES and word.rstrip("s") not in PREFIXES:
            raise PermissionRuleError(
                text, source, f"unknown dimension {word!r} before ':'; use one of "
                f"{', '.join(p + ':' for p in PREFIXES)} or none for a tool")
        dimension = PREFIXES.get(word) or PREFIXES[word.rstrip("s")]
        body = body[prefix.end():].strip()
    argument: str | None = None
    open_at = body.find("(")
    if open_at >= 0:
        if not body.endswith(")"):
            raise PermissionRuleError(text, source, "the pattern must be closed by ')' at the "
                                      "end, as in 'bash(git status:*)'")
        argument = body[open_at + 1:-1].strip()
        body = body[:open_at].rstrip()
        if not argument:
            raise PermissionRuleError(text, source, "empty pattern '()'; write the name alone "
                                      "or 'name(*)' for every call")
        if argument in ("*", "**"):
            argument = None
    elif ")" in body:
        raise PermissionRuleError(text, source, "')' without '('")
    name = _bare(dimension, body)
    allowed = _TOOL_NAME if dimension == "tools" else _OTHER_NAME
    if not name or not allowed.fullmatch(name):
        what = ("letters, digits, '_', '-' and '*'" if dimension == "tools"
                else "letters, digits, '_', '-', '.', ':' and '*'")
        raise PermissionRuleError(text, source, f"the name {body!r} may contain only {what}")
    if argument is not None and dimension == "tools" and not _could_be_path_tool(name):
        problem = matching.check_command_pattern(argument)
        if problem and _could_be_command_tool(name):
            raise PermissionRuleError(text, source, problem)
    return Rule(dimension, name, argument, text.strip(), source)


def _cover(rules: list[Rule], parts: Sequence[Any], covers: Callable[[Rule, Any], bool]
           ) -> list[Rule]:
    """Rules covering every part (each part by some rule), or [] if a part is left over."""
    used: list[Rule] = []
    for part in parts:
        rule = next((r for r in rules if covers(r, part)), None)
        if rule is None:
            return []
        if rule not in used:
            used.append(rule)
    return used


def _could_be_path_tool(name: str) -> bool:
    return any(_name_regex(name).fullmatch(s) for t in paths.PATH_ARGUMENTS
               for s in same_tool(t))


def _could_be_command_tool(name: str) -> bool:
    return any(_name_regex(name).fullmatch(s) for t in matching.COMMAND_ARGUMENTS
               for s in same_tool(t))


@attrs.define(repr=False, eq=False, slots=False)
class PermissionRules(FieldsEq):
    """Allow, deny and ask rules of every dimension, in the order they were given."""

    allow: list[Rule] = attrs.field(factory=list)
    deny: list[Rule] = attrs.field(factory=list)
    ask: list[Rule] = attrs.field(factory=list)

    @classmethod
    def build(
        cls,
        settings: Mapping[str, Any] | None = None,
        *,
        allow: Sequence[str] = (),
        deny: Sequence[str] = (),
        ask: Sequence[str] = (),
        option_source: str = "option",
    ) -> PermissionRules:
        """Rules from the ``permissions`` settings object, then from options; validated.

        ``settings`` is the value of the ``permissions`` key. Option rules are named
        ``{option_source} allow[0]`` in messages (the CLI may pass ``--allow``)."""
        rules = cls()
        section = settings or {}
        for kind in RULE_KINDS:
            entries = section.get(kind, [])
            if isinstance(entries, str) or not isinstance(entries, Sequence):
                raise PermissionConfigError(
                    f"setting permissions.{kind} must be a list of rule strings, got "
                    f"{entries!r:.100}")
            for i, entry in enumerate(entries):
                rules.add(kind, parse_rule(entry, source=f"setting permissions.{kind}[{i}]"))
        for kind, entries in (("allow", allow), ("deny", deny), ("ask", ask)):
            if isinstance(entries, str):
                raise PermissionConfigError(
                    f"{option_source} {kind} must be a list of rule strings, got {entries!r}")
            for i, entry in enumerate(entries):
                rules.add(kind, parse_rule(entry, source=f"{option_source} {kind}[{i}]"))
        rules.validate()
        return rules

    def of(self, kind: RuleKind) -> list[Rule]:
        return {"allow": self.allow, "deny": self.deny, "ask": self.ask}[kind]

    def add(self, kind: RuleKind, rule: Rule) -> None:
        """Append ``rule`` unless an equal rule is there already."""
        existing = self.of(kind)
        if rule not in existing:
            existing.append(rule)

    def validate(self) -> None:
        """The same pattern may not be both allowed and denied in one dimension."""
        for rule in self.allow:
            clash = next((d for d in self.deny if d == rule), None)
            if clash is not None:
                raise PermissionRuleError(
                    rule.text or str(rule), rule.source,
                    f"the same pattern is denied by {clash.describe()}; remove one of them "
                    "(deny rules win, so the allow rule could never apply)")

    def find(self, kind: RuleKind, dimension: Dimension, name: str, arguments: Any,
             cwd: Path) -> Rule | None:
        """The first ``kind`` rule of ``dimension`` that matches (allow rules strictly)."""
        strict = kind == "allow"
        return next((r for r in self.of(kind) if r.dimension == dimension
                     and r.matches(name, arguments, cwd, strict=strict)), None)

    def find_allow(self, dimension: Dimension, name: str, arguments: Any, cwd: Path
                   ) -> list[Rule]:
        """The allow rules that together cover a call, or [] when it is not covered. Each path
        of a file tool and each simple command a shell line runs must be covered by some rule
        (not necessarily the same one); a line with something the rules cannot see is covered
        only by a rule without a pattern or naming the exact line."""
        candidates = [r for r in self.allow if r.dimension == dimension and r.matches_name(name)]
        whole = next((r for r in candidates if r.argument is None), None)
        if whole is not None:
            return [whole]
        if dimension != "tools" or not isinstance(arguments, Mapping):
            return [r for r in candidates if r.matches(name, arguments, cwd, strict=True)][:1]
        if name in paths.PATH_ARGUMENTS:
            resolved = [paths.resolve(p, cwd) for p in paths.paths_of(name, arguments)]
            return _cover(candidates, resolved, lambda r, p: r.matches_path(p, cwd))
        if name in matching.COMMAND_ARGUMENTS:
            command = arguments.get(matching.COMMAND_ARGUMENTS[name])
            if not isinstance(command, str):
                return []
            used = matching.cover_command([str(r.argument) for r in candidates], command)
            return [] if used is None else [candidates[i] for i in dict.fromkeys(used)]
        return [r for r in candidates if r.matches(name, arguments, cwd, strict=True)][:1]

    def find_path_allow(self, tool_name: str, resolved: Path, cwd: Path) -> Rule | None:
        """An allow rule for ``tool_name`` whose pattern names this (resolved) path; a rule
        without a pattern does not count: paths outside the workspace must be named."""
        return next((r for r in self.allow if r.dimension == "tools" and r.argument is not None
                     and r.matches_name(tool_name) and r.matches_path(resolved, cwd)), None)

    def unknown_tool_rules(self, tool_names: Iterable[str]) -> list[str]:
        """Warnings for tool rules that match no known tool (tool names are case-sensitive)."""
        names = list(tool_names)
        out: list[str] = []
        for kind in RULE_KINDS:
            for rule in self.of(kind):
                if rule.dimension != "tools" or any(rule.matches_name(n) for n in names):
                    continue
                close = [n for n in names if n.lower() == rule.name.lower()]
                if not close:
                    import difflib  # only to suggest a name

                    close = difflib.get_close_matches(rule.name, names, n=1)
                hint = f"; did you mean {close[0]!r}? (names are case-sensitive)" if close else ""
                out.append(f"{kind} {rule.describe()} names no tool of this session{hint}")
        return out
