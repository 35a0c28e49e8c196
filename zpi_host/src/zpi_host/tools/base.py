"""The tool model: what a tool is, what it is called with, what it returns.

A :class:`Tool` pairs a JSON-Schema description (what the model sees) with two callables:
``prepare`` turns the model's raw JSON arguments into what ``execute`` takes, raising
:class:`ToolArgumentError` with the field and the problem when they do not fit, and
``execute`` does the work. Both the loop and hooks that replace a call's input go through
``prepare``, so a replaced input is validated exactly like the model's.
"""

from __future__ import annotations

import base64
import math
import operator
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import attrs

from ..errors import ZpiError
from ..support.attrs_methods import FieldsEq, FrozenFieldsEq
from .arguments import argument_problem

if TYPE_CHECKING:
    from ..fs.files import FileFingerprint
    from ..permissions.paths import JudgedPath

#: how much of a command's output a tool keeps in memory (its start and end; the rest goes to
#: a spill file: ``output.HeadTailBuffer``)
DEFAULT_CAPTURE_LIMIT = 50 * 1024
#: how much of a tool's result the model gets by default (``output.protect_result``)
DEFAULT_RESULT_LIMIT = 32 * 1024


class ToolArgumentError(ZpiError):
    """Arguments that do not fit the tool's schema; the message is shown to the model."""

    def __init__(self, tool: str, field: str | None, problem: str) -> None:
        where = f"argument {field!r}" if field else "arguments"
        super().__init__(f"invalid {where} for tool {tool!r}: {problem}")
        self.tool, self.field, self.problem = tool, field, problem


class ToolFailure(ZpiError):
    """Raised by a tool's ``execute`` for an expected failure; becomes an error result whose
    text is this message (no traceback), with optional structured ``details``."""

    def __init__(self, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = details


@attrs.frozen(repr=False, eq=False, slots=False)
class TextContent(FrozenFieldsEq):
    text: str
    type: Literal["text"] = "text"


@attrs.frozen(repr=False, eq=False, slots=False)
class ImageContent(FrozenFieldsEq):
    """An image for the model: base64 data and its MIME type."""

    data: str
    mime_type: str
    type: Literal["image"] = "image"

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str) -> ImageContent:
        return cls(base64.b64encode(data).decode("ascii"), mime_type)


Content = TextContent | ImageContent


@attrs.frozen(repr=False, eq=False, slots=False)
class ToolResult(FrozenFieldsEq):
    """What a tool returns. ``details`` is structured data for programs and transcripts; it is
    never sent to the model."""

    content: tuple[Content, ...] = ()
    is_error: bool = False
    details: Mapping[str, Any] | None = None

    @classmethod
    def text(cls, text: str, *, details: Mapping[str, Any] | None = None) -> ToolResult:
        return cls((TextContent(text),), False, details)

    @classmethod
    def error(cls, message: str, *, details: Mapping[str, Any] | None = None) -> ToolResult:
        return cls((TextContent(message),), True, details)

    @property
    def text_content(self) -> str:
        """All text blocks joined (images omitted)."""
        return "\n".join(c.text for c in self.content if isinstance(c, TextContent))


@attrs.frozen(repr=False, eq=False, slots=False)
class ToolMetadata(FrozenFieldsEq):
    """How the loop may schedule a tool: read-only and concurrency-safe calls run in parallel."""

    read_only: bool = False
    concurrency_safe: bool = False
    side_effects: bool = True
    interactive: bool = False
    #: the tool starts sub-agents (``task``): a sub-agent never gets it (no nesting)
    spawns_subagents: bool = False


@attrs.frozen(repr=False, eq=False, slots=False)
class ToolCall(FrozenFieldsEq):
    """One call the model asked for."""

    id: str
    name: str
    arguments: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.define(repr=False, eq=False, slots=False)
class ToolUpdate(FieldsEq):
    """Progress a running tool reports (bash output so far ...); emitted as an event."""

    call_id: str
    text: str


def no_update(update: ToolUpdate) -> None:
    """The ``on_update`` of a call whose progress nobody receives: a threaded call then needs
    no hand-over to the loop (``threads.execute``)."""


