"""MCP server entries as Claude Code writes them: validated, expanded, merged by precedence.

An entry is ``{"command", "args", "env"}`` (``type`` ``stdio``, the default when ``command``
is given) or ``{"type": "http" | "sse", "url", "headers"}``. ``${VAR}`` and
``${VAR:-default}`` are expanded in ``command``, ``args``, ``env``, ``url`` and ``headers``
(a variable that is not set and has no default makes the entry invalid, as in Claude Code).
A bad entry is one :class:`ServerConfig` with status ``invalid`` and the error naming the
file and the entry: the other servers still start. ``type: "sdk"`` entries are the SDK's
in-process servers and are left to it. Nothing here imports ``mcp``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs

from zpi_host.errors import ZpiError
from zpi_host.settings.mcp_sources import MCP_SOURCES, project_server_approved
from zpi_host.support.attrs_methods import FrozenFieldsEq

__all__ = ["McpConfigError", "ServerConfig", "configured_servers", "expand", "tool_prefix"]

TRANSPORTS = ("stdio", "http", "sse")
#: Claude Code accepts ``streamable-http`` as another name of ``http``
TRANSPORT_ALIASES = {"streamable-http": "http", "streamable_http": "http"}
#: patterns compiled on first use (re's own cache): a start without MCP servers uses none
_VARIABLE = r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}"
_UNSAFE = r"[^A-Za-z0-9_-]"


class McpConfigError(ZpiError):
    """An MCP server entry that cannot be used: the message names the file and the entry."""


@attrs.frozen(repr=False, eq=False, slots=False)
class ServerConfig(FrozenFieldsEq):
    """One configured server, ready to start (status ``pending``) or why not."""

    name: str
    scope: str
    origin: str
    transport: str = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)
    cwd: str | None = None
    #: ``pending`` (to start), ``invalid``, ``needs approval``, ``disabled``, ``not trusted``
    status: str = "pending"
    error: str | None = None

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values that must never be shown: every env and header value."""
        return tuple(v for v in (*self.env.values(), *self.headers.values()) if v)


def tool_prefix(server: str) -> str:
    """``mcp__<server>__``, with characters a tool name cannot hold replaced by ``_``
    (Claude Code's normalisation)."""
    return f"mcp__{re.sub(_UNSAFE, '_', server)}__"


def expand(value: str, environ: Mapping[str, str], where: str) -> str:
    """``${VAR}`` and ``${VAR:-default}`` in ``value``; an unset variable without a default
    raises McpConfigError naming ``where``."""
    def one(match: re.Match[str]) -> str:
        name, fallback = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if fallback is not None:
            return fallback
        raise McpConfigError(f"{where}: the variable {name} is not set and has no default "
                             f"(write ${{{name}:-default}} or set {name})")
    return re.sub(_VARIABLE, one, value)


def _strings(raw: Any, where: str) -> list[str]:
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise McpConfigError(f"{where} must be a list of strings")
    return list(raw)


