"""Fuzzing tool arguments: what a model (or a hook) may send to the four kernel tools and to
``@tool`` tools, including lone surrogates, NaN and Infinity, huge integers and nested junk.

``prepare_arguments`` returns prepared arguments or raises :class:`ToolArgumentError`; nothing
else escapes. Whatever enters through a provider's ``ToolCallEnd`` can be written as strict
JSON (transcript, next request), and a value strict JSON cannot carry is always refused.
"""

# No ``from __future__ import annotations``: @tool reads the annotations at decoration time.

import json
import math
from pathlib import Path
from typing import Any, Literal

import pytest
from helpers.decorator_models import Color, Filter, Options
from hypothesis import given
from hypothesis import strategies as st

from zpi_host.providers.base import ToolCallEnd
from zpi_host.tools.arguments import MAX_DEPTH, NotJSON, argument_problem, json_safe_arguments
from zpi_host.tools.base import ToolArgumentError
from zpi_host.tools.decorator import tool
from zpi_host.tools.kernel import kernel_tools


@tool
def annotated(path: str, count: int, ratio: float, flag: bool, mode: Literal["a", "b"],
              color: Color, tags: list[str], options: Options, where: Filter,
              note: str | None = None, extra: dict[str, float] | None = None,
              pair: tuple[int, str] = (0, "")) -> str:
    """A tool with one parameter of every kind @tool supports."""
    return ""


TOOLS = {t.name: t for t in (*kernel_tools(), annotated)}
FIELDS = sorted({name for t in TOOLS.values() for name in t.parameters.get("properties", {})}
                | {"path", "old_text", "new_text", "edits", "content", "command", "timeout",
                   "offset", "limit", "depth", "levels"})

odd_text = st.one_of(
    st.text(max_size=20),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1,
            max_size=3),
    st.sampled_from(["\ud800", "a\udcffb", "../../etc/passwd", "", "\x00", "~", "/"]),
)
odd_numbers = st.one_of(
    st.integers(), st.integers(min_value=2**63, max_value=2**200).map(lambda n: n * -1 ** n),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 10**300, -(2**64)]),
)
leaves = st.none() | st.booleans() | odd_numbers | odd_text
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(odd_text, inner, max_size=4), max_leaves=16)
arguments = st.dictionaries(st.one_of(st.sampled_from(FIELDS), odd_text), values, max_size=6)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": [value]}
    return value


@given(st.sampled_from(sorted(TOOLS)), arguments)
def test_prepare_arguments_raises_only_tool_argument_errors(name, args):
    tool_ = TOOLS[name]
    try:
        tool_.prepare_arguments(args)
    except ToolArgumentError as exc:
        assert exc.tool == name and str(exc).startswith("invalid ")
    if argument_problem(args) is not None:  # a value strict JSON cannot carry never passes
        with pytest.raises(ToolArgumentError):
            tool_.prepare_arguments(args)


@given(st.sampled_from(sorted(TOOLS)), arguments)
def test_arguments_entering_through_a_provider_are_strict_json(name, args):
    end = ToolCallEnd(0, "call_1", name, args)
    text = json.dumps(end.arguments, allow_nan=False)  # the transcript's encoder refuses NaN
    text.encode("utf-8")  # and the request body is UTF-8
    json.dumps(end.arguments, ensure_ascii=False).encode("utf-8")
    if argument_problem(args) is not None:
        with pytest.raises(ToolArgumentError):
            TOOLS[name].prepare_arguments(end.arguments)


@given(arguments)
def test_making_arguments_safe_is_idempotent(args):
    once = json_safe_arguments(args)
    assert json_safe_arguments(once) == once
    assert (argument_problem(once) is None) == (argument_problem(args) is None)


@pytest.mark.parametrize(("args", "field", "words"), [
    ({"path": "\ud800"}, "path", "lone surrogate"),
    ({"path": "a", "offset": math.nan}, "offset", "NaN"),
    ({"path": "a", "limit": -math.inf}, "limit", "-Infinity"),
    ({"path": "a", "x": {"y": [1, math.inf]}}, "x.y[1]", "Infinity"),
    ({"path": "a", "x": {"\udcff": 1}}, "x", "a key"),
    ({"path": "a", "x": _nested(MAX_DEPTH + 1)}, None, "nested more than"),
])
def test_each_problem_names_its_field(args, field, words):
    with pytest.raises(ToolArgumentError) as caught:
        TOOLS["read"].prepare_arguments(json_safe_arguments(args))
    if field is not None:
        assert caught.value.field == field or caught.value.field.startswith(field)
    assert words in caught.value.problem


def test_a_replaced_value_keeps_a_json_safe_text():
    safe = json_safe_arguments({"p": "a\ud800b", "n": math.nan, "i": -math.inf})
    assert safe == {"p": "a\ufffdb", "n": "NaN", "i": "-Infinity"}
    assert all(isinstance(v, NotJSON) for v in safe.values())


def test_a_deeply_nested_value_from_a_provider_is_refused_not_a_crash():
    end = ToolCallEnd(0, "c", "read", {"path": "a", "x": _nested(5_000)})
    json.dumps(end.arguments)
    with pytest.raises(ToolArgumentError):
        TOOLS["read"].prepare_arguments(end.arguments)


def test_well_formed_arguments_still_pass():
    assert TOOLS["read"].prepare_arguments({"path": Path("a.txt").as_posix()})["path"] == "a.txt"
