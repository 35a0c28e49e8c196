"""``zpi-host run --verbose``: after the run, where the time went, the tokens and the cost,
on stderr (every output format)."""

from __future__ import annotations

import sys
from typing import Any

from ..errors import docs_url


class Timings:
    """``--verbose``: where the time went, measured from the session's tool events."""

    def __init__(self, session: Any) -> None:
        import time

        self._clock = time.monotonic
        self._started: dict[str, float] = {}
        self.tool_seconds = 0.0
        self.tool_calls = 0
        session.subscribe(self._on_event, types={"tool_start", "tool_end"})

    def _on_event(self, event: Any) -> None:
        if event.type == "tool_start":
            self._started[event.call_id] = self._clock()
        else:
            started = self._started.pop(event.result.call_id, None)
            self.tool_calls += 1
            if started is not None:
                self.tool_seconds += self._clock() - started

    def report(self, result: Any) -> None:
        """Usage, cost and timings on stderr."""
        u = result.usage
        seconds = result.duration_ms / 1000
        lines = [
            f"{result.num_turns} turn(s) in {seconds:.2f} s; {self.tool_calls} tool call(s) "
            f"took {self.tool_seconds:.2f} s (overlapping calls count once each)",
            f"tokens: {u.input_tokens} in, {u.output_tokens} out, {u.cache_read_tokens} cache "
            f"read, {u.cache_write_tokens} cache write; cost ${result.total_cost_usd:.4f}",
        ]
        for key, usage in result.model_usage.items():
            price = ("unpriced" if key in result.unpriced_models
                     else f"${result.model_cost_usd.get(key, 0.0):.4f}")
            lines.append(f"  {key}: {usage.input_tokens} in, {usage.output_tokens} out, {price}")
        if result.unpriced_models:  # a cost that leaves a model out is never shown as whole
            lines.append(f"warning: the cost leaves out {', '.join(result.unpriced_models)}, "
                         "which the model catalog has no price for (set 'price' for it under "
                         f"'models' in settings.json; see {docs_url('models')})")
        for line in lines:
            print(f"zpi-host: {line}", file=sys.stderr)
