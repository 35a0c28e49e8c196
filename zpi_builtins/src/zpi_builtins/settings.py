"""Each service's settings (``plugins.builtins.<name>``) with the schema's defaults filled in."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from zpi_host.settings.schema import Section, Setting, find


@functools.cache
def _defaults(name: str) -> tuple[tuple[str, Any], ...]:
    """(key, default) of each setting of ``plugins.builtins.<name>``; the schema is a constant,
    so it is walked once per service (hooks ask whether their service is on every turn)."""
    node = find(f"plugins.builtins.{name}")
    if not isinstance(node, Section):
        raise KeyError(f"plugins.builtins.{name} is not a built-in service")
    return tuple((child.name, child.default) for child in node.children
                 if isinstance(child, Setting))


def _given(settings: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    plugins = settings.get("plugins")
    builtins = plugins.get("builtins") if isinstance(plugins, Mapping) else None
    given = builtins.get(name) if isinstance(builtins, Mapping) else None
    return given if isinstance(given, Mapping) else {}


def service_settings(settings: Mapping[str, Any], name: str) -> dict[str, Any]:
    """``plugins.builtins.<name>`` from ``settings``, every missing key at its default."""
    defaults = _defaults(name)
    given = _given(settings, name)
    return {key: given.get(key, default) for key, default in defaults}


def enabled(settings: Mapping[str, Any], name: str) -> bool:
    """Whether the service ``name`` is switched on (``plugins.builtins.<name>.enabled``)."""
    default = dict(_defaults(name))["enabled"]
    return _given(settings, name).get("enabled", default) is True


def drain_timeout(settings: Mapping[str, Any]) -> float:
    plugins = settings.get("plugins")
    builtins = plugins.get("builtins") if isinstance(plugins, Mapping) else None
    value = builtins.get("drain_timeout") if isinstance(builtins, Mapping) else None
    default: float = find("plugins.builtins.drain_timeout").default  # type: ignore[union-attr]
    return float(value) if isinstance(value, int | float) and value > 0 else default
