"""Service ``builtins:context_guard``: a hard ceiling on what one model request may hold.

Before each request (``zpi_before_request``) the guard compares the session's context size
(``SessionView.context_size()``: the provider's last input figure plus an estimate of what
followed it, or the sum of the estimates) with ``max_tokens x ratio`` (settings
``plugins.builtins.context_guard``; ``max_tokens`` null means the model's context window from
the catalog). Over it, it raises ``ContextOverflowError`` saying what size, what limit and what
to do, before the request reaches the provider: the loop then compacts once and retries once,
and a second overflow ends the run with that message. Compaction's own threshold lies below
the default ceiling, so the guard only acts when compaction could not keep up (one huge tool
result, compaction off). While a hand-off runs (:meth:`ContextGuard.relaxed`) the ceiling is
doubled, so the agent can still write the document that lets the context be rebuilt. With no
window known and no ``max_tokens``, or a size that cannot be estimated (an image), there is
nothing to compare and the request goes out.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from zpi_host import hookimpl
from zpi_host.errors import ContextOverflowError

from .runtime import BuiltinPluginRuntime, runtime_for
from .settings import enabled, service_settings

__all__ = ["ContextGuard", "guard_for", "zpi_before_request"]

#: shown by ``zpi-host --list-plugins``
contributes = {"request checks": ["context ceiling"]}

SERVICE = "context_guard"
RELAXED_FACTOR = 2


class ContextGuard:
    """The context guard of one session."""

    def __init__(self, runtime: BuiltinPluginRuntime) -> None:
        config = service_settings(runtime.settings, SERVICE)
        self.max_tokens: int | None = config["max_tokens"]
        self.ratio = float(config["ratio"])
        self._relaxations = 0

    @property
    def is_relaxed(self) -> bool:
        return self._relaxations > 0

    @contextmanager
    def relaxed(self) -> Iterator[None]:
        """The ceiling doubled while the block runs (a hand-off); nests."""
        self._relaxations += 1
        try:
            yield
        finally:
            self._relaxations -= 1

    def ceiling(self, context_window: int | None) -> int | None:
        """The most tokens a request may hold now; None when no size is known."""
        base = self.max_tokens or context_window
        if not base:
            return None
        factor = RELAXED_FACTOR if self.is_relaxed else 1
        return int(base * self.ratio * factor)

    def check(self, session: Any) -> None:
        """Raise ContextOverflowError when the session's context is over the ceiling."""
        usage = session.context_size()
        limit = self.ceiling(usage.context_window)
        size = usage.total_tokens
        if limit is None or size is None or size <= limit:
            return
        base = "max_tokens" if self.max_tokens else "the model's context window"
        how = (f"{self.max_tokens or usage.context_window:,} ({base}) x ratio {self.ratio:g}"
               + (f" x {RELAXED_FACTOR} while a hand-off runs" if self.is_relaxed else ""))
        estimate = "about " if usage.estimated else ""
        raise ContextOverflowError(
            f"context guard: the request to {session.model} would hold {estimate}{size:,} "
            f"tokens, over the ceiling of {limit:,} tokens ({how}; settings "
            f"plugins.builtins.context_guard). Compact the conversation (/compact), start a "
            f"new session, or raise plugins.builtins.context_guard.ratio or max_tokens if "
            f"the model takes more")


def guard_for(session: Any) -> ContextGuard:
    """The session's guard (a hand-off relaxes it through this)."""
    return runtime_for(session).service(SERVICE, ContextGuard)


@hookimpl
def zpi_before_request(session: Any, request: Any) -> None:
    if getattr(request, "purpose", None) is None and enabled(session.settings, SERVICE):
        guard_for(session).check(session)
