"""@tool: schema from type hints and docstrings, strict argument structuring, context injection,
result conversion and decoration-time errors."""

# No ``from __future__ import annotations`` here: Python 3.11 cannot see NotRequired in string
# annotations (one test checks the error that explains this).

import enum
import inspect
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, Optional, Required, TypedDict

import attrs
import pytest

from zpi_host.tools.base import (
    TextContent,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolMetadata,
    ToolResult,
)
from zpi_host.tools.decorator import tool


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@attrs.define
class Depth:
    """How deep to look."""

    levels: int
    follow_links: bool = False


@attrs.frozen
class Options:
    depth: Depth
    mode: Literal["fast", "full"] = "fast"
    tags: list[str] = attrs.field(factory=list, metadata={"description": "Labels."})


class Filter(TypedDict):
    glob: str
    limit: NotRequired[int]


class Loose(TypedDict, total=False):
    name: Required[str]
    note: str


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.define
class Node:
    child: "Node | None" = None


@attrs.define
class Report:
    path: Path
    color: Color
    depth: Depth


def _ctx() -> ToolContext:
    return ToolContext(cwd=Path("/tmp"))


def _props(fn: Any) -> dict[str, Any]:
    return dict(tool(fn).parameters["properties"])


def _error(t: Tool, arguments: Any) -> ToolArgumentError:
    with pytest.raises(ToolArgumentError) as info:
        t.prepare_arguments(arguments)
    return info.value


# --- schema -------------------------------------------------------------------------------------

def test_scalar_schema_and_required_list() -> None:
    @tool
    def scalars(s: str, i: int, f: float, b: bool, d: int = 3) -> str:
        """Scalars."""
        return ""

    assert scalars.parameters == {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "f": {"type": "number"},
            "b": {"type": "boolean"},
            "d": {"type": "integer", "default": 3},
        },
        "required": ["s", "i", "f", "b"],
        "additionalProperties": False,
    }


def test_literal_enum_and_optional_schema() -> None:
    def fn(
        mode: Literal["a", "b"],
        level: Literal[1, 2],
        mixed: Literal["x", 1],
        color: Color,
        maybe: int | None,
        opt: Optional[str] = None,  # noqa: UP045 - the spelling under test
        choice: Literal["a", None] = None,
        lit_opt: Literal["a", "b"] | None = "a",
    ) -> str:
        """Choices."""
        return ""

    t = tool(fn)
    assert t.parameters["properties"] == {
        "mode": {"type": "string", "enum": ["a", "b"]},
        "level": {"type": "integer", "enum": [1, 2]},
        "mixed": {"enum": ["x", 1]},
        "color": {"type": "string", "enum": ["red", "blue"]},
        "maybe": {"type": ["integer", "null"]},
        "opt": {"type": ["string", "null"], "default": None},
        "choice": {"type": ["string", "null"], "enum": ["a", None], "default": None},
        "lit_opt": {"type": ["string", "null"], "enum": ["a", "b", None], "default": "a"},
    }
    # nullable without a default is still required; with one it is not
    assert t.parameters["required"] == ["mode", "level", "mixed", "color", "maybe"]


def test_container_schema() -> None:
    def fn(
        paths: list[str],
        seq: Sequence[int],
        env: dict[str, int],
        many: tuple[float, ...],
        pair: tuple[int, str],
        nested: list[dict[str, list[bool]]],
        defaults: list[str] = ["a"],  # noqa: B006 - shows the default in the schema
    ) -> str:
        """Containers."""
        return ""

    assert _props(fn) == {
        "paths": {"type": "array", "items": {"type": "string"}},
        "seq": {"type": "array", "items": {"type": "integer"}},
        "env": {"type": "object", "additionalProperties": {"type": "integer"}},
        "many": {"type": "array", "items": {"type": "number"}},
        "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                 "items": False, "minItems": 2, "maxItems": 2},
        "nested": {"type": "array", "items": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "boolean"}}}},
        "defaults": {"type": "array", "items": {"type": "string"}, "default": ["a"]},
    }


