"""@tool at call time: strict structuring of the model's arguments, execution and result
conversion."""

# No ``from __future__ import annotations`` here: Python 3.11 cannot see NotRequired in string
# annotations (one test checks the error that explains this).

import inspect
import json
from pathlib import Path
from typing import Any, Literal

import attrs
import pytest
from helpers.decorator_models import (
    Color,
    Depth,
    Filter,
    Options,
    Report,
    argument_error,
    make_ctx,
)

from zpi_host.tools.base import (
    TextContent,
    Tool,
    ToolContext,
    ToolResult,
)
from zpi_host.tools.decorator import tool

# --- structuring --------------------------------------------------------------------------------

def test_structures_attrs_typeddict_tuple_literal_and_enum() -> None:
    @tool
    def fn(options: Options, f: Filter, pair: tuple[int, str], color: Color,
           ratio: float, count: int, maybe: int | None = None) -> str:
        """All."""
        return ""

    kwargs = fn.prepare_arguments({
        "options": {"depth": {"levels": 2}, "mode": "full"},
        "f": {"glob": "*.py"},
        "pair": [1, "a"],
        "color": "blue",
        "ratio": 1,
        "count": 3.0,
    })
    assert kwargs == {
        "options": Options(Depth(2), "full"), "f": {"glob": "*.py"}, "pair": (1, "a"),
        "color": Color.BLUE, "ratio": 1.0, "count": 3,
    }
    assert type(kwargs["ratio"]) is float and type(kwargs["count"]) is int
    assert "maybe" not in kwargs  # the function's default applies
    assert fn.prepare_arguments({**_valid_all(), "maybe": None})["maybe"] is None


def _valid_all() -> dict[str, Any]:
    return {"options": {"depth": {"levels": 1}}, "f": {"glob": "*"}, "pair": [1, "a"],
            "color": "red", "ratio": 0.5, "count": 1}


@tool
def _strict(
    options: Options,
    paths: list[str],
    f: Filter,
    mode: Literal["fast", "full"],
    count: int,
    name: str,
    flag: bool,
    env: dict[str, int] | None = None,
    pair: tuple[int, str] | None = None,
) -> str:
    """Strict."""
    return ""


def _strict_args(**changes: Any) -> dict[str, Any]:
    args = {"options": {"depth": {"levels": 1}}, "paths": ["a"], "f": {"glob": "*"},
            "mode": "fast", "count": 1, "name": "n", "flag": True}
    args.update(changes)
    return {k: v for k, v in args.items() if v is not _DROP}


_DROP = object()


@pytest.mark.parametrize(("changes", "field", "problem"), [
    ({"options": {"depth": {"levels": "2"}}}, "options.depth.levels",
     'expected an integer, got a string ("2")'),
    ({"options": {"depth": {}}}, "options.depth.levels", "is required"),
    ({"options": {"depth": {"levels": 1}, "speed": 3}}, "options.speed",
     "is not a field of Options (known: depth, mode, tags)"),
    ({"options": {"depth": {"levels": 1}, "mode": "slow"}}, "options.mode",
     'must be one of "fast", "full", got a string ("slow")'),
    ({"options": "deep"}, "options", 'expected an object, got a string ("deep")'),
    ({"paths": ["a", "b", 3]}, "paths[2]", "expected a string, got a number (3)"),
    ({"paths": "a"}, "paths", 'expected an array, got a string ("a")'),
    ({"f": {"glob": "*", "limit": 1.5}}, "f.limit", "expected an integer, got a number (1.5)"),
    ({"f": {"limit": 1}}, "f.glob", "is required"),
    ({"f": {"glob": "*", "max": 1}}, "f.max", "is not a field of Filter (known: glob, limit)"),
    ({"mode": "slow"}, "mode", 'must be one of "fast", "full", got a string ("slow")'),
    ({"count": True}, "count", "expected an integer, got a boolean (true)"),
    ({"count": 2.5}, "count", "expected an integer, got a number (2.5)"),
    ({"count": None}, "count", "expected an integer, got null"),
    ({"name": 7}, "name", "expected a string, got a number (7)"),
    ({"flag": 1}, "flag", "expected a boolean, got a number (1)"),
    ({"env": {"HOME": "x"}}, 'env["HOME"]', 'expected an integer, got a string ("x")'),
    ({"pair": [1]}, "pair", "expected an array of 2 items, got 1"),
    ({"pair": [1, 2]}, "pair[1]", "expected a string, got a number (2)"),
    ({"colour": "red"}, "colour",
     "is not a parameter (known: options, paths, f, mode, count, name, flag, env, pair)"),
    ({"count": _DROP}, "count", "is required"),
])
def test_strict_errors_name_the_field(changes: dict[str, Any], field: str, problem: str) -> None:
    err = argument_error(_strict, _strict_args(**changes))
    assert (err.tool, err.field, err.problem) == ("_strict", field, problem)
    assert f"argument {field!r} for tool '_strict'" in str(err)


