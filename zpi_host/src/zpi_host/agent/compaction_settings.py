"""Compaction's settings and when it is due: what the loop needs at every turn, apart from
the compaction itself (:mod:`.compaction`, imported when a history is compacted). Importable
from :mod:`.compaction` too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ..errors import ZpiError
from ..support.attrs_methods import FrozenFieldsEq
from .context_usage import last_reported

if TYPE_CHECKING:
    from .state import SessionState

__all__ = ["DEFAULT_KEEP_RECENT_TOKENS", "DEFAULT_RESERVE_TOKENS", "CompactionError",
           "CompactionSettings", "over_threshold"]

DEFAULT_RESERVE_TOKENS = 16_384
DEFAULT_KEEP_RECENT_TOKENS = 20_000


class CompactionError(ZpiError):
    """A compaction that could not be done (nothing to summarise, cancelled, model failed)."""


@attrs.frozen(repr=False, eq=False, slots=False)
class CompactionSettings(FrozenFieldsEq):
    enabled: bool = True
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> CompactionSettings:
        raw = settings.get("compaction", {})
        if not isinstance(raw, Mapping):
            raise CompactionError(f"setting 'compaction' must be an object, got {raw!r}")
        unknown = set(raw) - {"enabled", "reserve_tokens", "keep_recent_tokens"}
        if unknown:
            raise CompactionError(f"unknown setting(s) {', '.join(sorted(unknown))} under "
                                  "'compaction' (known: enabled, reserve_tokens, "
                                  "keep_recent_tokens)")
        for key in ("reserve_tokens", "keep_recent_tokens"):
            value = raw.get(key, 0)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise CompactionError(f"setting compaction.{key} must be a whole number >= 0, "
                                      f"got {value!r}")
        if not isinstance(raw.get("enabled", True), bool):
            raise CompactionError("setting compaction.enabled must be true or false")
        return cls(raw.get("enabled", True),
                   raw.get("reserve_tokens", DEFAULT_RESERVE_TOKENS),
                   raw.get("keep_recent_tokens", DEFAULT_KEEP_RECENT_TOKENS))


def over_threshold(session: SessionState, config: CompactionSettings) -> bool:
    """True when the last reported request input leaves less than the reserve."""
    entry = session.model_entry
    window = entry.context_window if entry is not None else None
    if not config.enabled or not window:
        return False
    reported = last_reported(session.messages)
    return reported is not None and reported[1] > window - config.reserve_tokens
