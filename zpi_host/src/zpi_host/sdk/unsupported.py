"""How the SDK refuses what this host cannot honour: the error naming the option, and when an
option counts as given (options, agent definitions and the output format all check)."""

from __future__ import annotations

from typing import Any

from ..errors import UsageError

__all__ = ["UnsupportedOptionError", "is_unset"]


class UnsupportedOptionError(UsageError):
    """An option of claude-agent-sdk that this host cannot honour."""

    def __init__(self, option: str, why: str) -> None:
        super().__init__(f"option {option!r} is not supported by zpi_host.sdk: {why}")
        self.option = option


def is_unset(value: Any) -> bool:
    """None, False or empty: an option (or field) that was not given."""
    return value is None or value is False or (hasattr(value, "__len__") and len(value) == 0)
