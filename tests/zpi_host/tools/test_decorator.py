"""@tool: schema from type hints and docstrings, strict argument structuring, context injection,
result conversion and decoration-time errors."""

# No ``from __future__ import annotations`` here: Python 3.11 cannot see NotRequired in string
# annotations (one test checks the error that explains this).

import subprocess
import sys
from collections.abc import Sequence

# NotRequired and TypedDict are looked up by a class the string-annotation test builds with exec
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict  # noqa: F401

import attrs
import pytest
from helpers.decorator_models import (
    Color,
    Filter,
    Loose,
    Node,
    Options,
    argument_error,
    make_ctx,
    props_of,
)

from zpi_host.tools.base import (
    Tool,
    ToolContext,
    ToolMetadata,
)
from zpi_host.tools.decorator import tool

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

    assert props_of(fn) == {
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
    props = props_of(fn)
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

    assert props_of(fn) == {
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

    assert props_of(fn) == {"q": {"type": "string", "description": "The query."}}


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


def test_positional_name_is_a_clearargument_error() -> None:
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
    assert where.execute(kwargs, make_ctx()).text_content == "/tmp/a.txt"
    # a model cannot pass the context itself
    assert argument_error(where, {"path": "a", "here": {}}).field == "here"


def test_optional_context_and_two_contexts() -> None:
    @tool
    def fn(ctx: ToolContext | None = None) -> str:
        """Ctx."""
        return "yes" if ctx is not None else "no"

    assert fn.parameters["properties"] == {}
    assert fn.execute({}, make_ctx()).text_content == "yes"

    def two(a: ToolContext, b: ToolContext) -> str:
        """Two."""
        return ""

    with pytest.raises(TypeError, match="only one parameter may receive the ToolContext"):
        tool(two)



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

    assert props_of(fn) == {"n": {"type": "integer"}}

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
