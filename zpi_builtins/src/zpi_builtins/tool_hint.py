"""Service ``builtins:tool_hint``: help the model out of a call to a tool that does not exist.

The kernel answers such a call with an error result listing the session's tools; this plugin
(``zpi_unknown_tool``) adds the closest names (difflib, after folding case and ``CamelCase``
into ``snake_case``, so ``Read`` finds ``read`` and ``TaskOutput`` finds ``task_output``) and,
when the tool belongs to an installed plugin that is disabled, which plugin and how the user
enables it. The session cannot enable a plugin by itself: the tools of a session are frozen
when it starts, so the model is told to ask the user.

What a disabled plugin would provide is what it declares (``contributes["tools"]``): a plugin
switched off in its own settings is loaded and declares it; a blocked plugin (``-p no:NAME``,
``plugins.disabled``) was never imported, so only a blocked service of ``zpi-builtins`` itself
is looked at (its module is imported to read the declaration; another distribution's blocked
plugin is never imported, since it may be blocked because importing it does harm).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from zpi_host import hookimpl

from .settings import enabled, service_settings

__all__ = ["DisabledTool", "closest_names", "disabled_tools", "hint", "zpi_unknown_tool"]

#: shown by ``zpi-host --list-plugins``
contributes = {"tool hints": ["closest tool names", "disabled plugins"]}

DISTRIBUTION = "zpi-builtins"
MAX_SUGGESTIONS = 3
CUTOFF = 0.6
_CAMEL = r"(?<=[a-z0-9])(?=[A-Z])"  # compiled on first use (re's cache)


class DisabledTool(NamedTuple):
    """A tool an installed plugin would provide, and how the user enables that plugin."""

    tool: str
    plugin: str
    why: str
    enable: str


def fold(name: str) -> str:
    """``WebFetch``, ``web-fetch`` and ``web_fetch`` alike: snake_case, lower case."""
    return re.sub(_CAMEL, "_", name.strip()).replace("-", "_").replace(" ", "_").lower()


def closest_names(name: str, candidates: Iterable[str], n: int = MAX_SUGGESTIONS) -> list[str]:
    """Up to ``n`` of ``candidates`` closest to ``name``, best first (folded comparison)."""
    import difflib  # only when a model calls a tool that does not exist

    by_fold: dict[str, str] = {}
    for candidate in candidates:
        by_fold.setdefault(fold(candidate), candidate)
    matches = difflib.get_close_matches(fold(name), list(by_fold), n=n, cutoff=CUTOFF)
    return [by_fold[m] for m in matches]


def _declared_by_blocked_builtin(plugin: str) -> list[str]:
    """The tools a blocked service of this distribution declares (its module imported)."""
    import importlib
    from importlib.metadata import entry_points

    for ep in entry_points(group="zpi.plugins", name=plugin):
        if ep.dist is None or ep.dist.name != DISTRIBUTION:
            continue
        try:
            module = importlib.import_module(ep.module)
        except ImportError:
            return []
        declared = getattr(module, "contributes", None)
        tools = declared.get("tools") if isinstance(declared, Mapping) else None
        return [str(t) for t in tools] if isinstance(tools, list | tuple) else []
    return []


def _switched_off(plugin: str, settings: Mapping[str, Any]) -> str | None:
    """The settings key that switches a loaded ``builtins:<name>`` service off, or None."""
    if not plugin.startswith("builtins:"):
        return None
    name = plugin.removeprefix("builtins:")
    try:
        service_settings(settings, name)
    except KeyError:  # a service without settings of its own cannot be switched off there
        return None
    return None if enabled(settings, name) else f"plugins.builtins.{name}.enabled"


def disabled_tools(plugins: Sequence[Any], settings: Mapping[str, Any]) -> list[DisabledTool]:
    """Tools of installed plugins that are blocked, failed, or switched off in settings."""
    found: list[DisabledTool] = []
    for info in plugins:
        tools = list(info.contributes.get("tools", ()))
        if info.status == "blocked":
            if not tools and info.distribution == DISTRIBUTION:
                tools = _declared_by_blocked_builtin(info.name)
            why = f"blocked ({info.error})" if info.error else "blocked"
            enable = (f"remove {info.name} from plugins.disabled, ZPI_DISABLE_PLUGINS or the "
                      f"-p no:{info.name} option (and add it to ZPI_LOAD_PLUGINS when that is "
                      f"set)")
        elif info.status == "failed":
            why, enable = f"failed to load ({info.error})", "fix the error it reports"
        else:
            key = _switched_off(info.name, settings)
            if key is None:
                continue
            why, enable = "switched off in settings", f"set {key} to true"
        found.extend(DisabledTool(tool, info.name, why, enable) for tool in tools)
    return found


def hint(name: str, available: Sequence[str], disabled: Sequence[DisabledTool]) -> str | None:
    """What to tell the model about a call to ``name``: the closest available names and the
    disabled plugin that provides it (or a close name); None when there is nothing to say."""
    offered = {d.tool: d for d in disabled if d.tool not in available}
    close = closest_names(name, [*available, *offered])
    lines = []
    suggestions = [c for c in close if c in available]
    if suggestions:
        lines.append("Did you mean " + " or ".join(repr(s) for s in suggestions) + "?")
    for tool in [c for c in close if c in offered]:
        d = offered[tool]
        lines.append(f"The tool {tool!r} is provided by the plugin {d.plugin}, which is "
                     f"{d.why}. It cannot be enabled inside this session: if you need it, "
                     f"ask the user to {d.enable} and start a new session.")
    return "\n".join(lines) or None


@hookimpl
def zpi_unknown_tool(session: Any, call: Any, available: Sequence[str]) -> str | None:
    if not enabled(session.settings, "tool_hint"):
        return None
    return hint(call.name, available, disabled_tools(session.plugins, session.settings))
