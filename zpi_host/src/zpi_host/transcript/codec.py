"""JSON <-> attrs for messages and records: one configured cattrs converter.

Keys are camelCase; unions are tagged (messages on ``role``, content blocks on ``type``);
strings, integers and booleans are checked strictly (cattrs would turn ``5`` into ``"5"``).
Reading uses a converter without detailed validation, which is several times faster; only when
it fails is the same data structured again with detailed validation, to say what is wrong.

Records are first encoded and decoded by :mod:`.plain` (the same results, without cattrs);
cattrs is imported only for a record that module does not handle, or to explain a bad one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

import attrs

from ..providers.messages import AssistantContent, Message, ThinkingContent, ToolCallContent
from ..tools.base import Content, ImageContent, TextContent
from . import plain
from .errors import RecordError
from .plain import _is_mapping, camel
from .records import RECORD_TYPES, Record

if TYPE_CHECKING:
    import cattrs

_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


class _Problem(TypeError):
    """A structuring failure whose message is already what the user should read."""


_JSON_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
               dict: "an object", list: "an array", type(None): "null"}


def _json_kind(value: Any) -> str:
    return _JSON_NAMES.get(type(value), type(value).__name__)


def _strict(kind: type) -> Callable[[Any, Any], Any]:
    def structure(value: Any, _: Any) -> Any:
        if type(value) is not kind:
            raise _Problem(f"expected {_JSON_NAMES[kind]}, got {_json_kind(value)}")
        return value

    return structure


def _json_object(value: Any, _: Any) -> Any:
    if type(value) is not dict:
        raise _Problem(f"expected an object, got {_json_kind(value)}")
    return value


def _literal(tp: Any) -> Callable[[Any, Any], Any]:
    allowed = get_args(tp)

    def structure(value: Any, _: Any) -> Any:
        if value not in allowed:
            raise _Problem(f"expected {' or '.join(map(repr, allowed))}, got {value!r}")
        return value

    return structure


def _explained_union(conv: cattrs.Converter, union: Any, tag: str) -> Callable[[Any, Any], Any]:
    """A tagged union hook that names an unknown or missing tag (for explanations only)."""
    members = {_tag_of(tag)(cls): cls for cls in get_args(union)}

    def structure(value: Any, _: Any) -> Any:
        if type(value) is not dict:
            raise _Problem(f"expected an object, got {_json_kind(value)}")
        found = value.get(tag)
        cls = members.get(found) if isinstance(found, str) else None
        if cls is None:
            raise _Problem(f"unknown {tag} {value.get(tag)!r} (expected one of: "
                           f"{', '.join(members)})")
        return conv.structure(value, cls)

    return structure


def _objects_only(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def structure(value: Any, tp: Any) -> Any:
        if type(value) is not dict:
            raise _Problem(f"expected an object, got {_json_kind(value)}")
        return fn(value, tp)

    return structure


def _format(exc: BaseException, tp: Any) -> str:
    import cattrs.v

    return str(exc) if isinstance(exc, _Problem) else cattrs.v.format_exception(exc, tp)


def _make(detailed: bool) -> cattrs.Converter:
    import cattrs
    from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
    from cattrs.strategies import configure_tagged_union

    conv = cattrs.Converter(detailed_validation=detailed, forbid_extra_keys=False)
    for kind in (str, int, bool):
        conv.register_structure_hook(kind, _strict(kind))
    conv.register_structure_hook(float, lambda v, _: _check_number(v))
    conv.register_structure_hook_func(_is_mapping, _json_object)
    conv.register_unstructure_hook_func(_is_mapping, lambda v: v)
    conv.register_structure_hook(str | None, _optional_str)  # type: ignore[arg-type]
    # cattrs' own tuple hook looks the item hook up for every item and accepts strings
    conv.register_structure_hook_factory(
        _is_homogeneous_tuple, lambda tp: _tuple_of(conv, tp.__args__[0], detailed))

    def renames(cls: type, structure: bool = False) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for field in attrs.fields(cls):
            if issubclass(cls, Record) and field.name == "extra":
                found[field.name] = override(omit=True)
            elif structure and cls in _BLOCKS and field.name == "type":
                found[field.name] = override(omit=True)  # the union's tag already chose it
            elif camel(field.name) != field.name:
                found[field.name] = override(rename=camel(field.name))
        return found

    def structure_fn(cls: type) -> Callable[[Any, Any], Any]:
        fn: Callable[[Any, Any], Any] = make_dict_structure_fn(cls, conv, **renames(cls, True))
        return _objects_only(fn) if detailed else fn

    conv.register_structure_hook_factory(attrs.has, structure_fn)
    conv.register_unstructure_hook_factory(
        attrs.has, lambda cls: make_dict_unstructure_fn(cls, conv, **renames(cls)))
    for union, tag in ((Content, "type"), (AssistantContent, "type"), (Message, "role")):
        configure_tagged_union(union, conv, tag_name=tag, tag_generator=_tag_of(tag))
        if detailed:
            conv.register_structure_hook(union, _explained_union(conv, union, tag))
    if detailed:
        conv.register_structure_hook_func(lambda tp: get_origin(tp) is Literal, _literal_hook)
    return conv


def _literal_hook(value: Any, tp: Any) -> Any:
    return _literal(tp)(value, tp)


#: Content blocks: only ever structured through a union tagged on ``type``.
_BLOCKS = frozenset({TextContent, ImageContent, ThinkingContent, ToolCallContent})


def _tag_of(field: str) -> Callable[[type], str]:
    """The tag of a union member: the default of its ``Literal`` field (``role``/``type``)."""

    def tag(cls: type) -> str:
        return str(attrs.fields_dict(cls)[field].default)

    return tag


def _optional_str(value: Any, _: Any) -> str | None:
    if value is not None and type(value) is not str:
        raise _Problem(f"expected a string or null, got {_json_kind(value)}")
    return value  # type: ignore[no-any-return]


def _is_homogeneous_tuple(tp: Any) -> bool:
    args: tuple[Any, ...] = getattr(tp, "__args__", ())
    return get_origin(tp) is tuple and len(args) == 2 and args[1] is Ellipsis


def _tuple_of(conv: cattrs.Converter, item: Any, detailed: bool) -> Callable[[Any, Any], Any]:
    from cattrs.errors import IterableValidationError, IterableValidationNote

    hook = conv.get_structure_hook(item)

    def structure(value: Any, _: Any) -> tuple[Any, ...]:
        if type(value) is not list:
            raise _Problem(f"expected an array, got {_json_kind(value)}")
        return tuple([hook(v, item) for v in value])

    def explained(value: Any, tp: Any) -> tuple[Any, ...]:
        if type(value) is not list:
            raise _Problem(f"expected an array, got {_json_kind(value)}")
        items, errors = [], []
        for index, v in enumerate(value):
            try:
                items.append(hook(v, item))
            except Exception as exc:
                note = IterableValidationNote(f"Structuring {tp} @ index {index}", index, item)
                exc.__notes__ = [*getattr(exc, "__notes__", []), note]
                errors.append(exc)
        if errors:
            raise IterableValidationError(f"While structuring {tp!r}", errors, tp)
        return tuple(items)

    return explained if detailed else structure


def _check_number(value: Any) -> float:
    if type(value) not in (int, float):
        raise _Problem(f"expected a number, got {_json_kind(value)}")
    return float(value)


@cache
def converter(detailed: bool = False) -> cattrs.Converter:
    """The shared converter (``detailed``: the slower one that explains failures)."""
    return _make(detailed)


#: cattrs names fields by attribute (``$.session_id``); the file has ``$.sessionId``
_JSON_PATH = r"\.([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b"  # compiled on first use (an error)


def _json_path(problem: str) -> str:
    """``… @ $.message.stop_reason`` -> ``… @ $.message.stopReason``: the key in the file."""
    text, at, path = problem.rpartition(" @ ")
    if not at:
        return problem
    return f"{text}{at}{re.sub(_JSON_PATH, lambda m: '.' + camel(m.group(1)), path)}"


def explain(data: Any, cls: Any, error: BaseException) -> str:
    """Why ``data`` does not structure as ``cls``: cattrs' detailed messages, one per problem."""
    import cattrs

    try:
        converter(True).structure(data, cls)
    except cattrs.BaseValidationError as exc:
        return "; ".join(_json_path(problem) for problem
                         in cattrs.transform_error(exc, path="$", format_exception=_format))
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return f"{type(error).__name__}: {error}"