class FileReads(Protocol):
    """What the file tools ask of the session's record of the files it has read
    (:class:`.file_state.FileReadState`, which sits above this module: its errors are
    ToolFailures)."""

    def record(self, path: Path | str, fingerprint: FileFingerprint) -> None: ...

    def check_fresh(self, path: Path | str, current: FileFingerprint | None = None
                    ) -> FileFingerprint: ...


@attrs.define(kw_only=True, repr=False, eq=False, slots=False)
class ToolContext(FieldsEq):
    """What a running tool may know about its session. Built by the loop for each call."""

    cwd: Path
    call_id: str = ""
    model: str | None = None
    reasoning_level: str | None = None
    session: Any = None
    system_prompt: str = ""
    file_state: FileReads | None = None
    spill_dir: Path | None = None
    cancel_scope: Any = None
    is_idle: Callable[[], bool] = lambda: False
    get_tool: Callable[[str], Tool | None] = lambda name: None
    on_update: Callable[[ToolUpdate], None] = no_update
    env: Mapping[str, str] | None = None
    #: variables removed from the host's environment before ``env`` is added (provider keys)
    hidden_env: frozenset[str] = frozenset()
    judged_paths: Mapping[str, JudgedPath] | None = None
    #: a hook wants the call's stderr apart from its stdout (``SessionView.keep_streams_apart``):
    #: the bash tool then also reports each stream in ``details``
    streams_apart: bool = False
    #: the session's output limit in bytes (setting ``tools.output_limit_bytes``): a tool that
    #: pages its own output (``read``) stays within it, so the output protection never cuts
    #: a hole in the middle of its result; None: no session limit known
    output_limit: int | None = None
    #: called with a file's resolved path before a tool changes it (the session's file
    #: checkpoints, ``agent/file_checkpoints.py``); None: nothing is kept
    before_change: Callable[[Path], None] | None = None

    def resolve_path(self, path: str) -> Path:
        """A tool argument path, relative to the session cwd, made absolute (not resolved
        through symlinks: permission checks do that)."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.cwd / p

    def target(self, path: str) -> JudgedPath:
        """Where a path argument leads: what the permission check judged for it (file tools
        open exactly that ``real`` path, without following symlinks), or for a path no check
        judged (a replaced input, a tool run directly) the path resolved now. Raises
        :class:`~zpi_host.fs.nofollow.UnusablePathError`."""
        judged = (self.judged_paths or {}).get(path)
        if judged is not None:
            return judged
        from ..fs.nofollow import resolve
        from ..permissions.paths import JudgedPath

        return JudgedPath(path, resolve(self.resolve_path(path)), None)

    def update(self, text: str) -> None:
        self.on_update(ToolUpdate(self.call_id, text))


@attrs.frozen(repr=False, eq=False, slots=False)
class SessionDefinition(FrozenFieldsEq):
    """What a session is being made of, for :attr:`Tool.is_available`: the model's catalog
    entry (``vision`` and the other capabilities) and the agent definition's name, if the
    session runs one (None: the default agent). ``model`` is a
    :class:`~zpi_host.providers.ModelEntry`, typed loosely because tools sit below the
    providers' layer."""

    model: Any = None
    agent: str | None = None


Prepare = Callable[[Mapping[str, Any]], Any]
Availability = Callable[[Mapping[str, Any], SessionDefinition], bool]
Execute = Callable[[Any, ToolContext], "ToolResult | Awaitable[ToolResult]"]


#: the keywords of a flat object schema (parameters constrained by their type only), and of
#: its parameters
_FLAT_OBJECT = frozenset({"type", "properties", "required", "additionalProperties",
                          "description", "title", "$schema"})
_FLAT_PARAMETER = frozenset({"type", "description", "title", "default", "examples"})
#: numeric bounds the quick check also applies to an ``integer`` or ``number`` parameter, and
#: their wording (that of :mod:`zpi_host.support.json_schema`)
_BOUNDS: dict[str, tuple[str, Callable[[float, float], bool]]] = {
    "minimum": ("at least", operator.lt), "maximum": ("at most", operator.gt),
    "exclusiveMinimum": ("more than", operator.le), "exclusiveMaximum": ("less than", operator.ge),
}
_PLAIN = frozenset({"string", "integer", "number", "boolean", "array", "object"})