def test_attrs_class_schema() -> None:
    def fn(options: Options) -> str:
        """Nested."""
        return ""

    depth = {
        "type": "object",
        "description": "How deep to look.",
        "properties": {"levels": {"type": "integer"},
                       "follow_links": {"type": "boolean", "default": False}},
        "required": ["levels"],
        "additionalProperties": False,
    }
    props = _props(fn)
    assert props["options"] == {
        "type": "object",
        "properties": {
            "depth": depth,
            "mode": {"type": "string", "enum": ["fast", "full"], "default": "fast"},
            # a factory default is not shown, but the field is still optional
            "tags": {"type": "array", "items": {"type": "string"}, "description": "Labels."},
        },
        "required": ["depth"],
        "additionalProperties": False,
    }


def test_recursive_attrs_class_is_rejected() -> None:
    def fn(node: Node) -> str:
        """Recursive."""
        return ""

    with pytest.raises(TypeError, match="Node contains itself"):
        tool(fn)


def test_typeddict_schema() -> None:
    def fn(f: Filter, loose: Loose) -> str:
        """Typed dicts."""
        return ""

    assert _props(fn) == {
        "f": {"type": "object",
              "properties": {"glob": {"type": "string"}, "limit": {"type": "integer"}},
              "required": ["glob"], "additionalProperties": False},
        "loose": {"type": "object",
                  "properties": {"name": {"type": "string"}, "note": {"type": "string"}},
                  "required": ["name"], "additionalProperties": False},
    }


def test_typeddict_with_string_annotations_explains_itself() -> None:
    namespace: dict[str, Any] = {"__name__": __name__}
    exec(  # the class must come from a module with postponed annotations
        "from __future__ import annotations\n"
        "class Late(TypedDict):\n"
        "    a: int\n"
        "    b: NotRequired[int]\n",
        globals() | namespace, namespace)

    with pytest.raises(TypeError, match=r"key Late\['b'\] is marked NotRequired.*__future__"):
        tool(_fn_with(namespace["Late"]))


def test_annotated_string_is_a_description() -> None:
    def fn(q: Annotated[str, "The query."]) -> str:
        """Annotated."""
        return ""

    assert _props(fn) == {"q": {"type": "string", "description": "The query."}}


# --- docstrings ---------------------------------------------------------------------------------

def test_google_docstring() -> None:
    @tool
    def search(query: str, paths: list[str], limit: int = 10) -> str:
        """Search files for text
        in the workspace.

        Longer explanation that the model does not need.

        Args:
            query: The text to find; a
                regular expression.
            paths (list[str]): Where to look: files
                or folders.
            limit:
                At most this many hits.

        Returns:
            The hits.
        """
        return ""

    assert search.name == "search"
    assert search.description == "Search files for text in the workspace."
    props = search.parameters["properties"]
    assert props["query"]["description"] == "The text to find; a regular expression."
    assert props["paths"]["description"] == "Where to look: files or folders."
    assert props["limit"]["description"] == "At most this many hits."


def test_rest_docstring() -> None:
    @tool
    def fetch(url: str, timeout: float = 5.0) -> str:
        """Fetch a page.

        :param url: The address,
            with scheme.
        :param float timeout: Seconds to wait.
        :returns: the body
        """
        return ""

    assert fetch.description == "Fetch a page."
    props = fetch.parameters["properties"]
    assert props["url"] == {"type": "string", "description": "The address, with scheme."}
    assert props["timeout"] == {"type": "number", "default": 5.0,
                                "description": "Seconds to wait."}


def test_explicit_name_and_description_win() -> None:
    @tool(name="grep", description="Find text.")
    def search(query: str) -> str:
        """Ignored."""
        return ""

    assert (search.name, search.description) == ("grep", "Find text.")


def test_docstring_problems_are_decoration_errors() -> None:
    def undocumented(x: int) -> str:
        return ""

    with pytest.raises(TypeError, match="no description"):
        tool(undocumented)

    def typo(path: str) -> str:
        """Read.

        Args:
            pth: The file.
        """
        return ""

    with pytest.raises(TypeError, match="describes 'pth'"):
        tool(typo)


# --- metadata and decorator forms ---------------------------------------------------------------

