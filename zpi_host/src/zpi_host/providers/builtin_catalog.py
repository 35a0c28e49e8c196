"""The built-in model catalog: ``catalog_data.json`` shipped with zpi-host, read once.

The file is data, written by ``scripts/refresh_catalog.py`` from genai-prices and the
hand-kept ``scripts/catalog_overlay.json`` (see docs/models.md); the host never imports
genai-prices. Settings ``models`` extend and override it (``catalog.py``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["BUILTIN_SOURCE", "builtin_defaults", "builtin_models", "builtin_services"]

#: how errors and ``zpi-host models`` name entries that come from the shipped file
BUILTIN_SOURCE = "the built-in catalog"


@functools.cache
def _data() -> Mapping[str, Any]:
    from importlib.resources import files

    text = files(__package__).joinpath("catalog_data.json").read_text(encoding="utf-8")
    data = json.loads(text)
    if not isinstance(data, dict):
        raise TypeError("catalog_data.json must hold an object")
    return data


def builtin_models() -> Mapping[str, Mapping[str, Any]]:
    """Catalog name -> entry (the same fields as a settings ``models`` entry)."""
    return _data().get("models", {})  # type: ignore[no-any-return]


def builtin_services() -> Mapping[str, Mapping[str, Any]]:
    """OpenAI-compatible services usable as ``SERVICE:MODEL``: wire provider, base URL and
    key variable (none for local servers)."""
    return _data().get("services", {})  # type: ignore[no-any-return]


def builtin_defaults() -> Mapping[str, str]:
    """Provider -> the catalog name used when only that provider's key is set, in the order
    providers are tried."""
    return _data().get("defaults", {})  # type: ignore[no-any-return]
