"""``@tool``: turn a typed, documented Python function into a :class:`~.base.Tool`.

The JSON schema is built at decoration time from type hints and the docstring, so a mistake
shows when the plugin loads, not when the model first calls the tool. Arguments are structured
by a strict cattrs converter imported on the first call only (the CLI path must stay light);
every failure becomes a :class:`ToolArgumentError` naming the field's path, so the model can
correct itself.
"""

from __future__ import annotations

import contextlib
import enum
import inspect
import json
import os
import re
import types
import typing
from collections.abc import Callable, Mapping, MutableSequence, Sequence
from typing import Any, Literal, Union, get_args, get_origin, overload

import attrs

from .base import (
    ImageContent,
    TextContent,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolMetadata,
    ToolResult,
)

__all__ = ["tool"]

_NO_DEFAULT: Any = object()
_SIMPLE = {str: "string", int: "integer", float: "number", bool: "boolean"}
_EXPECTED = {str: "a string", int: "an integer", float: "a number", bool: "a boolean"}
_SUPPORTED = ("str, int, float, bool, Literal[...], Enum, X | None, list[X], tuple[X, ...], "
              "tuple[X, Y], dict[str, X], attrs classes and TypedDicts")
_QUALIFIERS = {"Required", "NotRequired", "ReadOnly"}
_LIST_ORIGINS = (list, Sequence, MutableSequence)
_DICT_ORIGINS = (dict, Mapping)


# --- schema, built at decoration time without cattrs -------------------------------------------

def _unwrap(tp: Any) -> tuple[Any, str | None]:
    """Strip ``Annotated`` (a string in it becomes the description) and TypedDict qualifiers."""
    description = None
    while True:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            description = next((m for m in tp.__metadata__ if isinstance(m, str)), description)
            tp = tp.__origin__
        elif getattr(origin, "_name", None) in _QUALIFIERS:
            tp = get_args(tp)[0]
        else:
            return tp, description


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def _is_attrs(tp: Any) -> bool:
    return isinstance(tp, type) and attrs.has(tp)


