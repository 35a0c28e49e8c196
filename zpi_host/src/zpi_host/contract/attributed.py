"""An answer together with the plugin that gave it: what the facade returns for every hook
and what the combined decisions carry, so diagnostics and transcripts can name the plugin."""

from __future__ import annotations

from typing import Any

__all__ = ["Attributed"]


class Attributed:
    """An answer together with the plugin that gave it (diagnostics and transcripts need it)."""

    __slots__ = ("plugin", "value")

    def __init__(self, plugin: str, value: Any) -> None:
        self.plugin, self.value = plugin, value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Attributed) and (self.plugin, self.value) == (
            other.plugin, other.value)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Attributed({self.plugin!r}, {self.value!r})"