def test_decorator_forms_and_metadata() -> None:
    def fn() -> str:
        """Nothing."""
        return ""

    assert isinstance(tool(fn), Tool)
    assert tool()(fn).metadata == ToolMetadata(
        read_only=False, concurrency_safe=False, side_effects=True, interactive=False)
    assert tool(read_only=True)(fn).metadata.side_effects is False
    custom = tool(read_only=True, concurrency_safe=True, side_effects=True, interactive=True,
                  output_schema={"type": "string"})(fn)
    assert custom.metadata == ToolMetadata(True, True, True, True)
    assert custom.output_schema == {"type": "string"}
    assert tool(fn).parameters == {"type": "object", "properties": {}, "required": [],
                                   "additionalProperties": False}


def test_positional_name_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match=r"use @tool\(name='x'\)"):
        tool("x")  # type: ignore[call-overload]


# --- context injection --------------------------------------------------------------------------

def test_context_is_injected_and_hidden() -> None:
    @tool
    def where(path: str, here: ToolContext) -> str:
        """Resolve a path."""
        return str(here.resolve_path(path))

    assert list(where.parameters["properties"]) == ["path"]
    assert where.parameters["required"] == ["path"]
    kwargs = where.prepare_arguments({"path": "a.txt"})
    assert kwargs == {"path": "a.txt"}
    assert where.execute(kwargs, _ctx()).text_content == "/tmp/a.txt"
    # a model cannot pass the context itself
    assert _error(where, {"path": "a", "here": {}}).field == "here"


def test_optional_context_and_two_contexts() -> None:
    @tool
    def fn(ctx: ToolContext | None = None) -> str:
        """Ctx."""
        return "yes" if ctx is not None else "no"

    assert fn.parameters["properties"] == {}
    assert fn.execute({}, _ctx()).text_content == "yes"

    def two(a: ToolContext, b: ToolContext) -> str:
        """Two."""
        return ""

    with pytest.raises(TypeError, match="only one parameter may receive the ToolContext"):
        tool(two)


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
    err = _error(_strict, _strict_args(**changes))
    assert (err.tool, err.field, err.problem) == ("_strict", field, problem)
    assert f"argument {field!r} for tool '_strict'" in str(err)


def test_literal_is_strict_about_types() -> None:
    @tool
    def fn(level: Literal[1, 2]) -> str:
        """Level."""
        return ""

    assert fn.prepare_arguments({"level": 1}) == {"level": 1}
    assert _error(fn, {"level": True}).problem == "must be one of 1, 2, got a boolean (true)"


@attrs.define
class Positive:
    n: int = attrs.field(validator=attrs.validators.gt(0))


def test_attrs_validator_message_reaches_the_model() -> None:
    @tool
    def fn(items: list[Positive]) -> str:
        """Items."""
        return ""

    err = _error(fn, {"items": [{"n": 1}, {"n": 0}]})
    assert (err.field, err.problem) == ("items[1]", "'n' must be > 0: 0")


def test_every_problem_is_reported_at_once() -> None:
    err = _error(_strict, _strict_args(count="1", name=_DROP, paths=[1]))
    assert err.field == "name"
    assert err.problem == ("is required; also 'paths[0]' expected a string, got a number (1); "
                           "'count' expected an integer, got a string (\"1\")")


def test_arguments_must_be_an_object() -> None:
    err = _error(_strict, ["a"])
    assert (err.field, err.problem) == (None, "expected a JSON object, got an array")


# --- execution and results ----------------------------------------------------------------------

@pytest.mark.anyio
async def test_async_function() -> None:
    @tool
    async def fetch(url: str, ctx: ToolContext) -> dict[str, Any]:
        """Fetch."""
        return {"url": url, "cwd": str(ctx.cwd)}

    pending = fetch.execute(fetch.prepare_arguments({"url": "u"}), _ctx())
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
    assert _returning(passthrough).execute({}, _ctx()) is passthrough
    assert _returning("hello").execute({}, _ctx()) == ToolResult.text("hello")
    assert _returning(None).execute({}, _ctx()) == ToolResult.text("(no output)")
    assert _returning("").execute({}, _ctx()) == ToolResult.text("(no output)")
    assert _returning(TextContent("t")).execute({}, _ctx()) == ToolResult((TextContent("t"),))

    as_dict = _returning({"a": [1, 2]}).execute({}, _ctx())
    assert as_dict.details == {"a": [1, 2]}
    assert json.loads(as_dict.text_content) == {"a": [1, 2]}

    as_list = _returning([1, "x"]).execute({}, _ctx())
    assert as_list.details == {"result": [1, "x"]}
    assert json.loads(as_list.text_content) == [1, "x"]


