"""Tool arguments that strict JSON cannot carry: found, made safe, and refused with a reason.

A model's argument JSON may hold ``NaN``/``Infinity`` (Python's decoder accepts them) or text
with lone surrogates (``"\\ud800"``), and a plugin or hook may pass nesting deep enough to
exhaust the stack. None of that may crash the host, stop the run or reach a file system call.
Where a call enters the host (every provider's ``ToolCallEnd``), :func:`json_safe_arguments`
replaces each such value with a :class:`NotJSON` string, so the call can still be recorded in
the transcript and sent back to the model; preparing the arguments
(``Tool.prepare_arguments``) then finds it with :func:`argument_problem` and the call ends as a
tool error the model reads, naming the field. The run goes on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: Nesting deeper than this (objects and lists) is refused: no tool needs it, and walking or
#: encoding it recursively could exhaust the stack.
MAX_DEPTH = 64


class NotJSON(str):
    """Stands in for a value strict JSON cannot carry; ``problem`` says why (shown to the
    model). The string itself (``"NaN"``, the text with U+FFFD for each lone surrogate) is what
    the transcript and the next request hold."""

    problem: str

    def __new__(cls, text: str, problem: str) -> NotJSON:
        made = super().__new__(cls, text)
        made.problem = problem
        return made

    def __reduce__(self) -> Any:
        return (NotJSON, (str(self), self.problem))


def _surrogates(text: str) -> str | None:
    """Why ``text`` is not valid Unicode text, or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"the text holds a lone surrogate ({text[exc.start]!r} at index {exc.start}), "
                "which is not valid Unicode; send plain UTF-8 text")
    return None


def _json_spelling(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _number(value: float) -> str | None:
    if math.isfinite(value):
        return None
    return f"{_json_spelling(value)} is not a number JSON allows; send a finite number"


def _safe(value: Any, depth: int) -> Any:
    if isinstance(value, NotJSON):
        return value
    if isinstance(value, str):
        problem = _surrogates(value)
        return value if problem is None else NotJSON(
            "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in value), problem)
    if isinstance(value, float):
        problem = _number(value)
        return value if problem is None else NotJSON(_json_spelling(value), problem)
    if isinstance(value, Mapping | list | tuple):
        if depth >= MAX_DEPTH:
            return NotJSON("[too deep]", f"the value is nested more than {MAX_DEPTH} levels "
                                         "deep; send a flatter value")
        if isinstance(value, Mapping):
            return {_key(k): _safe(v, depth + 1) for k, v in value.items()}
        return [_safe(v, depth + 1) for v in value]
    return value


def _key(key: Any) -> Any:
    if not isinstance(key, str):
        return NotJSON(str(key), f"the key {key!r} is not a string")
    return _safe(key, 0)


def json_safe_arguments(arguments: Any) -> Any:
    """``arguments`` with every value strict JSON cannot carry replaced by a :class:`NotJSON`
    (anything but a mapping is returned as is: preparing it reports the wrong type)."""
    if not isinstance(arguments, Mapping):
        return arguments
    return _safe(arguments, 0)


def argument_problem(arguments: Any) -> tuple[str | None, str] | None:
    """The first value of ``arguments`` that strict JSON cannot carry, as (field path, why),
    or None. Field paths look like ``edits[0].old_text``; None is the arguments object."""
    if not isinstance(arguments, Mapping):
        return None
    stack: list[tuple[Any, str | None, int]] = [(arguments, None, 0)]
    while stack:
        value, path, depth = stack.pop()
        problem = _problem_of(value, depth)
        if problem is not None:
            return path, problem
        if isinstance(value, Mapping):
            items = list(value.items())
            for key, item in reversed(items):
                if not isinstance(key, str) or isinstance(key, NotJSON) or _surrogates(key):
                    where = path or None
                    why = key.problem if isinstance(key, NotJSON) else (
                        _surrogates(key) if isinstance(key, str)
                        else f"the key {key!r} is not a string")
                    return where, f"a key: {why}"
                stack.append((item, f"{path}.{key}" if path else key, depth + 1))
        elif isinstance(value, list | tuple):
            for i in reversed(range(len(value))):
                stack.append((value[i], f"{path}[{i}]", depth + 1))
    return None


def _problem_of(value: Any, depth: int) -> str | None:
    if isinstance(value, NotJSON):
        return value.problem
    if isinstance(value, str):
        return _surrogates(value)
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, Mapping | list | tuple) and depth >= MAX_DEPTH:
        return f"the value is nested more than {MAX_DEPTH} levels deep; send a flatter value"
    return None
