"""Lazy package attributes (PEP 562): a package names the module holding each public name,
and that module is imported only when the name is first used, so ``import zpi_host.sdk`` (or
the CLI listing plugins) loads nothing it does not need. Standard library only."""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from importlib import import_module
from typing import Any


def lazy_attributes(package: str, table: Mapping[str, str],
                    namespace: MutableMapping[str, Any], *, parent: str | None = None,
                    ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``table`` maps each public name to the
    submodule (relative, without the dot, or with leading dots for one further up) that
    defines it; a name once imported is kept in
    the package's ``namespace`` so the next use costs nothing. A plain module (not a package)
    gives its ``parent`` package, which the table's modules are relative to."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        relative = module if module.startswith(".") else f".{module}"
        value = getattr(import_module(relative, parent or package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(table) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__
