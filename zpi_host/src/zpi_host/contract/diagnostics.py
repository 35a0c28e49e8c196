"""What ``zpi-host --list-plugins`` shows: one row per plugin, as JSON objects or a table."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .plugins import PluginHost, PluginRecord, later_claimants

#: The keys of one ``--list-plugins --json`` row, in order. A test pins this shape.
ROW_KEYS = ("name", "distribution", "version", "source", "hooks", "contributes", "status", "error",
            "warnings")


def plugin_rows(
    host: PluginHost, cwd: Path | None = None, settings: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Describe every plugin the host saw, including what its registration hooks contribute.

    A plugin whose registration hook raises is shown as failed with that reason.
    """
    from .hookcalls import CONTRIBUTION_HOOKS, collect_contributions

    calls = host.hooks
    found, failed = calls.call_sync(
        collect_contributions(calls, cwd or Path.cwd(), settings or {}),
        *(hook for hook, _ in CONTRIBUTION_HOOKS),
    )
    claims = [(plugin, tool) for plugin, kinds in found.items() for tool in kinds.get("tools", ())]
    for plugin, reason in later_claimants(claims, [r.name for r in host.records],
                                          "tool").items():
        failed.setdefault(plugin, reason)  # as a session fails it (session/tool_selection.py)
    rows = []
    for record in host.records:
        contributes = declared_contributions(record)
        for kind, names in found.get(record.name, {}).items():
            contributes[kind] = sorted({*contributes.get(kind, ()), *names})
        status, error = record.status, record.error
        if record.name in failed and status == "ok":
            status, error = "failed", failed[record.name]
        rows.append({
            "name": record.name,
            "distribution": record.distribution,
            "version": record.version,
            "source": record.source,
            "hooks": host.implemented_hooks(record.name),
            "contributes": dict(sorted(contributes.items())),
            "status": status,
            "error": error,
            "warnings": plugin_warnings(record.plugin),
        })
    return rows


class PluginInfo(NamedTuple):
    """One plugin the host saw, as a session may read it (``SessionView.plugins``)."""

    name: str
    source: str
    distribution: str | None
    status: str  # "ok", "blocked" or "failed"
    error: str | None
    #: what it declares it contributes, by kind (``tools``, ``commands`` ...); a blocked
    #: plugin was never imported, so it declares only what its record holds
    contributes: Mapping[str, tuple[str, ...]]


def plugin_infos(host: PluginHost) -> tuple[PluginInfo, ...]:
    """Every plugin ``host`` saw, in registration order, blocked and failed ones included."""
    return tuple(
        PluginInfo(r.name, r.source, r.distribution, r.status, r.error,
                   {kind: tuple(names) for kind, names in declared_contributions(r).items()})
        for r in host.records)


def declared_contributions(record: PluginRecord) -> dict[str, list[str]]:
    """What a plugin's record and the plugin itself (``contributes``) declare, by kind."""
    contributes = {kind: list(names) for kind, names in record.contributes.items()}
    for kind, names in plugin_contributes(record.plugin).items():
        contributes[kind] = sorted({*contributes.get(kind, ()), *names})
    return contributes


def plugin_contributes(plugin: object) -> dict[str, list[str]]:
    """What a plugin declares it contributes beyond its registration hooks
    (``plugin.contributes``, a mapping of kind to names: the services of ``zpi-builtins``)."""
    declared = getattr(plugin, "contributes", None)
    if not isinstance(declared, Mapping):
        return {}
    return {str(kind): [str(n) for n in names] for kind, names in declared.items()
            if isinstance(names, list | tuple)}


def plugin_warnings(plugin: object) -> list[str]:
    """What a loaded plugin says is wrong but not fatal (``plugin.warnings``, a list of
    strings: how compat adapters report unknown manifest fields and unsupported parts)."""
    warnings = getattr(plugin, "warnings", None)
    if not isinstance(warnings, list | tuple):
        return []
    return [str(w) for w in warnings]


def format_table(rows: list[dict[str, Any]]) -> str:
    """An aligned text table; a failed or blocked plugin's reason goes on the line below it."""
    header = ("NAME", "SOURCE", "DISTRIBUTION", "STATUS", "HOOKS", "CONTRIBUTES")
    cells = [header]
    for row in rows:
        dist = row["distribution"] or "-"
        if row["version"]:
            dist = f"{dist} {row['version']}"
        hooks = ", ".join(h.removeprefix("zpi_") for h in row["hooks"]) or "-"
        contributes = "; ".join(
            f"{kind}: {', '.join(names)}" for kind, names in row["contributes"].items() if names
        ) or "-"
        cells.append((row["name"], row["source"], dist, row["status"], hooks, contributes))
    widths = [max(len(c[i]) for c in cells) for i in range(len(header) - 1)]
    lines = []
    for index, cell in enumerate(cells):
        head = "  ".join(value.ljust(width) for value, width in zip(cell, widths, strict=False))
        lines.append(f"{head}  {cell[-1]}".rstrip())
        if index and rows[index - 1]["error"]:
            lines.append(f"    {rows[index - 1]['status']}: {rows[index - 1]['error']}")
        if index:
            lines.extend(f"    warning: {w}" for w in rows[index - 1].get("warnings", ()))
    ok = sum(1 for r in rows if r["status"] == "ok")
    lines.append(f"\n{ok} of {len(rows)} plugins loaded")
    return "\n".join(lines)
