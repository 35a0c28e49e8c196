"""An SDKClient's MCP requests: server statuses, switching a server off and on, reconnecting
one, and the servers of the ``init`` message; in-process servers (``mcp_servers.py``) and the
external ones the kernel's MCP service runs (``session.ports.mcp``) side by side.

A mixin of :class:`~.client.SDKClient`; it shares the client's state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..session.agent_session import AgentSession

__all__ = ["McpControls"]


class McpControls:
    """``get_mcp_status``, ``toggle_mcp_server``, ``reconnect_mcp_server``."""

    _mcp: Any

    if TYPE_CHECKING:  # the client's own, declared for the type checker
        @property
        def session(self) -> AgentSession: ...

    async def get_mcp_status(self) -> dict[str, Any]:
        """``{"mcpServers": [...]}``: each server's status, server info, config (without
        secrets), scope and tools, in claude-agent-sdk's shape: the in-process servers
        (``connected`` or ``disabled``), then the external ones the kernel's MCP service runs
        (``connected``, ``pending``, ``failed`` with an ``error``, ``disabled``)."""
        in_process = self._mcp_servers()
        return {"mcpServers": in_process.statuses() + self.session.ports.mcp.statuses()}

    async def toggle_mcp_server(self, server_name: str, enabled: bool) -> None:
        """Switch a server's tools off (or on again) from the next request on; an external
        server keeps its connection. An unknown name raises
        :class:`~.mcp_servers.McpServerError`."""
        if self._is_in_process(server_name, "toggle_mcp_server"):
            self._mcp.toggle(self.session, server_name, enabled)
        else:
            self.session.ports.mcp.toggle(server_name, enabled)

    async def reconnect_mcp_server(self, server_name: str) -> None:
        """Connect an external server again (one that died or failed to start): its tools
        work again from the next request on; if it fails again, ``get_mcp_status()`` says
        why. An in-process server has no connection to lose: this succeeds for one. An
        unknown name raises :class:`~.mcp_servers.McpServerError`."""
        if not self._is_in_process(server_name, "reconnect_mcp_server"):
            await self.session.ports.mcp.reconnect(server_name)

    def _is_in_process(self, server_name: str, request: str) -> bool:
        """Whether ``server_name`` is an in-process server; raises McpServerError when the
        client has no server of that name."""
        in_process = self._mcp_servers()
        if server_name in in_process.servers:
            return True
        external = self.session.ports.mcp.names()
        if server_name not in external:
            from .mcp_servers import McpServerError

            raise McpServerError(
                f"{request}({server_name!r}): no MCP server of that name (in-process: "
                f"{', '.join(sorted(in_process.servers)) or 'none'}; external: "
                f"{', '.join(external) or 'none'})")
        return False

    def _init_mcp_servers(self) -> list[dict[str, Any]]:
        """The ``mcp_servers`` of the ``init`` system message: name and status of each."""
        external = [{"name": e["name"], "status": e["status"]}
                    for e in self.session.ports.mcp.statuses()]
        return self._mcp.init_entries() + external

    def _mcp_servers(self) -> Any:
        self.session  # noqa: B018 - raises when not connected
        return self._mcp