def test_literal_is_strict_about_types() -> None:
    @tool
    def fn(level: Literal[1, 2]) -> str:
        """Level."""
        return ""

    assert fn.prepare_arguments({"level": 1}) == {"level": 1}
    assert argument_error(fn, {"level": True}).problem == (
        "must be one of 1, 2, got a boolean (true)")


@attrs.define
class Positive:
    n: int = attrs.field(validator=attrs.validators.gt(0))


def test_attrs_validator_message_reaches_the_model() -> None:
    @tool
    def fn(items: list[Positive]) -> str:
        """Items."""
        return ""

    err = argument_error(fn, {"items": [{"n": 1}, {"n": 0}]})
    assert (err.field, err.problem) == ("items[1]", "'n' must be > 0: 0")


def test_every_problem_is_reported_at_once() -> None:
    err = argument_error(_strict, _strict_args(count="1", name=_DROP, paths=[1]))
    assert err.field == "name"
    assert err.problem == ("is required; also 'paths[0]' expected a string, got a number (1); "
                           "'count' expected an integer, got a string (\"1\")")


def test_arguments_must_be_an_object() -> None:
    err = argument_error(_strict, ["a"])
    assert (err.field, err.problem) == (None, "expected a JSON object, got an array")


# --- execution and results ----------------------------------------------------------------------

@pytest.mark.anyio
async def test_async_function() -> None:
    @tool
    async def fetch(url: str, ctx: ToolContext) -> dict[str, Any]:
        """Fetch."""
        return {"url": url, "cwd": str(ctx.cwd)}

    pending = fetch.execute(fetch.prepare_arguments({"url": "u"}), make_ctx())
    assert inspect.isawaitable(pending)
    result = await pending
    assert result.details == {"url": "u", "cwd": "/tmp"}
    assert json.loads(result.text_content) == {"url": "u", "cwd": "/tmp"}


def _returning(value: Any) -> Tool:
    def give() -> Any:
        """Give."""
        return value

    return tool(give)


def test_return_conversion() -> None:
    passthrough = ToolResult.error("bad", details={"k": 1})
    assert _returning(passthrough).execute({}, make_ctx()) is passthrough
    assert _returning("hello").execute({}, make_ctx()) == ToolResult.text("hello")
    assert _returning(None).execute({}, make_ctx()) == ToolResult.text("(no output)")
    assert _returning("").execute({}, make_ctx()) == ToolResult.text("(no output)")
    assert _returning(TextContent("t")).execute({}, make_ctx()) == ToolResult((TextContent("t"),))

    as_dict = _returning({"a": [1, 2]}).execute({}, make_ctx())
    assert as_dict.details == {"a": [1, 2]}
    assert json.loads(as_dict.text_content) == {"a": [1, 2]}

    as_list = _returning([1, "x"]).execute({}, make_ctx())
    assert as_list.details == {"result": [1, "x"]}
    assert json.loads(as_list.text_content) == [1, "x"]


def test_attrs_return_value_becomes_json() -> None:
    result = _returning(Report(Path("/a/b"), Color.RED, Depth(3))).execute({}, make_ctx())
    expected = {"path": "/a/b", "color": "red", "depth": {"levels": 3, "follow_links": False}}
    assert result.details == expected
    assert json.loads(result.text_content) == expected
    assert not result.is_error


def test_unconvertible_return_values_are_errors() -> None:
    with pytest.raises(TypeError, match="returned object; return a str"):
        _returning(object()).execute({}, make_ctx())
    with pytest.raises(TypeError, match="JSON cannot show"):
        _returning({"x": object()}).execute({}, make_ctx())


