"""Service ``builtins:mcp``: the session's MCP servers' tools, as ``mcp__<server>__<tool>``.

Servers come from the places the kernel gathers (:mod:`zpi_host.settings.mcp_sources`:
settings ``mcpServers``, the project's ``.mcp.json``, ``--mcp-config``, ``mcp_servers``),
parsed by :mod:`.mcp_config`. When at least one is configured, the session's assembly starts
them concurrently (``zpi_register_tools``, :mod:`.mcp_client`, which is where ``mcp`` is
imported) and registers each server's tools with its input schema; ``readOnlyHint`` makes a
tool read-only, otherwise it has side effects. A server that fails costs its tools, never the
session: the session is told at its start. The connections belong to the session's built-in
runtime and close when it is disposed. The service is the registry behind the session port
``ports.mcp`` (statuses, reconnecting, switching a server off), which the SDK's client uses.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zpi_host import hookimpl
from zpi_host.settings.mcp_sources import MCP_SOURCES
from zpi_host.tools import Tool, ToolContext, ToolMetadata, ToolResult

from .settings import enabled, service_settings

if TYPE_CHECKING:
    from .mcp_client import McpConnection

__all__ = ["McpService", "list_mcp_servers", "mcp_server_names", "mcp_service",
           "zpi_register_commands", "zpi_register_tools", "zpi_session_start",
           "zpi_unknown_tool"]

#: shown by ``zpi-host --list-plugins``
contributes = {"tools": [], "servers": ["MCP servers' tools (mcp__<server>__<tool>)"]}

SERVICE = "mcp"
#: assembled but not yet adopted by a session: the sources object (its identity, shared by the
#: session's settings) -> the service
_unclaimed: dict[int, tuple[Any, McpService]] = {}


def startup_timeout(settings: Mapping[str, Any]) -> float:
    """Seconds a server has to start: ``MCP_TIMEOUT`` (ms), else the setting."""
    return _millis("MCP_TIMEOUT", float(service_settings(settings, SERVICE)["startup_timeout"]))


def _millis(name: str, fallback: float) -> float:
    """Seconds from the variable ``name`` (milliseconds, as Claude Code reads it)."""
    raw = os.environ.get(name, "").strip()
    try:
        value = float(raw) / 1000 if raw else fallback
    except ValueError:
        return fallback
    return value if value > 0 else fallback


class McpService:
    """The MCP servers of one session."""

    def __init__(self, connections: list[McpConnection], settings: Mapping[str, Any]) -> None:
        config = service_settings(settings, SERVICE)
        self.connections = connections
        self.tool_timeout = _millis("MCP_TOOL_TIMEOUT", float(config["tool_timeout"]))
        self.max_chars = int(config["max_result_chars"])
        self.startup_timeout = _millis("MCP_TIMEOUT", float(config["startup_timeout"]))
        self.reported = False
        #: server name -> the names of the tools made for it (what reconnecting replaces)
        self.made: dict[str, list[str]] = {}
        #: server name -> those tools (what a sub-agent that names the server gets)
        self.tools_of: dict[str, list[Tool]] = {}
        #: tools left out (a clash of names, a listing the host cannot use), for the warnings
        self.skipped: list[str] = []
        #: what happened to servers after their start (died, changed their tools), told to
        #: the session as warnings once it has taken the servers over
        self.news: list[str] = []
        self.session: Any = None
        for connection in connections:
            connection.on_news = self.heard

    def heard(self, news: str) -> None:
        """A server's news: a warning of the session (kept until the session takes over)."""
        if self.session is None:
            self.news.append(news)
        else:
            self.session.warn(news)

    def adopted_by(self, session: Any) -> None:
        """The session owns the servers from now on: the news kept so far is told to it."""
        self.session = session
        for news in self.news:
            session.warn(news)
        self.news.clear()

    def tools(self) -> list[Tool]:
        made: list[Tool] = []
        for connection in self.connections:
            made += self.server_tools(connection)
        if any(c.has_resources for c in self.connections):
            made += self._resource_tools()
        return made

    def server_tools(self, connection: McpConnection) -> list[Tool]:
        """The tools of one server, as ``mcp__<server>__<tool>``; a name another server's
        tool already has is left out (and said in the warnings)."""
        from .mcp_config import tool_prefix

        server = connection.config.name
        taken = {n: s for s, names in self.made.items() if s != server for n in names}
        made: list[Tool] = []
        for offered in connection.tools:
            try:
                tool = self._tool(connection, offered, tool_prefix(server))
            except (ValueError, TypeError, AttributeError) as exc:  # a bad tool listing
                self.skipped.append(f"MCP server {server!r}: its tool "
                                    f"{getattr(offered, 'name', '?')!r} is not usable "
                                    f"({exc}); left out")
                continue
            if tool.name in taken:  # ``a.b`` and ``a_b`` both become ``mcp__a_b__``
                self.skipped.append(f"MCP server {server!r}: its tool name {tool.name} is "
                                    f"taken by the server {taken[tool.name]!r}; left out "
                                    "(rename a server)")
                continue
            made.append(tool)
        self.made[server] = [t.name for t in made]
        self.tools_of[server] = made
        return made

    # -- the host's McpPort side ----------------------------------------------------------

    def statuses(self) -> list[dict[str, Any]]:
        """Each server in claude-agent-sdk's ``McpServerStatus`` shape (its env and headers
        never shown)."""
        from zpi_host.sdk.mcp_servers import tool_info

        out: list[dict[str, Any]] = []
        for connection in self.connections:
            config = connection.config
            entry: dict[str, Any] = {"name": config.name, "status": sdk_status(connection),
                                     "config": shown_config(connection),
                                     # Claude Code's name for servers its caller gave
                                     "scope": "dynamic" if config.scope == "given"
                                     else config.scope}
            if connection.error:
                entry["error"] = connection.error
            if connection.status == "connected":
                if connection.server_info is not None:
                    entry["serverInfo"] = dict(connection.server_info)
                entry["tools"] = [tool_info(t) for t in connection.tools]
            if connection.changed_tools is not None:
                # this host's detail: ``tools`` stay the session's; the next one gets these
                entry["toolListChanged"] = changed_names(connection)
            out.append(entry)
        return out

    def tool_names(self, server: str) -> list[str]:
        return list(self.made.get(server, ()))

    async def reconnect(self, server: str) -> list[Tool]:
        for connection in self.connections:
            if connection.config.name == server:
                await connection.reconnect(self.startup_timeout)
                return self.server_tools(connection)
        return []

    def _resource_tools(self) -> list[Tool]:
        """``list_mcp_resources`` and ``read_mcp_resource`` (Claude Code's
        ``ListMcpResourcesTool`` / ``ReadMcpResourceTool``), when a server offers resources."""
        service = self
        servers = sorted(c.config.name for c in self.connections if c.has_resources)

        def connection_of(name: Any) -> McpConnection:
            from zpi_host.tools import ToolArgumentError

            for connection in service.connections:
                if connection.config.name == name and connection.has_resources:
                    return connection
            raise ToolArgumentError("read_mcp_resource", "server", f"must be one of "
                                    f"{', '.join(servers)} (the servers that offer resources)")

        async def list_resources(args: Any, ctx: ToolContext) -> ToolResult:
            wanted = args.get("server") if isinstance(args, Mapping) else None
            lines: list[str] = []
            found: list[dict[str, Any]] = []
            for connection in service.connections:
                name = connection.config.name
                if not connection.has_resources or wanted not in (None, name):
                    continue
                try:
                    resources = await connection.list_resources(service.tool_timeout)
                except Exception as exc:
                    from .mcp_client import _reason

                    lines.append(f"{name}: could not list resources: {_reason(exc)}")
                    continue
                for item in resources:
                    row = {"server": name, "uri": str(item.uri), "name": item.name,
                           "mime_type": getattr(item, "mime_type", None),
                           "description": getattr(item, "description", None)}
                    found.append(row)
                    lines.append(f"{name}  {row['uri']}  {item.name}"
                                 + (f" ({row['mime_type']})" if row["mime_type"] else ""))
            if wanted is not None and wanted not in servers:
                return ToolResult.error(f"no MCP server {wanted!r} offers resources (servers "
                                        f"with resources: {', '.join(servers)})")
            return ToolResult.text("\n".join(lines) or "no resources",
                                   details={"resources": found})

        async def read_resource(args: Any, ctx: ToolContext) -> ToolResult:
            from zpi_host.tools import ImageContent, TextContent

            connection = connection_of(args.get("server"))
            uri = args.get("uri")
            try:
                contents = await connection.read_resource(str(uri), service.tool_timeout)
            except Exception as exc:
                from .mcp_client import _reason

                return ToolResult.error(connection._clean(
                    f"the MCP server {connection.config.name!r} could not read {uri}: "
                    f"{_reason(exc)}"))
            blocks: list[Any] = []
            for item in contents:
                mime = getattr(item, "mime_type", None) or ""
                text = getattr(item, "text", None)
                if text is not None:
                    blocks.append(TextContent(str(text)[:service.max_chars]))
                elif mime.startswith("image/"):
                    blocks.append(ImageContent(str(item.blob), mime))
                else:
                    blocks.append(TextContent(f"[{item.uri}: {mime or 'binary'} content, "
                                              "not shown]"))
            return ToolResult(content=tuple(blocks), details={
                "server": connection.config.name, "uri": str(uri)})

        read_only = ToolMetadata(read_only=True, concurrency_safe=True, side_effects=False)
        server_property = {"type": "string", "enum": servers,
                           "description": "The MCP server."}
        return [
            Tool(name="list_mcp_resources", description=(
                "List the resources the MCP servers offer (files, records, documents), with "
                "their URIs; read one with read_mcp_resource."),
                 parameters={"type": "object", "properties": {"server": server_property},
                             "additionalProperties": False},
                 execute=list_resources, metadata=read_only),
            Tool(name="read_mcp_resource", description="Read a resource of an MCP server by "
                 "its URI (as list_mcp_resources gives it).",
                 parameters={"type": "object", "properties": {
                     "server": server_property,
                     "uri": {"type": "string", "description": "The resource's URI."}},
                     "required": ["server", "uri"], "additionalProperties": False},
                 execute=read_resource, metadata=read_only),
        ]

    def _tool(self, connection: McpConnection, offered: Any, prefix: str) -> Tool:
        import re

        remote = str(offered.name)
        notes = getattr(offered, "annotations", None)
        read_only = bool(notes is not None and getattr(notes, "read_only_hint", None))
        schema = offered.input_schema if isinstance(offered.input_schema, Mapping) else {}
        schema = {**schema, "type": "object"}
        if not isinstance(schema.get("properties", {}), Mapping):
            raise ValueError("its input schema's properties are not an object")
        service = self

        async def execute(args: Any, ctx: ToolContext) -> ToolResult:
            if ctx.session is not None:
                mcp_service(ctx.session)  # the session owns the connections from now on
            return await service.call(connection, remote, args, ctx)

        return Tool(
            name=prefix + re.sub(r"[^A-Za-z0-9_-]", "_", remote),
            description=(offered.description or f"The tool {remote} of the MCP server "
                         f"{connection.config.name}.")[:4000],
            parameters=schema, execute=execute,
            metadata=ToolMetadata(read_only=read_only, concurrency_safe=read_only,
                                  side_effects=not read_only))

    async def call(self, connection: McpConnection, remote: str, args: Any,
                   ctx: ToolContext) -> ToolResult:
        name = connection.config.name
        details = {"server": name, "tool": remote}
        try:
            result = await connection.call_tool(remote, args if isinstance(args, Mapping)
                                                else {}, self.tool_timeout)
        except ConnectionError as exc:
            return ToolResult.error(str(exc), details=details)
        except TimeoutError:
            return ToolResult.error(
                f"the MCP server {name!r} did not answer {remote} within "
                f"{self.tool_timeout:g} s (MCP_TOOL_TIMEOUT, in ms, or "
                "plugins.builtins.mcp.tool_timeout)", details=details)
        except Exception as exc:  # the server's or the transport's error: this call fails
            from .mcp_client import _reason

            return ToolResult.error(connection._clean(
                f"the MCP server {name!r} failed on {remote}: {_reason(exc)}"), details=details)
        return self.convert(result, details)

    def convert(self, result: Any, details: dict[str, Any]) -> ToolResult:
        """The server's CallToolResult as this host's: text and images kept, embedded
        resources as their text, the rest described; text past ``max_result_chars`` cut."""
        from zpi_host.tools import ImageContent, TextContent

        content: list[Any] = []
        for block in getattr(result, "content", None) or ():
            kind = getattr(block, "type", None)
            if kind == "text":
                content.append(TextContent(str(block.text)))
            elif kind == "image":
                content.append(ImageContent(str(block.data), str(block.mime_type)))
            elif kind == "resource":
                inner = block.resource
                text = getattr(inner, "text", None)
                content.append(TextContent(str(text) if text is not None else
                                           f"[resource {inner.uri}: "
                                           f"{getattr(inner, 'mime_type', None) or 'binary'}]"))
            elif kind == "resource_link":
                content.append(TextContent(f"[resource link {block.uri}]"))
            else:
                content.append(TextContent(f"[{kind} content, not shown]"))
        structured = getattr(result, "structured_content", None)
        if not content and structured is not None:
            content.append(TextContent(json.dumps(structured, ensure_ascii=False)))
        budget = self.max_chars
        kept: list[Any] = []
        for item in content:
            if isinstance(item, TextContent):
                if len(item.text) > budget:
                    item = TextContent(item.text[:budget] + f"\n[cut: the MCP result is over "
                                       f"{self.max_chars} characters "
                                       "(plugins.builtins.mcp.max_result_chars)]")
                    budget = 0
                else:
                    budget -= len(item.text)
            kept.append(item)
            if budget <= 0:
                break
        return ToolResult(content=tuple(kept), is_error=bool(getattr(result, "is_error", False)),
                          details=details)

    def problems(self) -> list[str]:
        """One line per server that is not connected, for the session's warnings."""
        return [f"MCP server {c.config.name!r} ({c.config.origin}) {c.status}: "
                f"{c.error or 'no reason given'}" for c in self.connections
                if c.status != "connected"] + self.skipped

    async def aclose(self) -> None:
        import asyncio

        await asyncio.gather(*(c.aclose() for c in self.connections),
                             return_exceptions=True)