def _is_flat_parameter(schema: Any) -> bool:
    if not isinstance(schema, Mapping) or schema.get("type", "string") not in _PLAIN:
        return False
    bounds = set(schema) - _FLAT_PARAMETER
    return not bounds or (
        bounds <= _BOUNDS.keys() and schema.get("type") in ("integer", "number")
        and all(type(schema[b]) in (int, float) and math.isfinite(schema[b]) for b in bounds))


def _is_flat(schema: Mapping[str, Any]) -> bool:
    """Whether the quick check below is the whole of ``schema``: an object of parameters
    constrained by their type alone, or a number's by its bounds too (no ``enum``, ``items``,
    ``properties`` under them; ``required``, ``additionalProperties`` true or false), nothing
    else. The read tool's ``offset`` and ``limit`` (``minimum: 1``) are such parameters: a
    session's first read does not import ``jsonschema``."""
    props = schema.get("properties", {})
    return (set(schema) <= _FLAT_OBJECT and schema.get("type", "object") == "object"
            and isinstance(schema.get("additionalProperties", True), bool)
            and isinstance(props, Mapping)
            and all(_is_flat_parameter(p) for p in props.values()))


def _out_of_bounds(parameter: Mapping[str, Any], value: float) -> str | None:
    """What a number breaks of its parameter's bounds, worded as the full check words it (and
    the value given)."""
    for bound, (words, breaks) in _BOUNDS.items():
        limit = parameter.get(bound)
        if limit is not None and breaks(value, limit):
            return f"must be {words} {limit}, got {value}"
    return None


def _check_object(tool: str, schema: Mapping[str, Any], args: Mapping[str, Any]) -> Any:
    """The default ``prepare``: the arguments checked against the tool's JSON schema. A flat
    schema (parameters constrained by their type alone) is checked here in full; anything
    richer (``enum``, ``items``, nested objects, ``$ref``, ``anyOf``) by ``jsonschema``
    (:mod:`zpi_host.support.json_schema`, imported then). A parameter given as null counts as
    not type-checked (the tool's own preparation decides). Tools built with ``@tool`` use
    cattrs instead."""
    if not isinstance(args, Mapping):
        raise ToolArgumentError(tool, None, f"expected a JSON object, got {type(args).__name__}")
    if not _is_flat(schema):
        return _check_with_schema(tool, schema, args)
    props: Mapping[str, Any] = schema.get("properties", {})
    for name in schema.get("required", ()):
        if name not in args:
            raise ToolArgumentError(tool, name, "is required")
    if schema.get("additionalProperties", True) is False:
        for name in args:
            if name not in props:
                known = ", ".join(props)
                raise ToolArgumentError(tool, name, f"is not a parameter (known: {known})")
    types: dict[str, type | tuple[type, ...]] = {
        "string": str, "integer": int, "number": (int, float), "boolean": bool,
        "array": list, "object": Mapping,
    }
    for name, value in args.items():
        expected = props.get(name, {}).get("type")
        py = types.get(expected) if isinstance(expected, str) else None
        if py is None or value is None:
            continue
        if isinstance(value, bool) and expected in ("integer", "number"):
            raise ToolArgumentError(tool, name, f"expected {expected}, got boolean")
        if not isinstance(value, py):
            raise ToolArgumentError(tool, name, f"expected {expected}, got {type(value).__name__}")
        if isinstance(value, (int, float)):  # an integer or number parameter's bounds
            problem = _out_of_bounds(props[name], value)
            if problem is not None:
                raise ToolArgumentError(tool, name, problem)
    return dict(args)