def _is_enum(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


def _optional_of(tp: Any) -> Any:
    """``X`` for ``X | None`` (and ``Optional[X]``), else ``None``."""
    args = get_args(tp)
    if get_origin(tp) in (Union, types.UnionType) and len(args) == 2 and type(None) in args:
        return args[0] if args[1] is type(None) else args[1]
    return None


def _type_name(tp: Any) -> str:
    if isinstance(tp, type) and not get_args(tp):
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def _unsupported(where: str, tp: Any, why: str = "") -> TypeError:
    return TypeError(f"{where} has unsupported type {_type_name(tp)}{why}; supported: {_SUPPORTED}")


def _enum_schema(values: list[Any], where: str, tp: Any) -> dict[str, Any]:
    if not values or not all(v is None or type(v) in _SIMPLE for v in values):
        raise _unsupported(where, tp, " (choices must be str, int, float, bool or None)")
    schema: dict[str, Any] = {"enum": [v for v in values if v is not None]}
    kinds = {type(v) for v in values if v is not None}
    if len(kinds) == 1:
        schema = {"type": _SIMPLE[kinds.pop()], **schema}
    return _nullable(schema) if None in values else schema


def _accepts_null(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return None in schema.get("enum", ()) or (isinstance(kind, list) and "null" in kind)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` accepting null too (every schema built here has a ``type`` or an ``enum``)."""
    out = dict(schema)
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    if isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


def _schema(tp: Any, where: str, stack: tuple[type, ...]) -> dict[str, Any]:
    tp, _ = _unwrap(tp)
    origin, args = get_origin(tp), get_args(tp)
    if isinstance(tp, type) and tp in _SIMPLE:
        return {"type": _SIMPLE[tp]}
    if origin is Literal or _is_enum(tp):
        return _enum_schema(list(args) if origin else [m.value for m in tp], where, tp)
    if origin in (Union, types.UnionType):
        if _optional_of(tp) is None:
            raise _unsupported(where, tp, " (only the union X | None can be checked strictly)")
        return _nullable(_schema(_optional_of(tp), where, stack))
    if (origin in _LIST_ORIGINS and len(args) == 1) or (
            origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        return {"type": "array", "items": _schema(args[0], f"{where} (items)", stack)}
    if origin is tuple and args and Ellipsis not in args:
        items = [_schema(a, f"{where} (item {i})", stack) for i, a in enumerate(args)]
        return {"type": "array", "prefixItems": items, "items": False,
                "minItems": len(items), "maxItems": len(items)}
    if origin in _DICT_ORIGINS and len(args) == 2:
        if _unwrap(args[0])[0] is not str:
            raise _unsupported(where, tp, " (JSON object keys are strings: use dict[str, X])")
        return {"type": "object",
                "additionalProperties": _schema(args[1], f"{where} (values)", stack)}
    if _is_attrs(tp) or _is_typeddict(tp):
        if tp in stack:
            raise TypeError(f"{where}: {tp.__qualname__} contains itself; recursive types "
                            "cannot be described")
        return _object_schema(tp, where, (*stack, tp))
    raise _unsupported(where, tp)


def _object_schema(cls: Any, where: str, stack: tuple[type, ...]) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:
        raise TypeError(f"{where}: cannot resolve the type hints of {cls.__qualname__}: "
                        f"{exc}") from exc
    props: dict[str, Any] = {}
    if attrs.has(cls):
        fields = [a for a in attrs.fields(cls) if a.init]
        required = [a.name for a in fields if a.default is attrs.NOTHING]
        for a in fields:
            fwhere = f"{where}, field {cls.__qualname__}.{a.name}"
            if a.name not in hints:
                raise TypeError(f"{fwhere} has no type annotation")
            default = (_NO_DEFAULT if a.default is attrs.NOTHING
                       or isinstance(a.default, attrs.Factory)  # type: ignore[arg-type]
                       else a.default)
            props[a.name] = _property(hints[a.name], fwhere, stack,
                                      a.metadata.get("description"), default)
    else:
        required = [k for k in hints if k in cls.__required_keys__]
        for key, hint in hints.items():
            kwhere = f"{where}, key {cls.__qualname__}[{key!r}]"
            marked = getattr(get_origin(hint), "_name", None)
            if marked in ("Required", "NotRequired") and (marked == "Required") != (
                    key in required):  # Python 3.11 misses them in string annotations
                raise TypeError(f"{kwhere} is marked {marked} but the class does not record "
                                "it; drop `from __future__ import annotations` where the class "
                                "is defined, or use total=False")
            props[key] = _property(hint, kwhere, stack, None, _NO_DEFAULT)
    schema: dict[str, Any] = {"type": "object", "properties": props, "required": required,
                              "additionalProperties": False}
    summary, _ = _parse_docstring(cls.__dict__.get("__doc__"))
    if summary:
        schema["description"] = summary
    return schema


def _property(hint: Any, where: str, stack: tuple[type, ...], description: str | None,
              default: Any) -> dict[str, Any]:
    tp, annotated = _unwrap(hint)
    schema = _schema(tp, where, stack)
    if description or annotated:
        schema["description"] = description or annotated
    if default is not _NO_DEFAULT:
        if default is None and not _accepts_null(schema):
            raise TypeError(f"{where} defaults to None but {_type_name(tp)} does not allow "
                            f"None; annotate it as {_type_name(tp)} | None")
        with contextlib.suppress(TypeError, ValueError):  # Python still applies the default
            schema["default"] = json.loads(json.dumps(default, default=_json_default))
    return schema


# --- docstrings ---------------------------------------------------------------------------------

_SECTION = re.compile(r"^\s*([A-Za-z][A-Za-z ]*):\s*$")
_ARGS_HEADERS = {"args", "arguments", "parameters", "params", "keyword args",
                 "keyword arguments", "other parameters"}
_GOOGLE_ITEM = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:(?:\s+(.*))?$")
_REST_PARAM = re.compile(r"^:(?:param|parameter|arg|argument|key|keyword)\s+"
                         r"(?:[^:]*\s)?\*{0,2}(\w+)\s*:\s*(.*)$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The first paragraph (one line) and per-parameter descriptions (Google or reST style)."""
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line) or line.lstrip().startswith(":"):
            break
        summary.append(line.strip())
    params: dict[str, str] = {}
    name, item_indent, section = None, 0, None  # section: indent of the open ``Args:`` header
    for line in lines:
        indent, text = _indent(line), line.strip()
        if not text:
            continue
        if section is not None and indent <= section:
            section = name = None
        header, rest = _SECTION.match(line), _REST_PARAM.match(text)
        if header and header.group(1).strip().lower() in _ARGS_HEADERS:
            section, name, item_indent = indent, None, 0
        elif rest:
            name, item_indent = rest.group(1), indent + 1
            params[name] = rest.group(2).strip()
        elif section is not None and (item := _GOOGLE_ITEM.match(text)) and (
                name is None or indent <= item_indent):
            name, item_indent = item.group(1), indent
            params[name] = (item.group(2) or "").strip()
        elif name is not None and indent >= item_indent and not text.startswith(":"):
            params[name] = f"{params[name]} {text}".strip()
        else:
            name = None
    return " ".join(summary), params


# --- strict structuring with cattrs, imported on first use --------------------------------------

class _Problem(ValueError):
    """A readable reason a value does not fit; its message is shown to the model as is."""


def _describe(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return json.dumps(value) if value is None else f"a boolean ({json.dumps(value)})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        text = json.dumps(value)
        return f"a string ({text if len(text) <= 40 else text[:37] + '...'})"
    return ("an object" if isinstance(value, Mapping) else
            "an array" if isinstance(value, (list, tuple)) else type(value).__qualname__)


def _expect(value: Any, expected: str) -> _Problem:
    return _Problem(f"expected {expected}, got {_describe(value)}")


def _structure_scalar(value: Any, tp: type) -> Any:
    """JSON scalars without coercion: a bool is not a number, 2.5 is not an int, 1 not a str."""
    if isinstance(value, bool) != (tp is bool):
        ok = False
    elif tp is str or tp is bool:
        ok = isinstance(value, tp)
    else:
        ok = isinstance(value, int) or (isinstance(value, float) and (
            tp is float or value.is_integer()))
    if not ok:
        raise _expect(value, _EXPECTED[tp])
    return tp(value)


def _choice_hook(choices: list[tuple[Any, Any]]) -> Callable[[Any, Any], Any]:
    """Match ``(json value, result)`` pairs by type and value, so ``true`` is never ``1``."""
    shown = ", ".join(json.dumps(v) for v, _ in choices)

    def structure_choice(value: Any, _: Any) -> Any:
        for wanted, result in choices:
            if type(value) is type(wanted) and value == wanted:
                return result
        raise _Problem(f"must be one of {shown}, got {_describe(value)}")
    return structure_choice


def _shaped(kind: Any, make: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A hook factory checking the JSON shape before cattrs' own hook runs: cattrs alone
    would turn a string into a list of characters."""
    def factory(tp: Any) -> Callable[[Any, Any], Any]:
        inner, args = make(tp), get_args(tp)
        size = len(args) if get_origin(tp) is tuple and args[-1] is not Ellipsis else None

        def structure_shaped(value: Any, _: Any) -> Any:
            if not isinstance(value, kind):
                raise _expect(value, "an object" if kind is Mapping else "an array")
            if size is not None and len(value) != size:
                raise _Problem(f"expected an array of {size} items, got {len(value)}")
            return inner(value, tp)
        return structure_shaped
    return factory


def _make_converter() -> Any:
    import cattrs
    from cattrs import cols

    conv = cattrs.Converter(detailed_validation=True, forbid_extra_keys=True)
    for tp in _SIMPLE:
        conv.register_structure_hook(tp, _structure_scalar)
    array, hook = (list, tuple), conv.register_structure_hook_factory
    hook(lambda t: get_origin(t) is Literal, lambda t: _choice_hook([(v, v) for v in get_args(t)]))
    hook(_is_enum, lambda t: _choice_hook([(m.value, m) for m in t]))
    hook(lambda t: get_origin(t) in _LIST_ORIGINS,
         _shaped(array, lambda t: cols.list_structure_factory(t, conv)))
    hook(lambda t: get_origin(t) is tuple,
         _shaped(array, lambda t: cols.homogenous_tuple_structure_factory(t, conv)
                 if get_args(t)[-1] is Ellipsis else conv.gen_structure_hetero_tuple(t)))
    hook(lambda t: get_origin(t) in _DICT_ORIGINS,
         _shaped(Mapping, lambda t: cols.mapping_structure_factory(t, conv)))
    hook(_is_attrs, _shaped(Mapping, conv.gen_structure_attrs_fromdict))
    hook(_is_typeddict, _shaped(Mapping, conv.gen_structure_typeddict))
    return conv


_converter: Any = None


def _get_converter() -> Any:
    global _converter
    if _converter is None:
        _converter = _make_converter()
    return _converter


def _problems(exc: BaseException, path: str) -> list[tuple[str, str]]:
    """Flatten cattrs' exception groups into ``(field path, problem)`` pairs."""
    from cattrs import errors

    if isinstance(exc, errors.BaseValidationError):
        out: list[tuple[str, str]] = []
        for sub in exc.exceptions:
            sub_path = path
            for note in getattr(sub, "__notes__", ()):
                if isinstance(note, errors.AttributeValidationNote):
                    sub_path = f"{path}.{note.name}"
                elif isinstance(note, errors.IterableValidationNote):
                    index = note.index
                    sub_path = f"{path}[{index if isinstance(index, int) else json.dumps(index)}]"
            out.extend(_problems(sub, sub_path))
        return out
    if isinstance(exc, errors.ForbiddenExtraKeysError):
        cls = exc.cl
        known = [a.name for a in attrs.fields(cls) if a.init] if attrs.has(cls) else list(
            typing.get_type_hints(cls))
        return [(f"{path}.{key}", f"is not a field of {cls.__qualname__} (known: "
                 f"{', '.join(known) or 'none'})") for key in sorted(exc.extra_fields)]
    if isinstance(exc, KeyError):
        return [(path, "is required")]
    if exc.args and isinstance(exc.args[0], str) and exc.args[0]:
        return [(path, exc.args[0])]  # attrs validators put a tuple's first item here
    return [(path, f"is invalid ({type(exc).__name__})")]


def _make_prepare(name: str, params: dict[str, tuple[Any, bool]]) -> Callable[..., Any]:
    def prepare(arguments: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError(name, None, f"expected a JSON object, got "
                                                f"{_describe(arguments)}")
        problems = [(str(key), f"is not a parameter (known: {', '.join(params) or 'none'})")
                    for key in arguments if key not in params]
        problems += [(p, "is required") for p, (_, required) in params.items()
                     if required and p not in arguments]
        conv, kwargs = _get_converter(), {}
        for pname, (tp, _) in params.items():
            if pname in arguments:
                try:
                    kwargs[pname] = conv.structure(arguments[pname], tp)
                except Exception as exc:  # every failure becomes a message for the model
                    problems.extend(_problems(exc, pname))
        if problems:
            (field, problem), rest = problems[0], problems[1:]
            if rest:
                problem += "; also " + "; ".join(f"{f!r} {p}" for f, p in rest)
            raise ToolArgumentError(name, field, problem)
        return kwargs
    return prepare


# --- calling the function and converting what it returns ----------------------------------------

def _json_default(value: Any) -> Any:
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (set, frozenset, Mapping)):
        return dict(value) if isinstance(value, Mapping) else list(value)
    raise TypeError(f"{type(value).__qualname__} is not JSON serializable")


def _to_result(value: Any, name: str) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, (TextContent, ImageContent)):
        return ToolResult((value,))
    if value is None or (isinstance(value, str) and not value):
        return ToolResult.text("(no output)")  # providers reject empty tool results
    if isinstance(value, str):
        return ToolResult.text(value)
    if isinstance(value, (Mapping, list, tuple, int, float)) or attrs.has(type(value)):
        try:
            data = json.loads(json.dumps(value, default=_json_default))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"tool {name!r} returned a value JSON cannot show: {exc}") from exc
        return ToolResult.text(json.dumps(data, ensure_ascii=False, indent=2),
                               details=data if isinstance(data, dict) else {"result": data})
    raise TypeError(f"tool {name!r} returned {type(value).__qualname__}; return a str, None, "
                    "a ToolResult, a dict, a list or an attrs instance")


def _make_execute(fn: Callable[..., Any], name: str, ctx_param: str | None) -> Any:
    def arguments(kwargs: Mapping[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return {**kwargs, ctx_param: ctx} if ctx_param is not None else dict(kwargs)

    async def finish(awaitable: Any) -> ToolResult:
        return _to_result(await awaitable, name)

    def execute(kwargs: Mapping[str, Any], ctx: ToolContext) -> Any:
        result = fn(**arguments(kwargs, ctx))
        return finish(result) if inspect.isawaitable(result) else _to_result(result, name)

    async def execute_async(kwargs: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        return await finish(fn(**arguments(kwargs, ctx)))

    # an async function's execute is async too: it runs on the event loop, not in a thread
    return execute_async if inspect.iscoroutinefunction(fn) else execute


# --- the decorator ------------------------------------------------------------------------------

def _is_context(hint: Any) -> bool:
    tp = _unwrap(hint)[0]
    tp = _optional_of(tp) or tp
    return isinstance(tp, type) and issubclass(tp, ToolContext)


def _build(fn: Callable[..., Any], name: str | None, description: str | None,
           metadata: ToolMetadata, output_schema: Mapping[str, Any] | None) -> Tool:
    if not callable(fn):
        raise TypeError(f"@tool decorates a function, got {type(fn).__qualname__}")
    tool_name: str = name or str(getattr(fn, "__name__", ""))
    where = f"tool {tool_name!r}"
    # parameters only: a return annotation imported under TYPE_CHECKING must not break this
    params_only = types.SimpleNamespace(__wrapped__=fn, __annotations__={
        k: v for k, v in getattr(fn, "__annotations__", {}).items() if k != "return"})
    try:
        hints = typing.get_type_hints(params_only, include_extras=True)
    except Exception as exc:
        raise TypeError(f"{where}: cannot resolve the type hints of the function: {exc}") from exc
    summary, docs = _parse_docstring(getattr(fn, "__doc__", None))
    signature = inspect.signature(fn)
    props: dict[str, Any] = {}
    params: dict[str, tuple[Any, bool]] = {}
    ctx_param: str | None = None
    for p in signature.parameters.values():
        pwhere = f"{where}: parameter {p.name!r}"
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            raise TypeError(f"{pwhere}: *args, **kwargs and positional-only parameters cannot "
                            "be given by name from JSON")
        if p.name not in hints:
            raise TypeError(f"{pwhere} has no type annotation; annotate it so the model's "
                            "arguments can be described and checked")
        if _is_context(hints[p.name]):
            if ctx_param is not None:
                raise TypeError(f"{pwhere}: only one parameter may receive the ToolContext "
                                f"(already {ctx_param!r})")
            ctx_param = p.name
            continue
        default = _NO_DEFAULT if p.default is p.empty else p.default
        props[p.name] = _property(hints[p.name], pwhere, (), docs.get(p.name), default)
        params[p.name] = (_unwrap(hints[p.name])[0], p.default is p.empty)
    unknown = sorted(set(docs) - set(signature.parameters))
    if unknown:
        raise TypeError(f"{where}: the docstring describes {', '.join(map(repr, unknown))}, "
                        "which the function does not take")
    text = description if description is not None else summary
    if not text:
        raise TypeError(f"{where} has no description: give the function a docstring or pass "
                        "@tool(description=...)")
    schema = {"type": "object", "properties": props,
              "required": [p for p, (_, required) in params.items() if required],
              "additionalProperties": False}
    return Tool(name=tool_name, description=text, parameters=schema,
                execute=_make_execute(fn, tool_name, ctx_param), metadata=metadata,
                output_schema=output_schema, prepare=_make_prepare(tool_name, params))


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(*, name: str | None = None, description: str | None = None, read_only: bool = False,
         concurrency_safe: bool = False, side_effects: bool | None = None,
         interactive: bool = False, output_schema: Mapping[str, Any] | None = None,
         ) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(fn: Callable[..., Any] | None = None, /, *, name: str | None = None,
         description: str | None = None, read_only: bool = False,
         concurrency_safe: bool = False, side_effects: bool | None = None,
         interactive: bool = False, output_schema: Mapping[str, Any] | None = None) -> Any:
    """Make a :class:`Tool` from a plain or async function: ``@tool``, ``@tool()`` or
    ``@tool(name=..., read_only=True, ...)``. ``side_effects`` defaults to ``not read_only``.
    Schema problems raise :class:`TypeError` here, at decoration time."""
    if isinstance(fn, str):
        raise TypeError(f"use @tool(name={fn!r}), not @tool({fn!r})")
    metadata = ToolMetadata(read_only=read_only, concurrency_safe=concurrency_safe,
                            side_effects=not read_only if side_effects is None else side_effects,
                            interactive=interactive)

    def decorate(f: Callable[..., Any]) -> Tool:
        return _build(f, name, description, metadata, output_schema)
    return decorate if fn is None else decorate(fn)