def changed_names(connection: McpConnection) -> list[str]:
    from .mcp_client import changed_names as names

    return names(connection)


def sdk_status(connection: McpConnection) -> str:
    """The status as claude-agent-sdk names it: ``connected``, ``pending``, ``disabled`` (off
    in the settings) or ``failed`` (failed, closed, invalid, not approved, not trusted: the
    entry's ``error`` says which)."""
    if connection.status in ("connected", "pending", "disabled"):
        return connection.status
    return "failed"


def shown_config(connection: McpConnection) -> dict[str, Any]:
    """The server's config as ``get_mcp_status()`` shows it: its transport, command and args
    or URL, with every env and header value blanked out wherever it appears."""
    config = connection.config
    if config.transport == "stdio":
        shown: dict[str, Any] = {"type": "stdio", "command": config.command or "",
                                 "args": [connection._clean(a) for a in config.args]}
    else:
        shown = {"type": config.transport, "url": connection._clean(config.url or "")}
    return shown


def server_rows(connections: list[McpConnection]) -> list[dict[str, Any]]:
    """What ``zpi-host mcp list`` shows of each server: never its env or headers."""
    from .mcp_config import tool_prefix

    return [{"name": c.config.name, "scope": c.config.scope, "origin": c.config.origin,
             "transport": c.config.transport, "status": c.status, "error": c.error,
             "tools": [tool_prefix(c.config.name) + str(t.name) for t in c.tools],
             "tools_changed": None if c.changed_tools is None else
             [tool_prefix(c.config.name) + n for n in changed_names(c)]}
            for c in connections]


