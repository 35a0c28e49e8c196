"""``zpi-host --list-plugins``: what is loaded, from where, and why not."""

from __future__ import annotations

import gc
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import PluginLoadError
from ..support.terminal_text import shown
from .exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE, print_error, print_warning

if TYPE_CHECKING:
    from ..contract.plugins import PluginHost
    from ..settings.manager import SettingsManager


def list_plugins(
    blocked: Sequence[str], *, as_json: bool, strict: bool, cwd: str | None,
    plugin_dirs: Sequence[str] = (), zcode_plugin_dirs: Sequence[str] = (),
    modules: Mapping[str, object] | None = None, wide: bool = False,
) -> int:
    from ..contract.diagnostics import format_table, plugin_rows
    from ..contract.plugins import PluginConfig, PluginHost
    from ..settings.manager import SettingsManager, agent_dir

    root = Path(cwd).expanduser().resolve() if cwd else Path.cwd()
    if not root.is_dir():
        print_error(f"--cwd {cwd}: no such directory")
        return EXIT_USAGE
    settings = SettingsManager(agent_dir(), root)
    for problem in settings.problems:
        print_warning(problem)
    disabled = settings.get("plugins.disabled", [])
    if not isinstance(disabled, list) or not all(isinstance(d, str) for d in disabled):
        print_error(f"setting plugins.disabled must be a list of plugin names, got "
                    f"{disabled!r}")
        return EXIT_USAGE
    merged = settings.snapshot()
    from ..settings.trust import hold_back_gated, is_trusted, not_run

    trusted = is_trusted(settings.layer("user"), root)  # listed as a session would load them
    withheld = [] if trusted else hold_back_gated(settings, merged, root)
    if plugin_dirs or zcode_plugin_dirs:
        from ..settings.plugin_dirs import with_plugin_dirs

        merged = with_plugin_dirs(merged, plugin_dirs, zcode_plugin_dirs)
    host = PluginHost(PluginConfig.from_env(blocked=blocked, settings_disabled=disabled,
                                            settings=merged, cwd=root, trusted=trusted))
    try:
        host.load()
        for name, module in (modules or {}).items():
            host.register_plugin(module, name)
    except PluginLoadError as exc:
        print_error(exc)
        return EXIT_FAILED
    withheld += [item for item in host.withheld if item not in withheld]
    if withheld:
        print(shown(f"zpi-host: warning: {not_run(root, withheld)}", sys.stderr),
              file=sys.stderr)
    if plugin_dirs or zcode_plugin_dirs:
        from ..errors import UsageError
        from ..settings.plugin_dirs import check_adapters

        try:
            check_adapters(plugin_dirs, zcode_plugin_dirs,
                           {r.name: (r.status, r.error) for r in host.records},
                           autoload=host.config.autoload)
        except UsageError as exc:
            print(f"zpi-host: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    from ..contract.plugin_names import block_name_sources, unmatched_block_names

    for warning in unmatched_block_names(host, block_name_sources(os.environ, blocked,
                                                                  disabled)):
        print(f"zpi-host: warning: {warning}", file=sys.stderr)
    rows = plugin_rows(host, root, merged)
    _add_mcp_servers(rows, host, settings, root, trusted)
    # One listing per process: what it built lives until exit, so the collection Python runs
    # at exit need not walk it (as `run` does once its session is built: cli/run.py).
    gc.freeze()
    if as_json:
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(shown(format_table(rows, None if wide else _terminal_width()), sys.stdout,
                    exact=True))
    if strict and any(row["status"] == "failed" for row in rows):
        return EXIT_FAILED
    return EXIT_OK


def _terminal_width() -> int | None:
    """The width of the terminal stdout is (None: a pipe or a file gets the table whole)."""
    if not sys.stdout.isatty():
        return None
    import shutil

    return shutil.get_terminal_size((100, 24)).columns


def _add_mcp_servers(rows: list[dict[str, Any]], host: PluginHost, manager: SettingsManager,
                     root: Path, trusted: bool) -> None:
    """The MCP servers a session here would have, named in the row of the plugin that runs
    them (its module's ``mcp_server_names``): names and statuses only, nothing is started
    (``zpi-host mcp list`` starts them) and no secret is shown."""
    from ..settings.mcp_sources import MCP_SOURCES, gather_mcp_sources

    by_name = {row["name"]: row for row in rows}
    for record in host.records:
        row = by_name.get(record.name)
        names = getattr(record.plugin, "mcp_server_names", None)
        if row is None:
            continue
        if record.status != "ok" or not callable(names):
            continue
        sources, _ = gather_mcp_sources(manager, root, given=None, strict=False,
                                        trusted=trusted, read_project=True)
        listed = names({MCP_SOURCES: sources})
        if listed:
            contributes = dict(row.get("contributes") or {})
            contributes["mcp servers"] = listed
            row["contributes"] = contributes