def test_attrs_return_value_becomes_json() -> None:
    result = _returning(Report(Path("/a/b"), Color.RED, Depth(3))).execute({}, _ctx())
    expected = {"path": "/a/b", "color": "red", "depth": {"levels": 3, "follow_links": False}}
    assert result.details == expected
    assert json.loads(result.text_content) == expected
    assert not result.is_error


def test_unconvertible_return_values_are_errors() -> None:
    with pytest.raises(TypeError, match="returned object; return a str"):
        _returning(object()).execute({}, _ctx())
    with pytest.raises(TypeError, match="JSON cannot show"):
        _returning({"x": object()}).execute({}, _ctx())


# --- decoration-time errors ---------------------------------------------------------------------

def _fn_with(annotation: Any) -> Any:
    def fn(x):  # type: ignore[no-untyped-def]
        """Doc."""
        return ""

    fn.__annotations__ = {"x": annotation}
    return fn


@pytest.mark.parametrize(("annotation", "message"), [
    (set[int], r"parameter 'x' has unsupported type set\[int\]"),
    (Any, "parameter 'x' has unsupported type Any"),
    (int | str, r"only the union X \| None"),
    (dict[int, str], "JSON object keys are strings"),
    (list, "parameter 'x' has unsupported type list"),
    (Literal[1.5j], "choices must be"),  # type: ignore[valid-type]
    (list[bytes], r"parameter 'x' \(items\) has unsupported type bytes"),
])
def test_unsupported_annotations(annotation: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message) as info:
        tool(_fn_with(annotation))
    assert "tool 'fn'" in str(info.value)


@attrs.define
class BadField:
    when: complex


def test_unsupported_nested_field_names_the_field() -> None:
    with pytest.raises(TypeError, match=r"parameter 'x', field BadField.when has unsupported "
                                        "type complex"):
        tool(_fn_with(BadField))


def test_missing_annotation_and_parameter_kinds() -> None:
    def bare(x, y: int) -> str:  # type: ignore[no-untyped-def]
        """Bare."""
        return ""

    with pytest.raises(TypeError, match="parameter 'x' has no type annotation"):
        tool(bare)

    def star(*items: str) -> str:
        """Star."""
        return ""

    def kw(**items: str) -> str:
        """Kw."""
        return ""

    def pos(a: int, /) -> str:
        """Pos."""
        return ""

    for fn in (star, kw, pos):
        with pytest.raises(TypeError, match="positional-only parameters"):
            tool(fn)


def test_only_parameter_annotations_must_resolve() -> None:
    def fn(n: "int") -> "NotImportedHere":  # type: ignore[name-defined]  # noqa: F821
        """Return annotations do not matter."""
        return ""

    assert _props(fn) == {"n": {"type": "integer"}}

    def bad(n: "NotImportedHere") -> str:  # type: ignore[name-defined]  # noqa: F821
        """Bad."""
        return ""

    with pytest.raises(TypeError, match=r"cannot resolve the type hints.*NotImportedHere"):
        tool(bad)


def test_none_default_needs_optional_annotation() -> None:
    def fn(limit: int = None) -> str:  # type: ignore[assignment]  # noqa: RUF013
        """Limit."""
        return ""

    with pytest.raises(TypeError, match=r"defaults to None .* annotate it as int \| None"):
        tool(fn)


# --- import cost --------------------------------------------------------------------------------

def test_import_and_decoration_do_not_import_cattrs() -> None:
    code = (
        "import sys\n"
        "from zpi_host.tools.decorator import tool\n"
        "@tool\n"
        "def f(n: int) -> str:\n"
        "    '''F.'''\n"
        "    return str(n)\n"
        "assert 'cattrs' not in sys.modules, 'cattrs imported too early'\n"
        "f.prepare_arguments({'n': 1})\n"
        "assert 'cattrs' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