def mcp_server_names(settings: Mapping[str, Any]) -> list[str]:
    """``--list-plugins``: each configured server with its scope, and why it would not start
    (nothing is started)."""
    from .mcp_config import configured_servers

    return [f"{c.name} ({c.scope}{'' if c.status == 'pending' else ', ' + c.status})"
            for c in configured_servers(settings, os.environ)]


async def list_mcp_servers(cwd: Path, settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``zpi-host mcp list``: start each configured server, list it, stop it."""
    from .mcp_config import configured_servers

    configs = configured_servers(settings, os.environ)
    if not configs:
        return []
    from .mcp_client import start_all

    config = service_settings(settings, SERVICE)
    connections = await start_all(configs, _millis("MCP_TIMEOUT",
                                                   float(config["startup_timeout"])))
    try:
        return server_rows(connections)
    finally:
        await McpService(connections, settings).aclose()


def _adopt(settings: Mapping[str, Any]) -> McpService:
    sources = settings.get(MCP_SOURCES)
    held = _unclaimed.pop(id(sources), None)
    if held is not None and held[0] is sources:
        return held[1]
    return McpService([], settings)


def mcp_service(session: Any) -> McpService:
    """The session's servers (taken over from its assembly on first use)."""
    from .runtime import runtime_for

    return runtime_for(session).service(SERVICE, _attached)


def _attached(runtime: Any) -> McpService:
    """The adopted service, reachable by the front end through ``ports.mcp``."""
    service = _adopt(runtime.settings)
    service.adopted_by(runtime.session)
    runtime.ports.mcp.attach(service)
    return service


@hookimpl
def zpi_register_tools(cwd: Path, settings: Mapping[str, Any]) -> Any:
    """Start the configured servers and register their tools. None configured: nothing is
    awaited and neither ``mcp`` nor ``asyncio`` is imported (``--list-plugins`` stays cheap)."""
    if not enabled(settings, SERVICE):
        return None
    from .mcp_config import configured_servers

    configs = configured_servers(settings, os.environ)
    return _start(configs, settings) if configs else None


async def _start(configs: list[Any], settings: Mapping[str, Any]) -> list[Tool]:
    from .mcp_client import start_all

    config = service_settings(settings, SERVICE)
    connections = await start_all(configs, _millis("MCP_TIMEOUT",
                                                   float(config["startup_timeout"])))
    service = McpService(connections, settings)
    sources = settings.get(MCP_SOURCES)
    _unclaimed[id(sources)] = (sources, service)
    from zpi_host.session.ports import offer_mcp_registry

    async def discard() -> None:  # the assembly failed: no session will close them
        held = _unclaimed.pop(id(sources), None)
        if held is not None and held[0] is sources:
            await held[1].aclose()

    # the SDK may ask before the first run; a session that never runs adopts them at dispose
    offer_mcp_registry(settings, mcp_service, discard)
    return service.tools()


@hookimpl
def zpi_session_start(session: Any, source: str) -> None:
    """Take the servers over and tell the user which did not start."""
    service = mcp_service(session)
    if not service.reported:
        service.reported = True
        for line in service.problems():
            session.warn(line)


@hookimpl
def zpi_unknown_tool(session: Any, call: Any, available: Any) -> str | None:
    """A call to ``mcp__<server>__...`` of a server that is configured but not connected:
    say which server, its status and why (not approved, failed, not trusted)."""
    name = str(getattr(call, "name", ""))
    if not name.startswith("mcp__"):
        return None
    from .mcp_config import tool_prefix

    for connection in mcp_service(session).connections:
        if name.startswith(tool_prefix(connection.config.name)):
            if session.ports.mcp.switched_off(connection.config.name):
                return (f"The MCP server {connection.config.name!r} is switched off for now, "
                        "so its tools cannot be called.")
            if connection.status == "connected":
                return (f"The MCP server {connection.config.name!r} is connected but offers "
                        "no such tool.")
            return f"The tool belongs to the {connection.unavailable()}."
    return None


@hookimpl
def zpi_register_commands(cwd: Path, settings: Mapping[str, Any]) -> list[Any] | None:
    """Each prompt of a connected server as the command ``/mcp__<server>__<prompt>`` (the
    servers were started by ``zpi_register_tools`` of the same assembly): its words are the
    prompt's arguments in order, as Claude Code passes them."""
    sources = settings.get(MCP_SOURCES)
    held = _unclaimed.get(id(sources))
    if held is None or held[0] is not sources:
        return None
    commands: dict[str, Any] = {}
    for connection in held[1].connections:
        if connection.status != "connected":
            continue
        for command in prompt_commands(connection, held[1]):
            if command.name in commands:
                held[1].skipped.append(f"MCP server {connection.config.name!r}: its prompt "
                                       f"/{command.name} is taken by another server; left out")
                continue
            commands[command.name] = command
    return list(commands.values()) or None


def prompt_commands(connection: McpConnection, service: McpService) -> list[Any]:
    import re

    from zpi_host.errors import ZpiError
    from zpi_host.resources import Command

    from .mcp_config import tool_prefix

    def handler_for(remote: str, names: list[str], required: list[str]) -> Any:
        async def handler(text: str) -> str:  # one parameter: the host passes no context
            words = text.split()
            missing = required[len(words):]
            if missing:
                raise ZpiError(f"/{tool_prefix(connection.config.name)}{remote} needs "
                               f"{', '.join(missing)} (arguments in order: "
                               f"{' '.join(names)})")
            given = dict(zip(names, [*words[:len(names) - 1],
                                     " ".join(words[len(names) - 1:])] if names else [],
                             strict=False))
            try:
                result = await connection.get_prompt(remote, {k: v for k, v in given.items()
                                                              if v}, service.tool_timeout)
            except Exception as exc:
                from .mcp_client import _reason

                raise ZpiError(connection._clean(
                    f"the MCP server {connection.config.name!r} could not give the prompt "
                    f"{remote}: {_reason(exc)}")) from None
            parts = [str(getattr(m.content, "text", "")) for m in result.messages]
            prompt_text = "\n\n".join(p for p in parts if p)
            if not prompt_text:
                raise ZpiError(f"the MCP prompt {remote} of {connection.config.name!r} is "
                               "empty")
            return prompt_text
        return handler

    made = []
    for prompt in connection.prompts:
        remote = str(prompt.name)
        names = [str(a.name) for a in prompt.arguments or ()]
        required = [str(a.name) for a in prompt.arguments or () if a.required]
        handler = handler_for(remote, names, required)
        made.append(Command(
            tool_prefix(connection.config.name) + re.sub(r"[^A-Za-z0-9_-]", "_", remote),
            (prompt.description or f"the prompt {remote} of the MCP server "
             f"{connection.config.name}")[:300],
            handler=handler, argument_hint=" ".join(f"<{n}>" for n in names) or None))
    return made
