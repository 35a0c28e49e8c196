"""Service ``builtins:handoff``, the plugin module: a hand-off document, then the context
rebuilt around it.

The service itself (:class:`~.handoff_service.HandoffService`: the document's executors, the
template's sections, the migration) lives in :mod:`.handoff_service`, imported when a session
first asks for it (:func:`handoff_for`) or a refused ``write``/``edit`` runs: every start loads
this module, few hand off. Its names can still be imported from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from zpi_host import hookimpl
from zpi_host.support.lazy import lazy_attributes

from .handoff_constants import SERVICE
from .settings import enabled

if TYPE_CHECKING:
    from .handoff_service import (
        HandoffError,
        HandoffResult,
        HandoffService,
        HandoffTemplate,
        MigrationResult,
        load_template,
        missing_sections,
    )

__all__ = ["HandoffError", "HandoffResult", "HandoffService", "HandoffTemplate",
           "MigrationResult", "handoff_for", "load_template", "missing_sections",
           "zpi_tool_overrides"]

#: shown by ``zpi-host --list-plugins``
contributes = {"services": ["hand-off", "migration"], "tool_overrides": ["edit", "write"]}

#: the service module's public names, imported on first use
__getattr__, __dir__ = lazy_attributes(__name__, dict.fromkeys((
    "HandoffError", "HandoffResult", "HandoffService", "HandoffTemplate", "MigrationResult",
    "load_template", "missing_sections"), "handoff_service"), globals(), parent="zpi_builtins")


def handoff_for(session: Any) -> HandoffService:
    """The session's hand-off service (a ``SessionView``)."""
    from .handoff_service import HandoffService
    from .runtime import runtime_for

    return runtime_for(session).service(SERVICE, HandoffService)


def _refusing(tool: Any) -> Any:
    """``tool`` (kernel ``write`` or ``edit``) with the hand-off's soft refusal in front."""
    original = tool.execute

    def execute(args: Mapping[str, Any], ctx: Any) -> Any:
        if ctx.session is not None:
            refusal = handoff_for(ctx.session).refusal(ctx.cwd, args["path"])
            if refusal is not None:
                from zpi_host.tools import ToolResult

                return ToolResult.error(refusal, details={"handoff_refusal": True})
        return original(args, ctx)

    return attrs.evolve(tool, execute=execute)


@hookimpl
def zpi_tool_overrides(cwd: Path, settings: Mapping[str, Any]) -> list[Any] | None:
    if not enabled(settings, SERVICE):
        return None
    from zpi_host.tools.edit import edit_tool
    from zpi_host.tools.write import write_tool

    return [_refusing(write_tool()), _refusing(edit_tool())]
