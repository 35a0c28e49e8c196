"""What the SDK benchmarks share: an instant model that calls one tool every turn, and a
``query()`` timed in process CPU time (the model and the tools use no other process, so other
load on the machine does not decide the ratio)."""

from __future__ import annotations

import time
from typing import Any

#: the standard ``Read`` of the small file every SDK benchmark reads
SDK_READ: dict[str, Any] = {"name": "Read", "arguments": {"file_path": "small.txt"}}
PROMPT = "read small.txt again and again"


def instant_model(turns: int, call: dict[str, Any]) -> Any:
    """A model that answers at once: ``call`` for turns 1..turns-1, then text."""
    from zpi_host.testing import FunctionModel

    count = [0]

    def model(request: Any) -> Any:
        count[0] += 1
        return {"tool_calls": [call]} if count[0] < turns else {"text": "done"}

    return FunctionModel(model)


async def timed_query(options: Any, turns: int) -> tuple[float, Any]:
    """(CPU seconds, the result message) of one ``query()`` run to its end; checks it ran
    ``turns`` turns without an error."""
    from zpi_host.sdk import ResultMessage, query

    started = time.process_time()
    last = None
    async for message in query(PROMPT, options):
        last = message
    total = time.process_time() - started
    assert isinstance(last, ResultMessage) and last.num_turns == turns, last
    assert not last.is_error, last
    return total, last