# ------------------------------------------------------------------------------ messages


def message_to_json(message: Message) -> dict[str, Any]:
    """A message as a JSON-ready dict (the ``message`` field of user/assistant/tool records)."""
    return converter().unstructure(message, Message)  # type: ignore[no-any-return]


def message_from_json(data: Any) -> Message:
    """The inverse of :func:`message_to_json`; raises :class:`RecordError` saying what is
    wrong."""
    try:
        return converter().structure(data, Message)  # type: ignore[arg-type,no-any-return]
    except Exception as exc:
        raise RecordError(f"not a valid message: {explain(data, Message, exc)}") from None


# ------------------------------------------------------------------------------- records


_known: dict[type, frozenset[str]] = {}
_structure: dict[type, Callable[[Any, Any], Any]] = {}
_unstructure: dict[type, Callable[[Any], Any]] = {}
_names: dict[type, frozenset[str]] = {}


def _known_keys(cls: type[Record]) -> frozenset[str]:
    keys = _known.get(cls)
    if keys is None:
        names = {camel(f.name) for f in attrs.fields(cls) if f.name != "extra"}
        keys = _known[cls] = frozenset({"type", *names})
    return keys


def _field_names(cls: type[Record]) -> frozenset[str]:
    """The attribute names of ``cls`` (looked up once per class: every append asks)."""
    names = _names.get(cls)
    if names is None:
        names = _names[cls] = frozenset(f.name for f in attrs.fields(cls))
    return names


