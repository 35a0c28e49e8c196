"""Sub-agent definitions given in code: claude-agent-sdk's ``AgentDefinition`` and its
mapping onto the kernel's (``create_session(agents=...)``, see
:mod:`zpi_host.session.subagents`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ..errors import UsageError
from ..support.attrs_methods import FieldsEq
from .unsupported import UnsupportedOptionError, is_unset

__all__ = ["AgentDefinition", "kernel_agents"]


@attrs.define(repr=False, eq=False, slots=False)
class AgentDefinition(FieldsEq):
    """claude-agent-sdk's sub-agent definition (``AgentOptions.agents``): ``description`` says
    when to use it, ``prompt`` is its system prompt, ``tools`` the tools it may use (None: the
    session's), ``model`` a catalog name or ``PROVIDER:MODEL`` (None or ``"inherit"``: the
    session's), ``mcpServers`` MCP servers its sub-agents get besides (names of the
    session's servers, or ``{name: config}``). The other fields of claude-agent-sdk are
    refused when set."""

    description: str
    prompt: str
    tools: list[str] | None = None
    disallowedTools: list[str] | None = None
    model: str | None = None
    skills: list[str] | None = None
    memory: str | None = None
    mcpServers: list[Any] | None = None
    initialPrompt: str | None = None
    maxTurns: int | None = None
    background: bool | None = None
    effort: Any = None
    permissionMode: str | None = None


#: AgentDefinition fields this host does not honour
_AGENT_UNSUPPORTED = ("disallowedTools", "skills", "memory", "initialPrompt",
                      "maxTurns", "background", "effort", "permissionMode")


def kernel_agents(agents: Mapping[str, Any] | None) -> list[Any]:
    """``AgentOptions.agents`` as the kernel's definitions; a bad or unsupported one is an
    error naming it."""
    from ..resources import AgentDefinition as KernelDefinition
    from ..resources.items import segment_problem
    from ..resources.rules import Invalid, agent_mcp_servers

    if agents is None:
        return []
    if not isinstance(agents, Mapping):
        raise UsageError(f"agents must map agent names to AgentDefinition, got "
                         f"{type(agents).__name__}")
    out = []
    for name, given in agents.items():
        definition = AgentDefinition(**given) if isinstance(given, Mapping) else given
        if not isinstance(definition, AgentDefinition) and not all(
                hasattr(definition, f) for f in ("description", "prompt")):
            raise UsageError(f"agents[{name!r}] must be an AgentDefinition, got "
                             f"{type(given).__name__}")
        problem = segment_problem("agent", name) if isinstance(name, str) else \
            f"agent names must be strings, got {name!r}"
        if problem:
            raise UsageError(f"agents: {problem}")
        for field in _AGENT_UNSUPPORTED:
            if not is_unset(getattr(definition, field, None)):
                raise UnsupportedOptionError("agents", f"agents[{name!r}].{field} is not "
                                                       "supported by this host")
        description, prompt = definition.description, definition.prompt
        tools, model = getattr(definition, "tools", None), getattr(definition, "model", None)
        if not isinstance(description, str) or not description.strip():
            raise UsageError(f"agents[{name!r}].description must be a non-empty string")
        if not isinstance(prompt, str):
            raise UsageError(f"agents[{name!r}].prompt must be a string")
        if tools is not None and (isinstance(tools, str) or not all(
                isinstance(t, str) for t in tools)):
            raise UsageError(f"agents[{name!r}].tools must be a list of tool names")
        if model is not None and not isinstance(model, str):
            raise UsageError(f"agents[{name!r}].model must be a string")
        try:
            servers = agent_mcp_servers(getattr(definition, "mcpServers", None),
                                        f"agents[{name!r}].mcpServers")
        except Invalid as exc:
            raise UsageError(str(exc)) from None
        out.append(KernelDefinition(name, description, prompt,
                                    tools=tuple(tools) if tools is not None else None,
                                    model=model, origin="sdk option agents",
                                    mcp_servers=servers))
    return out
