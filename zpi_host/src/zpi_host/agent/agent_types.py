"""The agent types a session can start as sub-agents: what the system prompt lists (the
``builtins:subagents`` service) at every start, apart from running them
(:mod:`.subagents`, imported when a sub-agent starts). Importable from :mod:`.subagents` too."""

from __future__ import annotations

from typing import Any

import attrs

from ..support.attrs_methods import FrozenFieldsEq

__all__ = ["GENERAL_PURPOSE", "GENERAL_PURPOSE_DESCRIPTION", "AgentType", "agent_types"]

GENERAL_PURPOSE = "general-purpose"
GENERAL_PURPOSE_DESCRIPTION = ("a general agent with the session's own tools and instructions, "
                               "for research and multi-step tasks")


@attrs.frozen(repr=False, eq=False, slots=False)
class AgentType(FrozenFieldsEq):
    """What the model is told about one agent type; ``tools`` None: the session's."""

    name: str
    description: str
    tools: tuple[str, ...] | None = None


def agent_types(resources: Any) -> list[AgentType]:
    """Every agent type a session with ``resources`` (its ResourceLoader, or None) can start:
    ``general-purpose`` first (a definition of that name replaces the built-in one), then the
    loaded definitions in search order. A type the session withholds (``resources.hides``:
    denied outright, or not granted by the main agent's definition) is not there."""
    agents = {a.name: a for a in (resources.agents if resources is not None else ())}
    general = agents.pop(GENERAL_PURPOSE, None)
    first = AgentType(GENERAL_PURPOSE, GENERAL_PURPOSE_DESCRIPTION) if general is None else \
        AgentType(general.name, general.description, general.tools)
    hides = getattr(resources, "hides", None)
    listed = [] if callable(hides) and hides("agent", GENERAL_PURPOSE) else [first]
    return listed + [AgentType(a.name, a.description, a.tools) for a in agents.values()]
