"""What ``zpi-host --list-plugins`` shows: one row per plugin, as JSON objects or a table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .plugin_names import later_claimants
from .plugins import PluginHost, PluginRecord

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


def format_table(rows: list[dict[str, Any]], width: int | None = None) -> str:
    """An aligned text table; a failed or blocked plugin's reason goes on the line below it.
    With ``width`` (a terminal's) and a table wider than that, the hooks and contributions go
    on wrapped lines under their plugin and the other columns are cut to fit."""
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
    wide = sum(widths) + 2 * len(widths) + max(len(c[-1]) for c in cells)
    if width is not None and wide > width:
        return _narrow_table(rows, cells, width)
    lines = []
    for index, cell in enumerate(cells):
        head = "  ".join(value.ljust(w) for value, w in zip(cell, widths, strict=False))
        lines.append(f"{head}  {cell[-1]}".rstrip())
        lines.extend(_notes(rows, index))
    return "\n".join([*lines, _loaded(rows)])


def _notes(rows: list[dict[str, Any]], index: int) -> list[str]:
    """The lines under the table's line ``index``: the plugin's error and warnings."""
    if not index:
        return []
    row = rows[index - 1]
    notes = [f"    {row['status']}: {row['error']}"] if row["error"] else []
    return notes + [f"    warning: {w}" for w in row.get("warnings", ())]


def _loaded(rows: list[dict[str, Any]]) -> str:
    ok = sum(1 for r in rows if r["status"] == "ok")
    return f"\n{ok} of {len(rows)} plugins loaded"


def _narrow_table(rows: list[dict[str, Any]], cells: Sequence[tuple[str, ...]],
                  width: int) -> str:
    """The table within ``width`` columns: name, source, distribution and status on the
    plugin's line (the distribution, then the name, cut with an ellipsis when they do not
    fit), its hooks and contributions wrapped on the lines under it (``--wide``: one line)."""
    import textwrap

    width = max(width, 40)
    main = [list(c[:4]) for c in cells]
    widths = [max(len(c[i]) for c in main) for i in range(4)]
    for column in (2, 0):  # cut the distribution first, then the name
        over = sum(widths) + 6 - width
        if over > 0:
            widths[column] = max(widths[column] - over, 8)
    lines = []
    for index, cell in enumerate(main):
        values = [_cut(value, w) for value, w in zip(cell, widths, strict=True)]
        lines.append("  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip())
        if index:
            for label, text in (("hooks", cells[index][4]), ("contributes", cells[index][5])):
                if text != "-":
                    lines += textwrap.wrap(f"{label}: {text}", width, initial_indent="    ",
                                           subsequent_indent="      ", break_long_words=True,
                                           break_on_hyphens=False)
        lines.extend(_notes(rows, index))
    return "\n".join([*lines, _loaded(rows)])


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"