def _table(raw: Any, where: str) -> dict[str, str]:
    if not isinstance(raw, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise McpConfigError(f"{where} must be an object of string values")
    return dict(raw)


KNOWN_KEYS = frozenset({"type", "command", "args", "env", "url", "headers", "cwd",
                        "timeout", "description", "oauth", "headersHelper"})


def parse_entry(name: str, raw: Any, *, scope: str, origin: str,
                environ: Mapping[str, str], cwd: str | None = None) -> ServerConfig | None:
    """One entry (``None`` for an SDK server); raises McpConfigError naming it."""
    where = f"{origin}: MCP server {name!r}"
    if not isinstance(raw, Mapping):
        raise McpConfigError(f"{where} must be an object (\"command\" for a local server, "
                             "\"type\" and \"url\" for a remote one)")
    kind = raw.get("type", "stdio" if "command" in raw or "url" not in raw else None)
    if kind == "sdk":
        return None
    kind = TRANSPORT_ALIASES.get(kind, kind) if isinstance(kind, str) else kind
    if kind not in TRANSPORTS:
        raise McpConfigError(f"{where}: unknown type {raw.get('type', '(none)')!r} (known: "
                             "stdio, http, sse); a remote server needs \"type\": \"http\" "
                             "or \"sse\" with its \"url\"")
    unknown = sorted(set(raw) - KNOWN_KEYS)
    if unknown:
        raise McpConfigError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}")
    if kind == "stdio":
        command = raw.get("command")
        if not isinstance(command, str) or not command.strip():
            raise McpConfigError(f"{where}: \"command\" must be the program to run")
        args = _strings(raw.get("args", []), f"{where}: \"args\"")
        env = _table(raw.get("env", {}), f"{where}: \"env\"")
        dirname = raw.get("cwd", cwd)
        if dirname is not None and not isinstance(dirname, str):
            raise McpConfigError(f"{where}: \"cwd\" must be a folder")
        return ServerConfig(
            name, scope, origin, "stdio", expand(command, environ, f"{where} command"),
            tuple(expand(a, environ, f"{where} args") for a in args),
            {k: expand(v, environ, f"{where} env {k}") for k, v in env.items()}, cwd=dirname)
    url = raw.get("url")
    if not isinstance(url, str):
        raise McpConfigError(f"{where}: \"url\" must be the server's http(s) address")
    url = expand(url, environ, f"{where} url")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise McpConfigError(f"{where}: \"url\" {url!r} is not an http(s) address")
    headers = _table(raw.get("headers", {}), f"{where}: \"headers\"")
    return ServerConfig(name, scope, origin, kind, url=url,
                        headers={k: expand(v, environ, f"{where} header {k}")
                                 for k, v in headers.items()})


def configured_servers(settings: Mapping[str, Any],
                       environ: Mapping[str, str]) -> list[ServerConfig]:
    """Every server of the session's sources (:data:`MCP_SOURCES`), one per name: a later
    source replaces an earlier one of the same name; sorted by name."""
    gathered = settings.get(MCP_SOURCES)
    if not isinstance(gathered, Mapping):
        return []
    approval = gathered.get("approval") or {}
    cwd = gathered.get("cwd")
    chosen: dict[str, ServerConfig] = {}
    problems: list[ServerConfig] = []
    for source in gathered.get("sources") or ():
        scope, origin = str(source.get("scope")), str(source.get("origin"))
        if source.get("error"):
            problems.append(ServerConfig(f"({origin})", scope, origin, status="invalid",
                                         error=str(source["error"])))
            continue
        base = source.get("root", cwd)
        for name, raw in (source.get("servers") or {}).items():
            try:
                config = parse_entry(str(name), raw, scope=scope, origin=origin,
                                     environ={**environ, **(source.get("variables") or {})},
                                     cwd=base)
            except McpConfigError as exc:
                config = ServerConfig(str(name), scope, origin, status="invalid",
                                      error=str(exc))
            if config is None:
                chosen.pop(str(name), None)
                continue
            if source.get("file") is not None and config.status == "pending":
                decided = project_server_approved(approval, config.name)
                if decided is None:
                    config = attrs.evolve(config, status="needs approval", error=(
                        f"the server {config.name!r} of {origin} is not approved: add it to "
                        "enabledMcpjsonServers (or set enableAllProjectMcpServers) in your user "
                        "settings"))
                elif decided is False:
                    config = attrs.evolve(config, status="disabled", error=(
                        f"{config.name!r} is in disabledMcpjsonServers"))
            if source.get("held") and config.name in chosen:
                continue  # an untrusted project does not replace the user's own entry
            if source.get("held") and config.status == "pending":
                config = attrs.evolve(config, status="not trusted", error=(
                    f"the project is not trusted, so {origin} does not start its servers "
                    "(trust it with --trust-project)"))
            chosen[config.name] = config
    return sorted(chosen.values(), key=lambda c: c.name) + problems
