"""Each service's settings (``plugins.builtins.<name>``) with the schema's defaults filled in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zpi_host.settings.schema import Section, Setting, find


def service_settings(settings: Mapping[str, Any], name: str) -> dict[str, Any]:
    """``plugins.builtins.<name>`` from ``settings``, every missing key at its default."""
    node = find(f"plugins.builtins.{name}")
    if not isinstance(node, Section):
        raise KeyError(f"plugins.builtins.{name} is not a built-in service")
    plugins = settings.get("plugins")
    builtins = plugins.get("builtins") if isinstance(plugins, Mapping) else None
    given = builtins.get(name) if isinstance(builtins, Mapping) else None
    given = given if isinstance(given, Mapping) else {}
    return {child.name: given.get(child.name, child.default) for child in node.children
            if isinstance(child, Setting)}


def enabled(settings: Mapping[str, Any], name: str) -> bool:
    """Whether the service ``name`` is switched on (``plugins.builtins.<name>.enabled``)."""
    return service_settings(settings, name)["enabled"] is True


def drain_timeout(settings: Mapping[str, Any]) -> float:
    plugins = settings.get("plugins")
    builtins = plugins.get("builtins") if isinstance(plugins, Mapping) else None
    value = builtins.get("drain_timeout") if isinstance(builtins, Mapping) else None
    default: float = find("plugins.builtins.drain_timeout").default  # type: ignore[union-attr]
    return float(value) if isinstance(value, int | float) and value > 0 else default
