"""The MCP servers an agent definition names (Claude Code's ``mcpServers``), for one sub-agent.

A name is one of the session's servers: the sub-agent gets that server's tools over the
session's connection (nothing starts). An object ``{name: config}`` is a server started for the
sub-agent alone, parsed like every entry (:mod:`.mcp_config`), and closed when the sub-agent
ends, as Claude Code does. A project's agent starts inline servers only once the project is
trusted, like the project's other servers. Nothing here imports ``mcp`` unless an inline server
is started.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import attrs

from zpi_host.errors import ZpiError
from zpi_host.settings.mcp_sources import MCP_SOURCES
from zpi_host.support.attrs_methods import FieldsEq

if TYPE_CHECKING:
    from zpi_host.tools import Tool

    from .mcp import McpService

__all__ = ["AgentMcpError", "AgentServers", "agent_servers"]


class AgentMcpError(ZpiError):
    """An agent definition's ``mcpServers`` cannot be given to its sub-agent: the message
    names the agent, the entry and what to change."""


@attrs.define(repr=False, eq=False, slots=False)
class AgentServers(FieldsEq):
    """The tools a sub-agent gets from its definition's servers, and the servers started for
    it alone (closed by :meth:`aclose`)."""

    tools: list[Tool] = attrs.field(factory=list)
    started: McpService | None = None

    async def aclose(self) -> None:
        if self.started is not None:
            await self.started.aclose()
            self.started = None


async def agent_servers(session: Any, agent_type: str) -> AgentServers:
    """The servers of ``agent_type``'s definition for one sub-agent of ``session``; raises
    AgentMcpError (nothing is left running) for a name the session does not have or an
    inline entry that is not valid."""
    definition = session.ports.subagents.definition(agent_type)
    wanted = getattr(definition, "mcp_servers", None)
    if not wanted:
        return AgentServers()
    where = (f"agent {agent_type!r} ({definition.path or definition.origin}) "
             "mcpServers")
    tools = _named_tools(session, [w for w in wanted if isinstance(w, str)], where)
    inline = {k: v for w in wanted if not isinstance(w, str) for k, v in w.items()}
    if not inline:
        return AgentServers(tools)
    started = await _start_inline(session, inline, where, definition.origin, agent_type)
    return AgentServers(tools + started.tools(), started)


def _named_tools(session: Any, names: list[str], where: str) -> list[Tool]:
    if not names:
        return []
    from .mcp import mcp_service

    service = mcp_service(session)
    known = {c.config.name: c for c in service.connections}
    tools: list[Tool] = []
    for name in names:
        if name not in known:
            raise AgentMcpError(f"{where}: {name!r} is not an MCP server of this session "
                                f"(its servers: {', '.join(sorted(known)) or 'none'}); "
                                "configure it, or give its config inline as {name: config}")
        if session.ports.mcp.switched_off(name):
            continue  # switched off for the session: for its sub-agents too
        tools += service.tools_of.get(name, [])
    return tools


async def _start_inline(session: Any, inline: dict[str, Any], where: str, origin: str,
                        agent_type: str) -> McpService:
    from .mcp import McpService, startup_timeout
    from .mcp_client import start_all
    from .mcp_config import McpConfigError, parse_entry

    gathered = session.settings.get(MCP_SOURCES) or {}
    if origin == "project" and not gathered.get("trusted", True):
        raise AgentMcpError(f"{where}: the project is not trusted, so its agents start no "
                            "MCP servers (trust it with --trust-project)")
    configs = []
    for name, raw in inline.items():
        try:
            config = parse_entry(name, raw, scope="agent", origin=where, environ=os.environ,
                                 cwd=str(session.cwd))
        except McpConfigError as exc:
            raise AgentMcpError(str(exc)) from None
        if config is None:
            raise AgentMcpError(f"{where}: {name!r} is an in-process SDK server: give it in "
                                "mcp_servers and name it here")
        configs.append(config)
    service = McpService(await start_all(configs, startup_timeout(session.settings)),
                         session.settings)
    service.session = session  # a server that dies mid-task is a warning of the session
    for problem in service.problems():
        session.warn(f"{problem} (started for a {agent_type} sub-agent)")
    return service
