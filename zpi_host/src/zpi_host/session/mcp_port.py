"""The session port ``ports.mcp``: a session's external MCP servers as its front end sees
them (statuses, reconnecting, switching a server's tools off), and the hand-over of the
servers an MCP service started for an assembly (``offer_mcp_registry``) to the session made
from it, or their closing when no session comes of it (``discard_mcp_registry``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import UsageError

if TYPE_CHECKING:
    from ..agent.state import SessionState

__all__ = ["McpPort", "McpRegistry", "McpServerError", "discard_mcp_registry",
           "offer_mcp_registry"]


class McpServerError(UsageError):
    """A control request (``toggle_mcp_server``, ``reconnect_mcp_server``) for an MCP server
    the session does not have."""


class McpRegistry(Protocol):
    """What an MCP service gives the host (``McpPort.attach``): its servers' statuses and a
    way to connect one again."""

    def statuses(self) -> list[dict[str, Any]]:
        """One entry per server in claude-agent-sdk's ``McpServerStatus`` shape (``name``,
        ``status``, ``serverInfo``, ``error``, ``config`` without secrets, ``scope``,
        ``tools``), in the order the servers were configured."""
        ...

    def tool_names(self, server: str) -> list[str]:
        """The names of the session tools that belong to ``server``."""
        ...

    async def reconnect(self, server: str) -> Sequence[Any]:
        """Close ``server``'s connection, start it again and return its tools (none when it
        failed again: its status says why)."""
        ...


#: registries an MCP service made during an assembly, before its session existed: the identity
#: of the settings' MCP sources object -> (that object, how the session adopts the registry,
#: how the servers are closed when no session comes of the assembly)
_offered: dict[int, tuple[Any, Callable[[Any], McpRegistry],
                          Callable[[], Awaitable[None]] | None]] = {}


def offer_mcp_registry(settings: Mapping[str, Any], adopt: Callable[[Any], McpRegistry],
                       discard: Callable[[], Awaitable[None]] | None = None) -> None:
    """Called by an MCP service that started servers for an assembly (``zpi_register_tools``
    has no session yet): the session made from these settings calls ``adopt(session_view)``
    the first time its front end asks ``ports.mcp`` anything (before its first run, when the
    service has not taken its servers over yet), and at the latest when it is disposed (so
    a session that never ran closes them); ``adopt`` attaches the registry. An assembly that
    fails awaits ``discard()``: the servers it started must not outlive it."""
    from ..settings.mcp_sources import MCP_SOURCES

    sources = settings.get(MCP_SOURCES)
    _offered[id(sources)] = (sources, adopt, discard)


async def discard_mcp_registry(settings: Mapping[str, Any] | None) -> None:
    """The assembly of these settings failed: close what an MCP service offered for it."""
    if settings is None:
        return
    from ..settings.mcp_sources import MCP_SOURCES

    sources = settings.get(MCP_SOURCES)
    held = _offered.pop(id(sources), None)
    if held is not None and held[0] is sources and held[2] is not None:
        await held[2]()


class McpPort:
    """The session's external MCP servers as the front end sees them
    (``SessionView.ports.mcp``): statuses, reconnecting, switching a server's tools off.

    The MCP service (``builtins:mcp``) attaches its registry when the session takes its
    servers over; without one the session has no external servers. A server switched off
    keeps its connection; its tools leave the session's tool set until it is switched on.
    """

    def __init__(self, session: SessionState) -> None:
        self._session = session
        self._registry: McpRegistry | None = None
        self._disabled: set[str] = set()
        #: the tools of switched-off servers, kept to be put back
        self._parked: dict[str, Any] = {}

    def attach(self, registry: McpRegistry) -> None:
        from ..settings.mcp_sources import MCP_SOURCES

        self._registry = registry
        sources = self._session.settings.get(MCP_SOURCES)
        held = _offered.get(id(sources))
        if held is not None and held[0] is sources:  # taken over: nothing left to hand over
            del _offered[id(sources)]

    def _adopted(self) -> McpRegistry | None:
        if self._registry is None:
            from ..settings.mcp_sources import MCP_SOURCES

            sources = self._session.settings.get(MCP_SOURCES)
            held = _offered.pop(id(sources), None)
            if held is not None and held[0] is sources:
                held[1](self._session.view)  # attaches
        return self._registry

    def take_offered(self) -> None:
        """Adopt a registry offered for this session's assembly that nobody asked for yet
        (the session never ran): its service then closes with the session's other state."""
        self._adopted()

    def statuses(self) -> list[dict[str, Any]]:
        """Each server's status entry; a switched-off one is ``disabled``, without tools."""
        if self._adopted() is None:
            return []
        assert self._registry is not None
        out = []
        for entry in self._registry.statuses():
            if entry.get("name") in self._disabled:
                entry = {k: v for k, v in entry.items() if k not in ("tools", "serverInfo")}
                entry["status"] = "disabled"
            out.append(entry)
        return out

    def names(self) -> list[str]:
        return [str(e["name"]) for e in self.statuses()]

    def switched_off(self, server: str) -> bool:
        return server in self._disabled

    def toggle(self, server: str, enabled: bool) -> None:
        """Switch ``server``'s tools on or off for the session's next requests."""
        self._check(server, "toggle_mcp_server")
        assert self._registry is not None
        names = set(self._registry.tool_names(server))
        session = self._session
        if enabled and server in self._disabled:
            self._disabled.discard(server)
            back = {n: self._parked.pop(n) for n in names if n in self._parked}
            session.tools = {**session.tools, **back}  # a new dict: cached sizes follow
        elif not enabled and server not in self._disabled:
            self._disabled.add(server)
            self._parked.update({n: t for n, t in session.tools.items() if n in names})
            session.tools = {n: t for n, t in session.tools.items() if n not in names}

    async def reconnect(self, server: str) -> dict[str, Any]:
        """Connect ``server`` again (a server that died or failed to start) and put its
        current tools in the session's tool set (parked while it is switched off); its new
        status entry. A server that fails again is reported by its status, not raised."""
        self._check(server, "reconnect_mcp_server")
        assert self._registry is not None
        old = set(self._registry.tool_names(server))
        tools = {t.name: t for t in self._shown(await self._registry.reconnect(server))}
        session = self._session
        kept = {n: t for n, t in session.tools.items() if n not in old}
        if server in self._disabled:
            self._parked = {n: t for n, t in self._parked.items() if n not in old}
            self._parked.update(tools)
            session.tools = kept
        else:
            session.tools = {**kept, **tools}
        return next(e for e in self.statuses() if e["name"] == server)

    def _shown(self, tools: Sequence[Any]) -> list[Any]:
        """What the session may show of a reconnected server's tools (permission is
        disclosure: a tool denied outright or not granted by the agent stays out)."""
        from .disclosure import agent_permissions, shown_tools

        session = self._session
        return shown_tools(tools, session.permissions.rules,
                           agent_permissions(session.agent_definition))

    def _check(self, server: str, request: str) -> None:
        if self._session._disposed:
            raise McpServerError(f"{request}({server!r}): the session was closed (its MCP "
                                 "servers were stopped with it)")
        known = self.names()
        if server not in known:
            raise McpServerError(f"{request}({server!r}): no MCP server of that name (the "
                                 f"session's servers: {', '.join(known) or 'none'})")
