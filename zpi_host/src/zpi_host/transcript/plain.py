"""Records <-> JSON objects without cattrs: the common case of every append and every read.

Every record appended is encoded, then decoded again to check it exactly as a reader will;
cattrs' import and the functions it generates per class were about a tenth of a one-turn
``zpi-host run``. The functions here, built per class from its field types, give the same
results as :mod:`.codec`'s cattrs converter for the values they accept and give up (raise
:class:`Unhandled`) on anything else: a value of a type they do not expect, or data a reader
would refuse. :mod:`.codec` then does the same work with cattrs, which either produces its
result or explains what is wrong, exactly as before. So cattrs is imported only for the rare
record that needs it.

What they accept, field type by field type (the converter's own rules): ``str``, ``int`` and
``bool`` exactly of that type; ``str | None``; ``Mapping[str, Any]`` a JSON object (the same
dict); ``Literal`` one of its values; ``tuple[X, ...]`` a JSON array; attrs classes a JSON
object whose keys are the camelCase field names (unknown keys ignored, missing ones with a
default left to it); unions of attrs classes tagged on ``type``; ``Any`` as it is.
"""

from __future__ import annotations
import __future__

import functools
import inspect
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args, get_origin

import attrs

__all__ = ["Unhandled", "structure", "unstructure"]


class Unhandled(Exception):
    """A value these functions do not handle: let the cattrs converter do it."""


#: runtime types ``Any`` fields pass through unchanged (dicts as they are: the converter's
#: mapping hook does not copy them either); lists are copied
_PLAIN = frozenset({str, int, float, bool, type(None), dict})

Fn = Callable[[Any], Any]

_structurers: dict[Any, Fn] = {}
_unstructurers: dict[Any, Fn] = {}


def camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (types.UnionType, typing.Union)


def _is_mapping(tp: Any) -> bool:
    return get_origin(tp) in (Mapping, dict) or tp in (Mapping, dict)


#: annotation text -> type, per module (``typing.get_type_hints`` compiles every annotation
#: of every class again; these repeat: ``str``, ``str | None``, ...)
_evaluated: dict[tuple[str, str], Any] = {}


def _field_type(cls: type, name: str, annotation: Any) -> Any:
    """The type of field ``name``: its annotation evaluated where it was written (the class in
    ``cls``'s MRO that declares it), as ``typing.get_type_hints`` would."""
    if not isinstance(annotation, str):
        return annotation
    module = next((base.__module__ for base in cls.__mro__
                   if name in inspect.get_annotations(base)), cls.__module__)
    key = (module, annotation)
    if key not in _evaluated:
        # the class's own annotation text, evaluated as get_type_hints does
        _evaluated[key] = eval(annotation, vars(sys.modules[module]))
    return _evaluated[key]


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, str, Any, bool], ...]:
    """(attribute, JSON key, type, has a default) of each field ``cls`` reads and writes: a
    record's ``extra`` is neither (unknown keys are kept by the codec)."""
    from .records import Record

    return tuple((f.name, camel(f.name), _field_type(cls, f.name, f.type),
                  f.default is not attrs.NOTHING)
                 for f in attrs.fields(cls)
                 if not (f.name == "extra" and issubclass(cls, Record)))


_tags: dict[type, str] = {}


def _tag(cls: type) -> str:
    """The ``type`` tag of ``cls`` (looked up once: every tagged value encoded asks)."""
    tag = _tags.get(cls)
    if tag is None:
        tag = _tags[cls] = str(attrs.fields_dict(cls)["type"].default)
    return tag


# ------------------------------------------------------------------------------ structure


def _exact(kind: type) -> Fn:
    def check(value: Any) -> Any:
        if type(value) is not kind:
            raise Unhandled
        return value

    return check


def _optional(inner: Fn) -> Fn:
    def check(value: Any) -> Any:
        return None if value is None else inner(value)

    return check


def _literal(allowed: tuple[Any, ...]) -> Fn:
    """The allowed value itself (one object for every ``role`` of every message read)."""

    def check(value: Any) -> Any:
        for option in allowed:
            if value == option and type(value) is type(option):
                return option
        raise Unhandled

    return check


def _json_object(value: Any) -> Any:
    if type(value) is not dict:
        raise Unhandled
    return value


def _tuple_of(item: Fn) -> Fn:
    def build(value: Any) -> tuple[Any, ...]:
        if type(value) is not list:
            raise Unhandled
        return tuple([item(v) for v in value])

    return build


def _tagged(members: tuple[type, ...]) -> Fn:
    by_tag = {_tag(cls): cls for cls in members}

    def build(value: Any) -> Any:
        if type(value) is not dict:
            raise Unhandled
        cls = by_tag.get(value.get("type"))  # type: ignore[arg-type]
        if cls is None:
            raise Unhandled
        return structurer(cls, tagged=True)(value)

    return build


def _structurer_of(tp: Any) -> Fn:
    if tp in (str, int, bool):
        return _exact(tp)
    if tp is Any:
        return lambda value: value
    if _is_mapping(tp):
        return _json_object
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return _literal(args)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _tuple_of(_structurer_of(args[0]))
    if _is_union(tp):
        members = tuple(a for a in args if a is not type(None))
        if len(members) < len(args) and len(members) == 1:
            return _optional(_structurer_of(members[0]))
        if len(members) == len(args) and all(attrs.has(m) for m in members):
            return _tagged(members)
    if isinstance(tp, type) and attrs.has(tp):
        return structurer(tp)
    raise TypeError(f"no plain structuring for {tp!r}")


