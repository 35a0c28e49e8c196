"""Scripted turns: what a scripted or function model answers, parsed and validated once.

One format serves the ``scripted`` provider (a JSONL file, one turn per line), ``FunctionModel``
and the loopback model server, so a test script means the same thing everywhere.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from ..errors import UsageError, ZpiError
from ..support.attrs_methods import FrozenFieldsEq
from .base import (
    Done,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    UsageReport,
)
from .messages import AssistantMessage, Message, Usage

TURN_KEYS = frozenset({"text", "thinking", "tool_calls", "usage", "purpose"})
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


class ScriptError(ZpiError):
    """A scripted turn that cannot be understood, or a script that ran out."""


class ScriptFileError(ScriptError, UsageError):
    """The scripted model's file cannot be read: a usage error, like an unknown model."""


@attrs.frozen(repr=False, eq=False, slots=False)
class ScriptedToolCall(FrozenFieldsEq):
    name: str
    arguments: Mapping[str, Any]
    id: str | None = None


@attrs.frozen(repr=False, eq=False, slots=False)
class ScriptedTurn(FrozenFieldsEq):
    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    usage: Usage | None = None
    #: a side request this turn answers (``"title"``): the scripted provider serves it only to
    #: a request with that ``purpose`` option, never to the conversation
    purpose: str | None = None

    @classmethod
    def parse(cls, data: Any, where: str) -> ScriptedTurn:
        """Validate one turn (a JSON object); ``where`` names it in errors."""
        if isinstance(data, ScriptedTurn):
            return data
        if isinstance(data, str):
            return cls(text=data)
        if not isinstance(data, Mapping):
            raise ScriptError(f"{where}: a turn must be a JSON object, got {type(data).__name__}")
        unknown = set(data) - TURN_KEYS
        if unknown:
            raise ScriptError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: "
                              f"{sorted(TURN_KEYS)}")
        purpose = data.get("purpose")
        if purpose is not None and (not isinstance(purpose, str) or not purpose):
            raise ScriptError(f"{where}: 'purpose' must be a non-empty string")
        for key in ("text", "thinking"):
            if not isinstance(data.get(key, ""), str):
                raise ScriptError(f"{where}: {key!r} must be a string")
        calls = data.get("tool_calls", [])
        if not isinstance(calls, list):
            raise ScriptError(f"{where}: 'tool_calls' must be a list")
        parsed: list[ScriptedToolCall] = []
        for i, call in enumerate(calls):
            if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
                raise ScriptError(f"{where}: tool_calls[{i}] needs a string 'name'")
            args = call.get("arguments", {})
            if not isinstance(args, Mapping):
                raise ScriptError(f"{where}: tool_calls[{i}].arguments must be an object")
            call_id = call.get("id")
            if call_id is not None and (not isinstance(call_id, str) or not call_id):
                raise ScriptError(f"{where}: tool_calls[{i}].id must be a non-empty string")
            if call_id is not None and any(c.id == call_id for c in parsed):
                raise ScriptError(f"{where}: tool_calls[{i}].id {call_id!r} is used twice; "
                                  "each call of a turn needs its own id")
            parsed.append(ScriptedToolCall(call["name"], dict(args), call_id))
        usage = None
        if "usage" in data:
            raw = data["usage"]
            if not isinstance(raw, Mapping) or not set(raw) <= set(USAGE_KEYS) or not all(
                _is_count(raw.get(k, 0)) for k in USAGE_KEYS
            ):
                raise ScriptError(f"{where}: 'usage' must be an object of whole numbers >= 0 "
                                  f"with the keys {', '.join(USAGE_KEYS)}")
            usage = Usage(*(raw.get(k, 0) for k in USAGE_KEYS))
        return cls(data.get("text", ""), data.get("thinking", ""), tuple(parsed), usage,
                   purpose)

    def events(self, call_prefix: str) -> Iterator[StreamEvent]:
        """The stream a provider would send for this turn."""
        if self.thinking:
            yield ReasoningDelta(self.thinking)
        if self.text:
            yield TextDelta(self.text)
        for index, call in enumerate(self.tool_calls):
            call_id = call.id or f"{call_prefix}_{index}"
            yield ToolCallStart(index, call_id, call.name)
            yield ToolCallDelta(index, json.dumps(call.arguments))
            yield ToolCallEnd(index, call_id, call.name, call.arguments)
        if self.usage is not None:
            yield UsageReport(self.usage)
        yield Done("tool_use" if self.tool_calls else "end_turn")


class CallNumbering:
    """The prefix of each turn's generated call ids (``{stem}_{n}``; a call's id is
    ``{stem}_{n}_{index}``). ``n`` is the turn's number moved past every ``{stem}_<n>_<index>``
    id the history already holds: a resumed session gets a new provider that counts from 1
    again, and must not repeat an id its transcript recorded (providers reject duplicate tool
    call ids, and results are matched to calls by id). The history is scanned once: each turn
    looks only at the messages added since the last (all again when it was replaced, as a
    compaction does)."""

    def __init__(self, stem: str) -> None:
        self.stem = stem
        self._pattern = re.compile(rf"{re.escape(stem)}_(\d+)_\d+")
        self._scanned = 0
        self._last: Message | None = None
        self._next = 0  # one past the highest turn number of an id seen

    def prefix(self, number: int, history: Sequence[Message]) -> str:
        scanned = self._scanned
        if scanned > len(history) or (scanned and history[scanned - 1] is not self._last):
            scanned, self._next = 0, 0  # not the history seen so far: look at all of it
        for message in history[scanned:]:
            if isinstance(message, AssistantMessage):
                for call in message.tool_calls:
                    found = self._pattern.fullmatch(call.id)
                    if found:
                        self._next = max(self._next, int(found.group(1)) + 1)
        self._scanned, self._last = len(history), history[-1] if history else None
        return f"{self.stem}_{max(number, self._next)}"


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def load_script(path: Path) -> list[ScriptedTurn]:
    """Read a JSONL script; every bad line is an error naming file and line."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ScriptFileError(f"scripted model file {path} does not exist") from None
    except OSError as exc:
        raise ScriptFileError(f"cannot read scripted model file {path}: {exc}") from None
    turns = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ScriptError(f"{path}:{number}: not UTF-8 text (invalid byte at column "
                              f"{exc.start + 1}); save the script as UTF-8") from None
        if not line.strip():
            continue
        try:
            turn = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScriptError(f"{path}:{number}: invalid JSON ({exc.msg} at column "
                              f"{exc.colno})") from None
        except (ValueError, RecursionError) as exc:  # a number too long, nesting too deep
            raise ScriptError(f"{path}:{number}: JSON this host cannot read ({exc})") from None
        turns.append(ScriptedTurn.parse(turn, f"{path}:{number}"))
    return turns


def parse_turns(turns: Sequence[Any], where: str = "script") -> list[ScriptedTurn]:
    return [ScriptedTurn.parse(t, f"{where}[{i}]") for i, t in enumerate(turns)]
