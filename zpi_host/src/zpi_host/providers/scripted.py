"""The ``scripted`` provider: replays a JSONL script, one assistant turn per request.

``--model scripted:PATH`` is the offline default of the README's demo and of the tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from .base import ModelRequest, StreamEvent
from .catalog import ModelEntry
from .script import CallNumbering, ScriptedTurn, ScriptError, load_script


class ScriptedProvider:
    """Answers request N with turn N; asking past the end is a clear error. Turns with a
    ``purpose`` answer only side requests with that purpose (``ModelRequest.purpose``, a
    title request), in order; a script without them is never asked a side request
    (:meth:`answers`)."""

    name = "scripted"

    def __init__(self, turns: list[ScriptedTurn], source: str,
                 entry: ModelEntry | None = None) -> None:
        self.model = source
        self.entry = entry if entry is not None else ModelEntry(
            name=f"scripted:{source}", provider="scripted", model=source)
        self._turns = [t for t in turns if t.purpose is None]
        self._side = [t for t in turns if t.purpose is not None]
        self._next = 0
        self._numbering = CallNumbering("call")

    @property
    def remaining(self) -> int:
        return len(self._turns) - self._next

    def answers(self, purpose: str) -> bool:
        """Whether the script still holds a turn for a side request of ``purpose``."""
        return any(t.purpose == purpose for t in self._side)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        purpose = request.purpose
        if purpose is not None:
            turn = next((t for t in self._side if t.purpose == purpose), None)
            if turn is None:
                raise ScriptError(f"scripted model {self.model} has no turn with purpose "
                                  f"{purpose!r}; add one to answer this side request")
            self._side.remove(turn)
            for event in turn.events(f"side_{purpose}"):
                yield event
            return
        if self._next >= len(self._turns):
            raise ScriptError(
                f"scripted model {self.model} has {len(self._turns)} turn(s) and the session "
                f"asked for turn {self._next + 1}; add turns to the script or lower --max-turns"
            )
        turn = self._turns[self._next]
        self._next += 1
        for event in turn.events(self._numbering.prefix(self._next, request.messages)):
            yield event

    async def aclose(self) -> None:
        return None


def create_scripted_provider(entry: ModelEntry | str) -> ScriptedProvider:
    """``scripted:PATH`` -> a provider replaying PATH; errors name the file and line."""
    if isinstance(entry, str):
        entry = ModelEntry(name=f"scripted:{entry}", provider="scripted", model=entry)
    if not entry.model:
        raise ScriptError("the scripted model needs a file: --model scripted:PATH")
    path = Path(entry.model).expanduser()
    return ScriptedProvider(load_script(path), str(path), entry)
