"""Where MCP servers are configured, gathered once per session for the ``builtins:mcp`` service.

The kernel does not talk MCP; it only knows the places Claude Code reads servers from and what
the project's trust allows. Each place is kept apart (the merged settings would mix two
entries of one name field by field, where Claude Code lets the closer scope replace the
entry), in precedence order, under the reserved settings key :data:`MCP_SOURCES`:

* ``mcpServers`` in the user settings (``user``),
* the project's ``.mcp.json`` (``project``; its servers also need the user's approval:
  ``enableAllProjectMcpServers``, ``enabledMcpjsonServers``, ``disabledMcpjsonServers``, read
  from the user settings only, so that a repository cannot approve itself),
* ``mcpServers`` in ``.zpi/settings.json`` (``project``) and ``.zpi/settings.local.json``
  (``local``),
* the caller's servers (``--mcp-config``, ``create_session(mcp_servers=...)``): ``given``.

A later source wins for the same name. ``strict`` (``--strict-mcp-config``) keeps only the
given ones. A project that is not trusted starts none of its servers: they are handed back as
held-back items (the session asks, refuses or goes on without them) and stay listed as
``not trusted``. Plugins' servers are added by the adapters (docs/mcp.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError

if TYPE_CHECKING:
    from .manager import SettingsManager

__all__ = ["APPROVAL_SETTINGS", "MCP_SOURCES", "PROJECT_MCP_FILE", "gather_mcp_sources",
           "mcp_config_arguments", "project_server_approved", "read_mcp_file"]

#: the reserved key of the settings snapshot the MCP service reads
MCP_SOURCES = "mcp_sources"
PROJECT_MCP_FILE = ".mcp.json"
#: user-level settings that approve (or refuse) the servers of a project's ``.mcp.json``
APPROVAL_SETTINGS = ("enableAllProjectMcpServers", "enabledMcpjsonServers",
                     "disabledMcpjsonServers")


def read_mcp_file(path: Path, *, root: Path | None, what: str) -> dict[str, Any]:
    """The ``mcpServers`` object of a JSON file (``.mcp.json``, a ``--mcp-config`` file):
    read no-follow and bounded; a file that is not such an object raises UsageError naming it.
    A file that is only the object of servers (no ``mcpServers`` key) is refused too, as
    Claude Code does."""
    from ..fs.shipped import CONFIG_LIMIT, ShippedFileError, read_shipped

    try:
        raw = read_shipped(path, limit=CONFIG_LIMIT, root=root, what=what)
    except ShippedFileError as exc:
        raise UsageError(str(exc)) from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: {what} is not valid JSON ({exc}); fix or remove it") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise UsageError(f"{path}: {what} must be a JSON object with an \"mcpServers\" object "
                         "(server name -> {\"command\": ...} or {\"type\": \"http\", \"url\": "
                         "...})")
    return servers


def mcp_config_arguments(values: list[str], option: str = "--mcp-config") -> dict[str, Any]:
    """The servers of ``--mcp-config`` values, each a JSON string (``{"mcpServers": ...}``)
    or a file holding one; a later value wins for the same name. Bad input is a UsageError
    naming the value (and ``option``, the SDK's ``mcp_servers`` too)."""
    servers: dict[str, Any] = {}
    for value in values:
        if value.lstrip().startswith("{"):
            try:
                data = json.loads(value)
            except json.JSONDecodeError as exc:
                raise UsageError(f"{option}: the JSON given is not valid ({exc}); give a "
                                 "file or a JSON object with \"mcpServers\"") from None
            found = data.get("mcpServers") if isinstance(data, dict) else None
            if not isinstance(found, dict):
                raise UsageError(f"{option}: the JSON given must be an object with an "
                                 "\"mcpServers\" object")
        else:
            path = Path(value).expanduser().absolute()
            try:
                found = read_mcp_file(path, root=None, what="MCP config file")
            except FileNotFoundError:
                raise UsageError(f"{option}: no file {path}; give a JSON file or a JSON "
                                 "string with \"mcpServers\"") from None
        servers.update(found)
    return servers


def _given(servers: Mapping[str, Any] | str | Path | None) -> list[dict[str, Any]]:
    """The caller's servers as sources: a mapping as it is, a path read as a config file."""
    if servers is None:
        return []
    if isinstance(servers, str | Path):
        path = Path(servers).expanduser().absolute()
        try:
            found = read_mcp_file(path, root=None, what="MCP config file")
        except FileNotFoundError:
            raise UsageError(f"mcp_servers: no file {path}; give a JSON file with mcpServers, "
                             "or a mapping of server name -> config") from None
        return [{"scope": "given", "origin": str(path), "servers": found}]
    return [{"scope": "given", "origin": "mcp_servers", "servers": dict(servers)}]


def _approval(user: Mapping[str, Any]) -> dict[str, Any]:
    names = {key: user.get(key) for key in APPROVAL_SETTINGS}
    return {
        "all": names["enableAllProjectMcpServers"] is True,
        "enabled": [n for n in names["enabledMcpjsonServers"] or () if isinstance(n, str)]
        if isinstance(names["enabledMcpjsonServers"], list) else [],
        "disabled": [n for n in names["disabledMcpjsonServers"] or () if isinstance(n, str)]
        if isinstance(names["disabledMcpjsonServers"], list) else [],
    }


def project_server_approved(approval: Mapping[str, Any], name: str) -> bool | None:
    """True: the user approved the ``.mcp.json`` server ``name``; False: refused; None: not
    decided yet (Claude Code asks; this host lists it as ``needs approval``)."""
    if name in approval.get("disabled", ()):
        return False
    if approval.get("all") or name in approval.get("enabled", ()):
        return True
    return None


def gather_mcp_sources(
    manager: SettingsManager, cwd: Path, *, given: Mapping[str, Any] | str | Path | None,
    strict: bool, trusted: bool, read_project: bool,
) -> tuple[dict[str, Any], list[str]]:
    """The value of :data:`MCP_SOURCES` and the held-back lines of an untrusted project (one
    per server that would have started). ``read_project``: the project's ``.mcp.json`` is
    read (the ``project`` source); its settings files are read as ``manager`` reads them."""
    approval = _approval(manager.layer("user"))
    sources: list[dict[str, Any]] = []
    if not strict:
        sources += _settings_source(manager, "user")
        if read_project:
            sources += _project_file(cwd)
        sources += _settings_source(manager, "project") + _settings_source(manager, "local")
    sources += _given(given)
    withheld: list[str] = []
    for source in sources:
        if source["scope"] not in ("project", "local") or trusted:
            continue
        source["held"] = True
        servers = source.get("servers") or {}
        would_start = [n for n in servers if source.get("file") is None
                       or project_server_approved(approval, n)]
        withheld += [f"MCP server {name!r} (from {source['origin']})" for name in would_start]
    return {"sources": sources, "strict": strict, "approval": approval,
            "cwd": str(cwd), "trusted": trusted}, withheld


def _settings_source(manager: SettingsManager, scope: Any) -> list[dict[str, Any]]:
    servers = manager.layer(scope).get("mcpServers")
    if servers is None:
        return []
    where = manager.path(scope)
    origin = f"{where if where is not None else scope + ' settings'} mcpServers"
    if not isinstance(servers, Mapping):
        return [{"scope": scope, "origin": origin, "servers": {},
                 "error": "mcpServers must be an object of server name -> config"}]
    return [{"scope": scope, "origin": origin, "servers": dict(servers)}]


def _project_file(cwd: Path) -> list[dict[str, Any]]:
    path = cwd / PROJECT_MCP_FILE
    try:
        servers = read_mcp_file(path, root=cwd, what="project MCP file")
    except FileNotFoundError:
        return []
    except UsageError as exc:
        return [{"scope": "project", "origin": str(path), "file": str(path), "servers": {},
                 "error": str(exc)}]
    return [{"scope": "project", "origin": str(path), "file": str(path), "servers": servers}]
