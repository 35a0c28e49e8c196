"""Every option checked against its annotation before anything runs.

Python does not check an attrs class's field types, so ``disallowed_tools="Bash"`` would be
read as the letters B, a, s, h (leaving ``Bash`` enabled) and ``cwd=123`` would end in a
traceback deep in the session. :func:`check_option_types` reads the annotations of
:class:`~.options.AgentOptions` (``typing.get_type_hints``) and checks each value with a
small checker of the forms they use: ``Any``, ``None``, plain classes, ``X | Y``,
``list[X]``, ``dict[K, V]`` / ``Mapping[K, V]`` and ``Callable``. A wrong value is a
:class:`~zpi_host.errors.UsageError` naming the option (and the place inside it), the type
given and the type expected.
"""

from __future__ import annotations

import collections.abc
import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args, get_origin

from ..errors import UsageError

__all__ = ["check_option_types", "describe"]

#: how an expected type is worded where the annotation alone says too little
WORDING: Mapping[str, str] = {
    "can_use_tool": "an async callable (tool_name, input, context) -> permission result",
    "ask_user": "an async callable (questions) -> answers",
    "stderr": "a callable taking one str",
}

#: plain types in words: (with an article, without)
_NAMES: Mapping[str, tuple[str, str]] = {
    "str": ("a str", "str"), "int": ("an int", "int"), "float": ("a number", "number"),
    "bool": ("a bool (True or False)", "bool"), "NoneType": ("None", "None"),
}


def describe(hint: Any, *, article: bool = True) -> str:
    """``list[str] | None`` -> ``"a list of str, or None"``: the expected type in words."""
    if _is_union(hint):
        return ", or ".join(describe(h, article=article) for h in get_args(hint))
    origin, args = get_origin(hint), get_args(hint)
    if origin is list:
        text = "list of " + describe(args[0], article=False) if args else "list"
    elif origin in (dict, collections.abc.Mapping):
        text = (f"dict of {describe(args[0], article=False)} to "
                f"{describe(args[1], article=False)}" if args else "dict")
    elif origin is collections.abc.Callable or hint is collections.abc.Callable:
        text = "callable"
    elif hint is Any:
        return "anything"
    else:
        name = getattr(hint, "__name__", str(hint))
        if name in _NAMES:
            return _NAMES[name][0 if article else 1]
        text = name
    return ("an " if text[0] in "aeiou" else "a ") + text if article else text


def _is_union(hint: Any) -> bool:
    return get_origin(hint) in (types.UnionType, typing.Union)


def _given(value: Any) -> str:
    return f"{type(value).__name__} {value!r:.80}"


def _problem(value: Any, hint: Any, where: str) -> str | None:
    """Why ``value`` does not fit ``hint`` (naming ``where`` in it), or None when it fits."""
    if hint is Any:
        return None
    if _is_union(hint):
        options = get_args(hint)
        problems = [_problem(value, h, where) for h in options]
        if any(p is None for p in problems):
            return None
        # inside a container of the right kind, its own message says more (``env['A']``)
        inner = [p for h, p in zip(options, problems, strict=True)
                 if _container_fits(value, h) and p is not None]
        return inner[0] if inner else _mismatch(value, hint, where)
    origin, args = get_origin(hint), get_args(hint)
    if origin is list:
        if not isinstance(value, list | tuple):
            return _mismatch(value, hint, where)
        item = args[0] if args else Any
        return next((p for i, v in enumerate(value)
                     if (p := _problem(v, item, f"{where}[{i}]")) is not None), None)
    if origin in (dict, collections.abc.Mapping):
        if not isinstance(value, Mapping):
            return _mismatch(value, hint, where)
        key_hint, value_hint = args if args else (Any, Any)
        for key, item in value.items():
            problem = (_problem(key, key_hint, f"{where} key {key!r:.40}")
                       or _problem(item, value_hint, f"{where}[{key!r:.40}]"))
            if problem is not None:
                return problem
        return None
    if origin is collections.abc.Callable or hint is collections.abc.Callable:
        return None if callable(value) else _mismatch(value, hint, where)
    if hint is type(None):
        return None if value is None else _mismatch(value, hint, where)
    if hint is float:  # an int is a number too; a bool is not
        fits = isinstance(value, int | float) and not isinstance(value, bool)
        return None if fits else _mismatch(value, hint, where)
    if hint is int and isinstance(value, bool):
        return _mismatch(value, hint, where)
    if hint is Path:  # any path object will do (``Path(value)`` is what reads it)
        return None if isinstance(value, os.PathLike) else _mismatch(value, hint, where)
    if isinstance(hint, type):
        return None if isinstance(value, hint) else _mismatch(value, hint, where)
    return None  # a form the options do not use: not judged here


def _container_fits(value: Any, hint: Any) -> bool:
    origin = get_origin(hint)
    if origin is list:
        return isinstance(value, list | tuple)
    if origin in (dict, collections.abc.Mapping):
        return isinstance(value, Mapping)
    return False


def _mismatch(value: Any, hint: Any, where: str) -> str:
    expected = describe(hint)
    hint_text = ""
    if isinstance(value, str) and "list of" in expected:
        hint_text = f"; put a single value in a list: [{value!r:.40}]"
    return f"{where} must be {expected}, got {_given(value)}{hint_text}"


#: the evaluated annotations of each options class, read once
_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def check_option_types(options: Any) -> None:
    """Check every attrs field of ``options`` against its annotation; raises UsageError
    ``option disallowed_tools must be a list of str, got str 'Bash'; put a single value in a
    list: ['Bash']``."""
    import attrs

    hints = _hints(type(options))
    for field in attrs.fields(type(options)):
        value = getattr(options, field.name)
        hint = hints.get(field.name, Any)
        problem = _problem(value, hint, field.name)
        if problem is None:
            continue
        if field.name in WORDING and problem.startswith(field.name + " must be"):
            problem = f"{field.name} must be {WORDING[field.name]}, got {_given(value)}"
        raise UsageError(f"option {problem}")