def _field_lines(index: int, name: str, json_key: str, tp: Any, has_default: bool,
                 namespace: dict[str, Any]) -> list[str]:
    """The lines of a generated structurer that read field ``name`` from ``value`` into
    ``kwargs``: str, int, bool and ``str | None`` checked inline, other types through their
    function (``item<index>`` in ``namespace``)."""
    if has_default:
        lines, indent = [f"    if {json_key!r} in value:"], "        "
    else:
        lines, indent = [f"    if {json_key!r} not in value:", "        raise Unhandled"], "    "
    lines.append(f"{indent}found = value[{json_key!r}]")
    if tp in (str, int, bool) or tp == str | None:
        test = (f"type(found) is not {tp.__name__}" if tp in (str, int, bool)
                else "found is not None and type(found) is not str")
        lines += [f"{indent}if {test}:", f"{indent}    raise Unhandled",
                  f"{indent}kwargs[{name!r}] = found"]
    else:
        namespace[f"item{index}"] = _structurer_of(tp)
        lines.append(f"{indent}kwargs[{name!r}] = item{index}(found)")
    return lines


def structurer(cls: type, tagged: bool = False) -> Fn:
    """The function turning a JSON object into a ``cls``; ``tagged``: reached through a union
    tagged on ``type``, which already chose the class (its ``type`` key is not read).

    Generated as straight-line code, as cattrs does (a loop over the fields cost a resume of a
    large session a few percent); compiling it takes some tens of microseconds per class."""
    key = (cls, tagged)
    fn = _structurers.get(key)
    if fn is not None:
        return fn
    namespace: dict[str, Any] = {"Unhandled": Unhandled, "cls": cls}
    lines = ["def build(value):", "    if type(value) is not dict:", "        raise Unhandled",
             "    kwargs = {}"]
    for index, (name, json_key, tp, has_default) in enumerate(_fields(cls)):
        if not (tagged and name == "type"):
            lines += _field_lines(index, name, json_key, tp, has_default, namespace)
    lines += ["    try:", "        return cls(**kwargs)",
              "    except Exception as exc:  # a validator of the class",
              "        raise Unhandled from exc"]
    exec(compile("\n".join(lines), f"<plain structurer {cls.__qualname__}>", "exec",
                 __future__.annotations.compiler_flag, True), namespace)
    fn = _structurers[key] = namespace["build"]
    return fn


def structure(data: Any, cls: type) -> Any:
    """``data`` (a parsed JSON object) as a ``cls``; raises :class:`Unhandled` when it is not
    one this module decodes."""
    return structurer(cls)(data)


# ---------------------------------------------------------------------------- unstructure


def _as_is(value: Any) -> Any:
    return value


def _plain_value(value: Any) -> Any:
    kind = type(value)
    if kind is list:  # the converter copies lists, item by item
        return [_plain_value(v) for v in value]
    if kind not in _PLAIN:
        raise Unhandled
    return value


def _optional_out(inner: Fn, kinds: tuple[type, ...]) -> Fn:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        if type(value) not in kinds:
            raise Unhandled
        return inner(value)

    return convert


def _list_of(item: Fn) -> Fn:
    def convert(value: Any) -> list[Any]:
        if type(value) not in (tuple, list):
            raise Unhandled
        return [item(v) for v in value]

    return convert


def _tagged_out(members: tuple[type, ...]) -> Fn:
    def convert(value: Any) -> Any:
        cls = type(value)
        if cls not in members:
            raise Unhandled
        data = unstructurer(cls)(value)
        data["type"] = _tag(cls)
        return data

    return convert


def _exact_class(cls: type) -> Fn:
    def convert(value: Any) -> Any:
        if type(value) is not cls:
            raise Unhandled
        return unstructurer(cls)(value)

    return convert


def _unstructurer_of(tp: Any) -> Fn:
    if tp in (str, int, bool) or _is_mapping(tp) or get_origin(tp) is Literal:
        return _as_is  # the converter passes these through whatever they hold
    if tp is Any:
        return _plain_value
    origin, args = get_origin(tp), get_args(tp)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _list_of(_unstructurer_of(args[0]))
    if _is_union(tp):
        members = tuple(a for a in args if a is not type(None))
        if len(members) < len(args) and len(members) == 1:
            member = members[0]
            if member is str:
                return _optional_out(_as_is, (str,))
            if _is_mapping(member):
                return _optional_out(_as_is, (dict,))
            if isinstance(member, type) and attrs.has(member):
                return _optional_out(_exact_class(member), (member,))
        elif len(members) == len(args) and all(attrs.has(m) for m in members):
            return _tagged_out(members)
    if isinstance(tp, type) and attrs.has(tp):
        return _exact_class(tp)
    raise TypeError(f"no plain unstructuring for {tp!r}")


def unstructurer(cls: type) -> Fn:
    """The function turning a ``cls`` into its JSON object (fields in their order).

    Generated as one dict display, like the structurer (a loop over the fields was about a
    fifth of encoding each record appended)."""
    fn = _unstructurers.get(cls)
    if fn is not None:
        return fn
    namespace: dict[str, Any] = {}
    entries = []
    for index, (name, json_key, tp, _) in enumerate(_fields(cls)):
        item = _unstructurer_of(tp)
        if item is _as_is:
            entries.append(f"{json_key!r}: value.{name}")
        else:
            namespace[f"item{index}"] = item
            entries.append(f"{json_key!r}: item{index}(value.{name})")
    source = "def convert(value):\n    return {" + ", ".join(entries) + "}"
    exec(compile(source, f"<plain unstructurer {cls.__qualname__}>", "exec",
                 __future__.annotations.compiler_flag, True), namespace)
    fn = _unstructurers[cls] = namespace["convert"]
    return fn


def unstructure(value: Any) -> dict[str, Any]:
    """``value`` (an attrs instance) as its JSON object; raises :class:`Unhandled` when it
    holds a value this module does not encode."""
    return unstructurer(type(value))(value)
