"""The ``mcp_servers`` option: in-process servers become tools here, the others go to the kernel.

``mcp_servers`` is a dict of server configs (or a path to, or the text of, an MCP config JSON
file ``{"mcpServers": {...}}``). ``{"type": "sdk", ...}`` configs made by
``create_sdk_mcp_server`` are served by the SDK layer itself (:class:`InProcessServers`: their
tools, statuses and the on/off switch of ``toggle_mcp_server``); stdio, HTTP and SSE configs
are handed to ``create_session(mcp_servers=..., strict_mcp_config=...)`` by
:func:`external_mcp_servers`; the client reports and controls those through the session port
``ports.mcp`` (:class:`~zpi_host.session.ports.McpPort`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from ..contract.hookspecs import hookimpl
from ..errors import UsageError
from ..session.ports import McpServerError
from ..support.attrs_methods import FieldsEq
from .mcp_tools import SdkMcpServer, hint, mcp_tool_name
from .unsupported import UnsupportedOptionError

__all__ = ["InProcessServers", "McpServerError", "external_mcp_servers", "split_mcp_servers",
           "tool_info"]


def split_mcp_servers(value: Any) -> tuple[dict[str, SdkMcpServer], dict[str, Any]]:
    """(in-process servers by key, external configs by key) of the ``mcp_servers`` option."""
    if isinstance(value, str | Path):
        from ..settings.mcp_sources import mcp_config_arguments

        value = mcp_config_arguments([str(value)], option="mcp_servers")
    if not isinstance(value, Mapping):
        raise UsageError(f"mcp_servers must be a dict of server configs or the path of an MCP "
                         f"config file, got {type(value).__name__}")
    in_process: dict[str, SdkMcpServer] = {}
    external: dict[str, Any] = {}
    for key, config in value.items():
        if not isinstance(key, str) or not key:
            raise UsageError(f"mcp_servers: a server name must be a non-empty string, got "
                             f"{key!r}")
        if not isinstance(config, Mapping):
            raise UsageError(f"mcp_servers[{key!r}]: a server config is a dict, got "
                             f"{type(config).__name__}")
        if config.get("type") != "sdk":
            external[key] = dict(config)
            continue
        instance = config.get("instance")
        if not isinstance(instance, SdkMcpServer):
            raise UnsupportedOptionError(
                "mcp_servers", f"server {key!r}: an in-process server must be made with "
                "zpi_host.sdk.create_sdk_mcp_server (got an instance of "
                f"{type(instance).__name__}; an mcp.server.Server cannot be served here)")
        in_process[key] = instance
    return in_process, external


def external_mcp_servers(external: Mapping[str, Any], strict: bool) -> dict[str, Any]:
    """The ``create_session`` options for the servers this layer does not run itself (the
    kernel's MCP service, ``builtins:mcp``, starts them)."""
    return {"mcp_servers": dict(external), "strict_mcp_config": bool(strict)}


@attrs.define(repr=False, eq=False, slots=False)
class InProcessServers(FieldsEq):
    """The client's in-process servers: their statuses, and which are switched off
    (``toggle``: their tools leave the session's tool set until switched on again)."""

    servers: Mapping[str, SdkMcpServer]
    disabled: set[str] = attrs.field(factory=set)
    #: the tools of switched-off servers, kept to be put back
    parked: dict[str, Any] = attrs.field(factory=dict)

    def tool_names(self, key: str) -> list[str]:
        return [mcp_tool_name(key, t.name) for t in self.servers[key].tools]

    def toggle(self, session: Any, key: str, enabled: bool) -> None:
        """Switch server ``key``'s tools on or off for the session's next requests."""
        self.check(key, "toggle_mcp_server")
        names = set(self.tool_names(key))
        if enabled and key in self.disabled:
            self.disabled.discard(key)
            back = {n: self.parked.pop(n) for n in names if n in self.parked}
            session.tools = {**session.tools, **back}  # a new dict: cached sizes follow
        elif not enabled and key not in self.disabled:
            self.disabled.add(key)
            self.parked.update({n: t for n, t in session.tools.items() if n in names})
            session.tools = {n: t for n, t in session.tools.items() if n not in names}

    @hookimpl
    def zpi_unknown_tool(self, session: Any, call: Any, available: Any) -> str | None:
        """A call to a switched-off server's tool says so (the plugin ``sdk-mcp-servers``)."""
        for key in sorted(self.disabled):
            if call.name in self.tool_names(key):
                return (f"the MCP server {key!r} is switched off for now, so its tools "
                        "cannot be called")
        return None

    def status(self, key: str) -> str:
        return "disabled" if key in self.disabled else "connected"

    def init_entries(self) -> list[dict[str, Any]]:
        """The ``mcp_servers`` of the ``init`` system message."""
        return [{"name": key, "status": self.status(key), "source": "sdk"}
                for key in self.servers]

    def statuses(self) -> list[dict[str, Any]]:
        """``get_mcp_status()["mcpServers"]`` entries, in claude-agent-sdk's shape."""
        out = []
        for key, server in self.servers.items():
            entry: dict[str, Any] = {"name": key, "status": self.status(key),
                                     "config": {"type": "sdk", "name": server.name},
                                     "scope": "sdk"}
            if key not in self.disabled:
                entry["serverInfo"] = {"name": server.name, "version": server.version}
                entry["tools"] = [tool_info(t) for t in server.tools]
            out.append(entry)
        return out

    def check(self, key: str, request: str) -> None:
        if key not in self.servers:
            known = ", ".join(sorted(self.servers)) or "none"
            raise McpServerError(f"{request}({key!r}): no in-process MCP server of that name "
                                 f"(in-process servers: {known})")


def tool_info(declared: Any) -> dict[str, Any]:
    """One tool of ``get_mcp_status()``: name, description and the hints it declares (an
    in-process tool or an MCP server's listing, either spelling of the hints)."""
    info: dict[str, Any] = {"name": declared.name, "description": declared.description}
    annotations = {wire: bool(value) for wire, value in (
        ("readOnly", hint(declared.annotations, "readOnlyHint")),
        ("destructive", hint(declared.annotations, "destructiveHint")),
        ("openWorld", hint(declared.annotations, "openWorldHint"))) if value is not None}
    if annotations:
        info["annotations"] = annotations
    return info
