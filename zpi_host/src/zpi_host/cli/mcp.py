"""``zpi-host mcp list``: the MCP servers a session here would have, where each comes from,
its transport, its status and its tools (each server is started to ask, then stopped).

The kernel gathers the sources (:mod:`zpi_host.settings.mcp_sources`); the plugin that talks
MCP (``builtins:mcp``) answers through its module's ``list_mcp_servers(cwd, settings)``.
Secrets (``env``, ``headers``) are never shown.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from .exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE, print_error, print_warning

COLUMNS = ("SERVER", "SOURCE", "TRANSPORT", "STATUS", "TOOLS")


def add_mcp_parser(commands: Any) -> None:
    mcp = commands.add_parser("mcp", help="MCP servers: list them with their status and tools")
    actions = mcp.add_subparsers(dest="mcp_command", metavar="ACTION")
    listing = actions.add_parser("list", help="the servers a session here would start")
    listing.add_argument("--json", dest="as_json", action="store_true", help="JSON output")
    listing.add_argument("--mcp-config", action="append", default=[], metavar="FILE|JSON",
                         help="also these servers, as run --mcp-config takes them")
    listing.add_argument("--strict-mcp-config", action="store_true",
                         help="only the servers of --mcp-config")


def mcp_command(args: Any, blocked: list[str]) -> int:
    if getattr(args, "mcp_command", None) != "list":
        print_error("give an action: zpi-host mcp list")
        return EXIT_USAGE
    from ..contract.plugins import PluginConfig, PluginHost
    from ..errors import ZpiError
    from ..session.assembly import resolve_agent_dir
    from ..settings.manager import SettingsManager
    from ..settings.mcp_sources import MCP_SOURCES, gather_mcp_sources, mcp_config_arguments
    from ..settings.trust import is_trusted

    root = Path(args.cwd or os.getcwd()).expanduser().resolve()
    manager = SettingsManager(resolve_agent_dir(None, os.environ), root)
    for problem in manager.problems:
        print_warning(problem)
    trusted = is_trusted(manager.layer("user"), root)
    settings = manager.snapshot()
    try:
        given = mcp_config_arguments(args.mcp_config) if args.mcp_config else None
        settings[MCP_SOURCES], _ = gather_mcp_sources(
            manager, root, given=given, strict=args.strict_mcp_config, trusted=trusted,
            read_project=True)
    except ZpiError as exc:
        print_error(exc)
        return EXIT_USAGE
    disabled = settings.get("plugins", {}).get("disabled", [])
    host = PluginHost(PluginConfig.from_env(blocked=blocked, settings_disabled=disabled,
                                            settings=settings, cwd=root, trusted=trusted))
    host.load()
    lister = next((getattr(r.plugin, "list_mcp_servers", None) for r in host.records
                   if r.status == "ok" and callable(getattr(r.plugin, "list_mcp_servers", None))),
                  None)
    if lister is None:
        print_error("no loaded plugin lists MCP servers: install zpi-builtins and leave "
                    "builtins:mcp enabled")
        return EXIT_FAILED
    import asyncio

    rows: list[dict[str, Any]] = asyncio.run(lister(root, settings))
    if args.as_json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    if not rows:
        print("no MCP servers configured (see zpi-host docs: mcp)", file=sys.stderr)
        return EXIT_OK
    from ..support.terminal_text import for_terminal

    table = [COLUMNS] + [(r["name"], r["origin"], r["transport"], r["status"],
                          ", ".join(r["tools"]) or "-") for r in rows]
    widths = [max(len(str(line[i])) for line in table) for i in range(len(COLUMNS) - 1)]
    for line, row in zip(table, [None, *rows], strict=True):
        cells = [str(c).ljust(w) for c, w in zip(line, widths, strict=False)]
        print(for_terminal("  ".join([*cells, str(line[-1])])))
        if row is not None and row.get("error"):
            print(for_terminal(f"    {row['error']}"))
        if row is not None and row.get("tools_changed") is not None:
            print(for_terminal("    its tool list changed while listed; a session now gets: "
                               + (", ".join(row["tools_changed"]) or "no tools")))
    return EXIT_OK
