"""What turns a ``ZPI_*`` switch on: ``1``, ``true``, ``yes`` or ``on``, any case, blanks
around ignored (docs/user-guide.md). One rule for the plugin controls and the CLI's own."""

from __future__ import annotations

__all__ = ["env_flag"]

_ON = frozenset({"1", "true", "yes", "on"})


def env_flag(value: str | None) -> bool:
    """Whether the variable's ``value`` (None: unset) switches something on."""
    return (value or "").strip().lower() in _ON
