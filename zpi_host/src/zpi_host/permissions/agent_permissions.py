"""An agent definition's own ``permissions`` (the ai-zen form), and permission as disclosure.

A definition may carry ``permissions`` with four independent dimensions, ``tools``,
``skills``, ``mcps`` and ``subagents``, each ``{"allow": [...]}`` or ``{"deny": [...]}``.
Names match exactly or with ``*``: tools by name (in either spelling, ``bash`` or ``Bash``),
skills by id, MCP servers by name (a tool ``mcp__server__tool`` belongs to ``server`` and is
judged by ``mcps`` alone), sub-agent types by name. A dimension left out denies all of it; no
match denies. Each agent's permissions are its own: a sub-agent is judged by its own
definition, never its parent's. A definition without ``permissions`` has none of these limits.

What a session denies outright, the model never sees (:func:`denied_outright`): a bare deny
rule (``bash``, ``skill:review``, ``agent:explorer``), not one with a pattern
(``bash(rm:*)``), which leaves the tool visible and decides per call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Literal

import attrs

from ..support.attrs_methods import FrozenFieldsEq
from .errors import PermissionConfigError
from .rules import Dimension, PermissionRules, Rule
from .toolnames import same_tool

AgentDimension = Literal["tools", "skills", "mcps", "subagents"]
AGENT_DIMENSIONS: tuple[AgentDimension, ...] = ("tools", "skills", "mcps", "subagents")
MCP_PREFIX = "mcp__"


class AgentPermissionsError(PermissionConfigError):
    """A definition's ``permissions`` that cannot be used; the message names the definition."""


@lru_cache(maxsize=256)
def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(p) for p in name.split("*")))


@attrs.frozen(repr=False, eq=False, slots=False)
class Grant(FrozenFieldsEq):
    """One dimension: the names it allows (``kind`` allow) or denies (``kind`` deny)."""

    kind: Literal["allow", "deny"]
    names: tuple[str, ...]

    def admits(self, *candidates: str) -> bool:
        hit = any(_pattern(n).fullmatch(c) for n in self.names for c in candidates)
        return hit if self.kind == "allow" else not hit


@attrs.frozen(repr=False, eq=False, slots=False)
class AgentPermissions(FrozenFieldsEq):
    """The four dimensions of one definition (``owner`` names it, for messages)."""

    owner: str
    grants: Mapping[str, Grant] = attrs.field(factory=dict)

    def admits(self, dimension: AgentDimension, name: str) -> bool:
        """Whether ``name`` of ``dimension`` is granted; a left-out dimension grants nothing."""
        grant = self.grants.get(dimension)
        if grant is None:
            return False
        return grant.admits(*same_tool(name)) if dimension == "tools" else grant.admits(name)

    def admits_tool(self, name: str) -> bool:
        """A tool by ``tools``; an MCP tool (``mcp__server__tool``) by ``mcps`` on its server."""
        server = mcp_server_of(name)
        return self.admits("mcps", server) if server is not None else self.admits("tools", name)


def mcp_server_of(tool_name: str) -> str | None:
    """``server`` of ``mcp__server__tool``, or None for a tool that is not an MCP tool."""
    if not tool_name.startswith(MCP_PREFIX):
        return None
    server, sep, _ = tool_name[len(MCP_PREFIX):].partition("__")
    return server if sep and server else None


def parse_agent_permissions(value: Any, owner: str) -> AgentPermissions | None:
    """A definition's ``permissions`` value (None: the key is absent). Raises
    :class:`AgentPermissionsError` naming ``owner`` and what to write instead."""
    if value is None:
        return None
    example = 'e.g. permissions: {tools: {allow: ["read", "grep"]}, skills: {deny: ["*"]}}'
    if not isinstance(value, Mapping):
        raise AgentPermissionsError(f"{owner}: permissions must be a mapping of "
                                    f"{', '.join(AGENT_DIMENSIONS)}; {example}")
    unknown = sorted(str(k) for k in value if k not in AGENT_DIMENSIONS)
    if unknown:
        raise AgentPermissionsError(f"{owner}: unknown permissions dimension(s) "
                                    f"{', '.join(unknown)}; known: {', '.join(AGENT_DIMENSIONS)}")
    grants: dict[str, Grant] = {}
    for dimension, entry in value.items():
        where = f"{owner}: permissions.{dimension}"
        if not isinstance(entry, Mapping) or not entry:
            raise AgentPermissionsError(f"{where} must be {{allow: [...]}} or {{deny: [...]}}")
        kinds = sorted(str(k) for k in entry)
        if kinds == ["allow", "deny"]:
            raise AgentPermissionsError(f"{where} has both allow and deny; give one of them "
                                        "(allow lists what the agent gets, deny what it lacks)")
        if len(kinds) != 1 or kinds[0] not in ("allow", "deny"):
            raise AgentPermissionsError(f"{where}: unknown key(s) {', '.join(kinds)}; use "
                                        "allow or deny")
        kind = kinds[0]
        names = entry[kind]
        if isinstance(names, str) or not isinstance(names, Sequence) or not all(
                isinstance(n, str) and n for n in names):
            raise AgentPermissionsError(f"{where}.{kind} must be a list of names (exact, or "
                                        f"with * as a wildcard), got {names!r:.80}")
        grants[dimension] = Grant(kind, tuple(names))  # type: ignore[arg-type]
    return AgentPermissions(owner, grants)


def denied_outright(rules: PermissionRules, dimension: Dimension, name: str) -> Rule | None:
    """The deny rule without a pattern that names ``name`` (every call of it is denied, so
    the model is not shown it), or None."""
    return next((r for r in rules.deny if r.dimension == dimension and r.argument is None
                 and r.matches_name(name)), None)
