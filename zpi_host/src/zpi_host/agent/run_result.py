"""What one run returns: the answer, whether it failed, turns, usage and cost; what
``--output-format json`` prints and what the SDK's result message is built from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ..providers.messages import Usage
from ..support.attrs_methods import FrozenFieldsEq

__all__ = ["RunResult"]


@attrs.frozen(repr=False, eq=False, slots=False)
class RunResult(FrozenFieldsEq):
    """The outcome of one ``run()``: what ``--output-format json`` prints."""

    result: str
    is_error: bool
    num_turns: int
    session_id: str
    usage: Usage
    duration_ms: int
    stop_reason: str
    total_cost_usd: float = 0.0
    model_usage: Mapping[str, Usage] = attrs.field(factory=dict)
    error: str | None = None
    model_cost_usd: Mapping[str, float] = attrs.field(factory=dict)
    unpriced_models: tuple[str, ...] = ()
    denials: tuple[Any, ...] = ()
    #: the typed error that ended a failed run (what the SDK raises by), not serialized
    failure: BaseException | None = attrs.field(default=None, eq=False, repr=False,
                                                metadata={"internal": True})