def _structure_fn(cls: type[Record]) -> Callable[[Any, Any], Any]:
    fn = _structure.get(cls)
    if fn is None:
        fn = _structure[cls] = converter().get_structure_hook(cls)
    return fn


def _unstructure_fn(cls: type[Record]) -> Callable[[Any], Any]:
    fn = _unstructure.get(cls)
    if fn is None:
        fn = _unstructure[cls] = converter().get_unstructure_hook(cls)
    return fn


def decode_record(data: dict[str, Any], cls: type[Record]) -> Record:
    """A parsed line as a record of ``cls`` (chosen from its ``type``). Raises ValueError with
    a readable explanation when a field is missing or of the wrong type."""
    record: Record
    try:
        record = plain.structure(data, cls)
    except Exception:  # not one plain decodes (or not valid): the converter decides
        try:
            record = _structure_fn(cls)(data, cls)
        except Exception as exc:
            raise ValueError(explain(data, cls, exc)) from None
    if not data.keys() <= _known_keys(cls):
        known = _known_keys(cls)
        extra = {k: v for k, v in data.items() if k not in known}
        record = attrs.evolve(record, extra=extra)
    return record


def encode_record(record: Record) -> dict[str, Any]:
    """A record as the JSON object written to its line: ``type`` first, unknown fields last."""
    data: dict[str, Any] = {"type": record.TYPE}
    try:
        fields = plain.unstructure(record)
    except Exception:  # a value plain does not encode (plain.Unhandled): the converter does
        fields = _unstructure_fn(type(record))(record)
    data.update(fields)
    for key, value in record.extra.items():
        data.setdefault(key, value)
    return data


def dump_line(data: Mapping[str, Any]) -> bytes:
    """One record as one line: compact JSON, ASCII only (so any string, even one with lone
    surrogates, round-trips), newline-terminated."""
    try:
        text = _ENCODER.encode(data)
    except (TypeError, ValueError) as exc:
        raise RecordError(f"a {data.get('type')!r} record is not JSON-serialisable: {exc}") \
            from None
    return text.encode("ascii") + b"\n"


def build_record(cls: type[Record], fields: Mapping[str, Any]) -> Record:
    """A record from keyword fields; unknown or missing fields are a RecordError."""
    names = _field_names(cls)
    if not fields.keys() <= names:
        unknown = set(fields) - names
        raise RecordError(f"{cls.TYPE!r} records have no field(s) {sorted(unknown)} "
                          f"(fields: {sorted(names - set(_ENVELOPE))})")
    try:
        return cls(**fields)
    except TypeError as exc:
        raise RecordError(f"cannot make a {cls.TYPE!r} record: {exc}") from None


_ENVELOPE = ("uuid", "parent_uuid", "session_id", "timestamp", "extra")

__all__ = [
    "RECORD_TYPES", "build_record", "camel", "converter", "decode_record", "dump_line",
    "encode_record", "explain", "message_from_json", "message_to_json",
]
