"""claude-agent-sdk's ``Transport``: how its client talks to a Claude Code process.

This host runs the agent in-process, so there is nothing to carry: the class exists for
programs that subclass or annotate with it, and giving one to ``query()`` or
``ClaudeSDKClient`` raises :class:`~.unsupported.UnsupportedOptionError` naming ``transport``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Any

from .unsupported import UnsupportedOptionError

__all__ = ["Transport", "refuse_transport"]


class Transport(ABC):
    """A connection to an agent process: connect, write lines of JSON, read messages."""

    @abstractmethod
    async def connect(self) -> None: ...

    @abstractmethod
    async def write(self, data: str) -> None: ...

    @abstractmethod
    def read_messages(self) -> AsyncIterator[dict[str, Any]]: ...

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    def is_ready(self) -> bool: ...

    @abstractmethod
    async def end_input(self) -> None: ...


def refuse_transport(transport: Any) -> None:
    """Raise UnsupportedOptionError when a transport was given."""
    if transport is not None:
        raise UnsupportedOptionError(
            "transport", "there is no Claude Code process to talk to: this host runs the "
            "agent in-process (leave transport out)")
