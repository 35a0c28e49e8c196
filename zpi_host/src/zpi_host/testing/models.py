"""In-process models for tests: a list of turns (ScriptedModel) or a function (FunctionModel).

Both speak the provider protocol and the same turn format as ``--model scripted:PATH``.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from ..providers.base import ModelRequest, StreamEvent
from ..providers.script import CallNumbering, ScriptedTurn, parse_turns
from ..providers.scripted import ScriptedProvider

TurnFunction = Callable[[ModelRequest], Any | Awaitable[Any]]


class ScriptedModel(ScriptedProvider):
    """Replays ``turns`` (dicts in the scripted JSONL format, strings, or ScriptedTurn)."""

    def __init__(self, turns: Sequence[Any], name: str = "memory") -> None:
        super().__init__(parse_turns(turns, name), name)
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        async for event in super().stream(request):
            yield event


class FunctionModel:
    """A model whose every turn is decided by ``function(request)``, which returns a turn (dict,
    string or ScriptedTurn), sync or async. ``requests`` keeps what it was asked. Side
    requests (a title: ``request.purpose``) are sent only for the purposes in ``side``."""

    name = "function"

    def __init__(self, function: TurnFunction, model: str = "function",
                 side: tuple[str, ...] = ()) -> None:
        self.model = model
        self._function = function
        self.side = side
        self.requests: list[ModelRequest] = []
        self._numbering = CallNumbering("fn")

    def answers(self, purpose: str) -> bool:
        return purpose in self.side

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        value = self._function(request)
        if inspect.isawaitable(value):
            value = await value
        turn = ScriptedTurn.parse(value, f"FunctionModel turn {len(self.requests)}")
        for event in turn.events(self._numbering.prefix(len(self.requests), request.messages)):
            yield event

    async def aclose(self) -> None:
        return None
