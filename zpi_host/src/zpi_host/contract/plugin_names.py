"""Judgements about plugins' names: which of two plugins claiming one name fails (the later
loaded), and which names given to block plugins match nothing the host saw (a typo blocks
nothing, silently)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from .plugins import env_list

if TYPE_CHECKING:
    from .plugins import PluginHost

__all__ = ["block_name_sources", "later_claimants", "unmatched_block_names"]


def later_claimants(claims: Iterable[tuple[str, str]], load_order: Sequence[str],
                    what: str) -> dict[str, str]:
    """The plugins that fail a name clash, each with the reason: of the plugins that claim one
    ``what`` name (a tool), the one loaded first (``load_order``: the kernel, then entry
    points by distribution, then folders, as ``--list-plugins`` lists them) keeps it and every
    later one fails, as does a plugin that claims a name twice. Hook call order (the last
    registered first) plays no part: a distribution cannot take a kernel tool's name."""
    rank = {name: index for index, name in enumerate(load_order)}
    names_of: dict[str, list[str]] = {}
    for plugin, name in claims:
        names_of.setdefault(plugin, []).append(name)
    owners: dict[str, str] = {}
    failed: dict[str, str] = {}
    for plugin in sorted(names_of, key=lambda p: rank.get(p, len(rank))):
        names = names_of[plugin]
        taken = next((n for n in names if n in owners), None)
        twice = next((n for n in names if names.count(n) > 1), None)
        if taken is not None:
            failed[plugin] = (f"its {what} {taken!r} is already registered by plugin "
                              f"{owners[taken]!r}; give it another name, or block one of the "
                              "two plugins (-p no:NAME)")
        elif twice is not None:
            failed[plugin] = f"it registers the {what} {twice!r} twice"
        else:
            owners.update(dict.fromkeys(names, plugin))
    return failed


def block_name_sources(environ: Mapping[str, str], blocked: Iterable[str],
                       settings_disabled: Iterable[str]) -> dict[str, list[str]]:
    """The names given to block plugins, by how a warning shows where each was given (a
    template of ``name``)."""
    return {"setting plugins.disabled: {name!r}": list(settings_disabled),
            "-p no:{name}": list(blocked),
            "ZPI_DISABLE_PLUGINS: {name!r}": env_list(environ.get("ZPI_DISABLE_PLUGINS"))}


def unmatched_block_names(host: PluginHost, given: Mapping[str, Iterable[str]]) -> list[str]:
    """Warnings for names given to block plugins (``given``: as in :func:`block_name_sources`)
    that match no plugin or distribution the host saw (a typo blocks nothing, silently), each
    with the closest names it saw. ``claude:x`` under a blocked or failed ``claude`` is not
    judged: the folders of an adapter that did not run are unknown. Without autoload nothing
    is judged: the installed entry points were never listed."""
    if not host.config.autoload:
        return []
    seen = {r.name for r in host.records} | {r.distribution for r in host.records
                                              if r.distribution}
    unknown_below = {r.name for r in host.records if r.status != "ok"}
    warnings = []
    for where, names in given.items():
        for name in dict.fromkeys(names):
            if name in seen or name.partition(":")[0] in unknown_below - {name}:
                continue
            import difflib  # start-up: only for a name that matches nothing

            close = difflib.get_close_matches(name, sorted(seen), n=3, cutoff=0.6)
            hint = (" (did you mean " + " or ".join(repr(c) for c in close) + "?)") if close \
                else ""
            warnings.append(f"{where.format(name=name)} matches no plugin or distribution, "
                            f"so it blocks nothing{hint}; zpi-host --list-plugins lists the "
                            "names")
    return warnings
