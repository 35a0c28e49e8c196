"""Permission is disclosure: which tools, skills and agent types a session shows its model.

A tool, skill or agent type denied outright (a bare deny rule such as ``bash``,
``skill:review`` or ``agent:explorer``) or not granted by the agent definition's own
``permissions`` is left out of the tools sent to the model, the skill list and the agent-type
list, so the model is never offered what it may not use. Rules with a pattern
(``bash(rm:*)``) keep the tool and decide per call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..errors import UsageError, docs_url
from ..permissions.agent_permissions import (
    AgentPermissions,
    AgentPermissionsError,
    denied_outright,
    parse_agent_permissions,
)
from ..permissions.rules import PermissionRules

KIND_DIMENSIONS = {"skill": ("skills", "skills"), "agent": ("agents", "subagents")}


def owner_of(definition: Any) -> str:
    """``agent 'NAME' (PATH)``: the definition, for messages."""
    where = getattr(definition, "path", None) or f"defined by {definition.origin}"
    return f"agent {definition.name!r} ({where})"


def agent_permissions(definition: Any) -> AgentPermissions | None:
    """The definition's own permissions (None: it has none, today's behaviour). Raises
    AgentPermissionsError naming the definition."""
    if definition is None:
        return None
    return parse_agent_permissions(getattr(definition, "permissions", None), owner_of(definition))


def check_definitions(definitions: Iterable[Any]) -> list[str]:
    """Warnings for definitions whose ``permissions`` cannot be used (each is refused when
    it is started)."""
    out = []
    for definition in definitions:
        try:
            agent_permissions(definition)
        except AgentPermissionsError as exc:
            out.append(f"{exc} (see {docs_url('permissions', 'agent-permissions')})")
    return out


def shown_tools(tools: Sequence[Any], rules: PermissionRules,
                granted: AgentPermissions | None = None) -> list[Any]:
    """``tools`` less those denied outright and those ``granted`` does not grant."""
    return [t for t in tools if denied_outright(rules, "tools", t.name) is None
            and (granted is None or granted.admits_tool(t.name))]


def hidden_resources(rules: PermissionRules, granted: AgentPermissions | None
             ) -> Callable[[str, str], bool]:
    """``(kind, name) -> bool`` for :meth:`ResourceLoader.withhold`: skills and agent types
    denied outright or not granted."""
    def hides(kind: str, name: str) -> bool:
        rule_dimension, agent_dimension = KIND_DIMENSIONS.get(kind, (None, None))
        if rule_dimension is None or agent_dimension is None:
            return False
        if denied_outright(rules, rule_dimension, name) is not None:  # type: ignore[arg-type]
            return True
        return granted is not None and not granted.admits(agent_dimension, name)  # type: ignore[arg-type]

    return hides


def main_agent(resources: Any, name: str | None) -> Any:
    """The definition chosen as the session's main agent (``agent=``, ``--agent``), or None.
    Raises UsageError for an unknown name or permissions that cannot be used."""
    if name is None:
        return None
    definition = resources.agent(name)
    if definition is None:
        known = ", ".join(a.name for a in resources.agents) or "none"
        raise UsageError(f"agent {name!r} is not defined (agent definitions: {known}); add "
                         f"agents/{name}.md to the agent dir or the project's .zpi folder "
                         f"(see {docs_url('permissions', 'agent-permissions')})")
    try:
        agent_permissions(definition)
    except AgentPermissionsError as exc:
        raise UsageError(str(exc)) from None
    return definition
