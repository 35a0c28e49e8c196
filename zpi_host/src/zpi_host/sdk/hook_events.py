"""``include_hook_events``: each run of a ``hooks=`` callback reported on the message stream
as claude-agent-sdk's ``HookEventMessage`` (``hook_started``, then ``hook_response`` with
``output``, ``exit_code`` and ``outcome``).

The callbacks given in ``hooks=`` are wrapped before the Claude adapter's engine receives
them, so each report is about one callback run. The command hooks of settings files and
plugin folders are not reported (the adapter runs them out of the SDK's sight).
"""

from __future__ import annotations

import json
import uuid as uuids
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from .messages import HookEventMessage

__all__ = ["reporting_hooks"]


def reporting_hooks(hooks: Mapping[str, Sequence[Any]], report: Callable[[Any], None]
                    ) -> dict[str, list[Any]]:
    """``hooks`` (event -> ``HookMatcher`` list) with each callback wrapped to ``report``
    its start and its answer."""
    return {event: [attrs.evolve(m, hooks=[_reporting(event, cb, report) for cb in m.hooks])
                    if attrs.has(type(m)) else m for m in matchers]
            for event, matchers in hooks.items()}


def _reporting(event: str, callback: Any, report: Callable[[Any], None]) -> Any:
    if not callable(callback):
        return callback  # the engine refuses it, naming it

    async def reported(input_data: Any, tool_use_id: Any, context: Any) -> Any:
        hook_id = str(uuids.uuid4())
        name = getattr(callback, "__qualname__", type(callback).__name__)
        session_id = input_data.get("session_id") if isinstance(input_data, Mapping) else None
        common = {"type": "system", "hook_id": hook_id, "hook_name": name,
                  "hook_event": event, "session_id": session_id}
        report(_message("hook_started", common, event))
        try:
            answer = await callback(input_data, tool_use_id, context)
        except Exception as exc:
            report(_message("hook_response", {**common, "output": f"{type(exc).__name__}: "
                                              f"{exc}", "exit_code": 1, "outcome": "error"},
                            event))
            raise
        try:
            output = json.dumps(answer, default=str)
        except (TypeError, ValueError):
            output = repr(answer)
        report(_message("hook_response", {**common, "output": output, "exit_code": 0,
                                          "outcome": "success"}, event))
        return answer

    reported.__qualname__ = getattr(callback, "__qualname__", "hook")
    return reported


def _message(subtype: str, data: dict[str, Any], event: str) -> HookEventMessage:
    data = {**data, "subtype": subtype, "uuid": str(uuids.uuid4())}
    return HookEventMessage(subtype, data, hook_event_name=event,
                            session_id=data.get("session_id"), uuid=data["uuid"])
