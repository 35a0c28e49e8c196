"""Service ``builtins:auto_migrate``: hand off and migrate on its own past a threshold.

At the end of a run (``zpi_run_end``) whose context holds more than ``threshold`` of the
context size (``plugins.builtins.context_guard.max_tokens``, else the model's context
window), it leaves a job for the end of that run (``ports.conversation.after_run``): the
hand-off with the configured executor, then the migration with the configured strategy. It
yields while a hand-off is busy or already waiting (the hand-off's own run ends through
``zpi_run_end`` too). A hand-off that fails is a warning of the session; nothing is migrated
and no message is lost. Off by default: it runs model turns and writes a file into the
project the user did not ask for.
"""

from __future__ import annotations

from typing import Any

from zpi_host import hookimpl

from .handoff import handoff_for
from .settings import enabled, service_settings

__all__ = ["over_threshold", "zpi_run_end"]

#: shown by ``zpi-host --list-plugins``
contributes = {"services": ["automatic hand-off and migration"]}

SERVICE = "auto_migrate"


def over_threshold(session: Any, threshold: float) -> bool:
    """True when the session's context holds more than ``threshold`` of its size."""
    size = session.context_size()
    base = service_settings(session.settings, "context_guard")["max_tokens"] or \
        size.context_window
    return bool(base) and size.total_tokens is not None and \
        size.total_tokens > base * threshold


@hookimpl
def zpi_run_end(session: Any, result: Any) -> None:
    if not enabled(session.settings, SERVICE) or not enabled(session.settings, "handoff"):
        return
    config = service_settings(session.settings, SERVICE)
    service = handoff_for(session)
    if service.busy or service.scheduled or result.is_error:
        return
    if not over_threshold(session, float(config["threshold"])):
        return
    service.scheduled = True

    async def hand_off_and_migrate() -> None:
        try:
            await service.handoff_and_migrate(config["executor"], config["strategy"])
        finally:
            service.scheduled = False

    session.ports.conversation.after_run(hand_off_and_migrate)