def _check_with_schema(tool: str, schema: Mapping[str, Any], args: Mapping[str, Any]) -> Any:
    """:func:`_check_object` by ``jsonschema``: the first problem names its argument (a
    nested one as ``items[0].name``), the next ones follow as "also". A schema that is not a
    valid JSON schema checks nothing (the tool, or its server, checks the arguments)."""
    from ..support.json_schema import InvalidSchemaError, path_text, problems

    given = {k: v for k, v in args.items() if v is not None}
    try:
        checked = problems(given, schema)
    except InvalidSchemaError:
        # a sloppy schema (an MCP server's ``"type": "any"``) must not make the tool unusable:
        # the arguments go to the tool, which checks them itself
        return dict(args)
    found = [p for p in checked
             if not (p.keyword == "required" and p.path and p.path[-1] in args
                     and len(p.path) == 1)]
    if not found:
        return dict(args)
    props = schema.get("properties", {})

    def said(problem: Any) -> str:
        if problem.keyword == "type":
            kinds = problem.message.split(", got ")[0].removeprefix("must be ")
            return f"expected {kinds}, got {type(problem.value).__name__}"
        if problem.keyword == "additionalProperties" and len(problem.path) == 1:
            return f"is not a parameter (known: {', '.join(props)})"
        return problem.message

    first, *others = found
    text = said(first) + "".join(f"; also {path_text(p.path)!r} {said(p)}"
                                 for p in others[:3] if p.path)
    raise ToolArgumentError(tool, path_text(first.path) or None, text)


@attrs.frozen(repr=False, eq=False, slots=False)
class Tool(FrozenFieldsEq):
    """A tool the model can call."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    execute: Execute
    metadata: ToolMetadata = ToolMetadata()
    output_schema: Mapping[str, Any] | None = None
    prepare: Prepare | None = None
    #: for a tool that is not read-only as a whole: which calls only read (the memory
    #: tool's ``view``), judged on the call's raw arguments; the permission modes treat those
    #: calls as read-only (``plan`` runs them, ``ask`` does not ask). Scheduling still
    #: follows ``metadata``.
    read_only_when: Callable[[Mapping[str, Any]], bool] | None = None
    #: what a call would change, for the person asked to approve it: ``(arguments, path)``
    #: (the call's path as the permission check resolved it) -> text, e.g. the diff of a
    #: write or an edit; it must not raise (see :meth:`describe_change`)
    preview: Callable[[Mapping[str, Any], Path], str] | None = None
    #: whether a session gets this tool at all: ``(settings, definition)`` -> bool, asked when
    #: a session's tools are chosen (not when plugins are listed, so ``--list-plugins`` still
    #: shows it); None: always offered. ``view_image`` asks for a vision-capable model.
    is_available: Availability | None = None

    def __attrs_post_init__(self) -> None:
        if not self.name or not all(c.isalnum() or c in "_-" for c in self.name):
            raise ValueError(
                f"tool name {self.name!r} must be non-empty letters, digits, '_' or '-'"
            )

    def available(self, settings: Mapping[str, Any], definition: SessionDefinition) -> bool:
        """:attr:`is_available` for this session; a predicate that fails or answers anything
        but True leaves the tool out (a tool that cannot tell is not offered)."""
        if self.is_available is None:
            return True
        try:
            return self.is_available(settings, definition) is True
        except Exception:
            return False

    def reads_only(self, arguments: Mapping[str, Any]) -> bool:
        """Whether this call changes nothing: the tool is read-only, or ``read_only_when``
        says so for these arguments (a predicate that fails counts as "it may change")."""
        if self.metadata.read_only:
            return True
        if self.read_only_when is None:
            return False
        try:
            return self.read_only_when(arguments) is True
        except Exception:
            return False

    def describe_change(self, arguments: Mapping[str, Any], path: Path) -> str:
        """:attr:`preview` of a call, "" without one; a preview that fails says so instead
        of failing the permission check."""
        if self.preview is None:
            return ""
        try:
            return self.preview(arguments, path)
        except Exception as exc:
            return f"(no preview of the change: {type(exc).__name__}: {exc})"

    def prepare_arguments(self, arguments: Mapping[str, Any]) -> Any:
        """Validate and convert the model's arguments; raises :class:`ToolArgumentError`,
        also for values strict JSON cannot carry (NaN, lone surrogates: see
        :mod:`zpi_host.tools.arguments`) before any tool code sees them."""
        found = argument_problem(arguments)
        if found is not None:
            raise ToolArgumentError(self.name, *found)
        if self.prepare is not None:
            return self.prepare(arguments)
        return _check_object(self.name, self.parameters, arguments)
