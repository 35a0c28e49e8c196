"""In-process MCP servers, claude-agent-sdk style: ``@tool`` and ``create_sdk_mcp_server``.

An SDK program defines async handlers with ``@tool(name, description, input_schema)`` and
groups them with ``create_sdk_mcp_server(name, version, tools)``; the result goes into
``ClaudeAgentOptions.mcp_servers``. Nothing speaks the MCP protocol here: each handler becomes
a plain :class:`~zpi_host.tools.Tool` named ``mcp__<server>__<tool>`` that runs in this
process (:func:`host_tools`), so permissions, hooks, output protection and the transcript
treat it like any other tool. The handler's ``{"content": [...], "is_error": ...}`` becomes a
:class:`~zpi_host.tools.ToolResult` (text and images); a handler that raises gives an error
result the model reads, never a failed session.
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import (
    Annotated,
    Any,
    Generic,
    Literal,
    TypedDict,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

import attrs

from ..errors import UsageError
from ..support.attrs_methods import FrozenFieldsEq
from ..tools.base import ImageContent, TextContent, Tool, ToolMetadata, ToolResult, _check_object

__all__ = ["McpSdkServerConfig", "SdkMcpServer", "SdkMcpTool", "ToolAnnotations",
           "create_sdk_mcp_server", "host_tools", "mcp_tool_name", "tool"]

T = TypeVar("T")
Handler = Callable[[Any], Awaitable[Mapping[str, Any]]]

#: the MCP tool hints, by their snake_case spelling (claude-agent-sdk takes both)
_HINTS = {"read_only_hint": "readOnlyHint", "destructive_hint": "destructiveHint",
          "idempotent_hint": "idempotentHint", "open_world_hint": "openWorldHint",
          "max_result_size_chars": "maxResultSizeChars"}
#: what Claude Code replaces in server and tool names to make ``mcp__<server>__<tool>``
_NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9_-]")


class ToolAnnotations(dict[str, Any]):
    """The MCP tool hints (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``,
    ``openWorldHint``, ``title``), in either spelling (``read_only_hint=True`` is stored as
    ``readOnlyHint``), as claude-agent-sdk's ``ToolAnnotations`` takes them."""

    def __init__(self, **hints: Any) -> None:
        super().__init__({_HINTS.get(key, key): value for key, value in hints.items()})


@attrs.frozen(repr=False, eq=False, slots=False)
class SdkMcpTool(FrozenFieldsEq, Generic[T]):
    """One tool of an in-process server, made by :func:`tool`."""

    name: str
    description: str
    input_schema: type[T] | Mapping[str, Any]
    handler: Handler
    annotations: Any = None


@attrs.frozen(repr=False, eq=False, slots=False)
class SdkMcpServer(FrozenFieldsEq):
    """An in-process server: its name, version and tools (``McpSdkServerConfig.instance``)."""

    name: str
    version: str
    tools: tuple[SdkMcpTool[Any], ...]


class McpSdkServerConfig(TypedDict):
    """What :func:`create_sdk_mcp_server` returns, for ``mcp_servers={"name": config}``."""

    type: Literal["sdk"]
    name: str
    instance: SdkMcpServer


def tool(name: str, description: str, input_schema: type | Mapping[str, Any],
         annotations: Any = None) -> Callable[[Handler], SdkMcpTool[Any]]:
    """Decorate an async ``handler(args) -> {"content": [...], "is_error": bool}`` as a tool
    of an in-process server. ``input_schema``: a JSON Schema object, a ``{name: type}``
    mapping (every name required) or a TypedDict class; ``annotations``: MCP hints as a dict,
    :class:`ToolAnnotations` or ``mcp.types.ToolAnnotations`` (``readOnlyHint`` makes the
    tool read-only here)."""
    if not isinstance(name, str) or not name:
        raise UsageError(f"tool(): the name must be a non-empty string, got {name!r}")
    input_schema_of(name, input_schema)  # a bad schema fails here, not at the first call

    def decorator(handler: Handler) -> SdkMcpTool[Any]:
        if not callable(handler):
            raise UsageError(f"@tool({name!r}) decorates a function, got "
                             f"{type(handler).__name__}")
        return SdkMcpTool(name, description, input_schema, handler, annotations)

    return decorator


def create_sdk_mcp_server(name: str, version: str = "1.0.0",
                          tools: list[SdkMcpTool[Any]] | None = None) -> McpSdkServerConfig:
    """An in-process server of ``tools`` (made by :func:`tool`), for
    ``ClaudeAgentOptions(mcp_servers={"key": server})``; the model sees each tool as
    ``mcp__<key>__<tool name>``."""
    listed = list(tools or [])
    for item in listed:
        if not isinstance(item, SdkMcpTool):
            raise UsageError(f"create_sdk_mcp_server({name!r}): tools must be made with "
                             f"@tool, got {type(item).__name__}")
    names = [t.name for t in listed]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"create_sdk_mcp_server({name!r}): tool(s) {', '.join(twice)} "
                         "given twice; give each tool a distinct name")
    return {"type": "sdk", "name": name, "instance": SdkMcpServer(name, version, tuple(listed))}


# ---------------------------------------------------------------------- schemas


def input_schema_of(tool_name: str, declared: Any) -> dict[str, Any]:
    """The JSON Schema the model sees for ``declared`` (see :func:`tool`)."""
    if isinstance(declared, Mapping):
        if isinstance(declared.get("type"), str) and "properties" in declared:
            return dict(declared)
        properties = {str(key): _json_type(value) for key, value in declared.items()}
        return {"type": "object", "properties": properties, "required": list(properties)}
    if is_typeddict(declared):
        return _typeddict_schema(declared)
    raise UsageError(f"tool {tool_name!r}: input_schema must be a JSON Schema dict, a "
                     f"{{name: type}} dict or a TypedDict class, got {declared!r:.100}")


def _typeddict_schema(declared: Any) -> dict[str, Any]:
    hints = get_type_hints(declared, include_extras=True)
    schema: dict[str, Any] = {"type": "object",
                              "properties": {k: _json_type(v) for k, v in hints.items()}}
    marked = {k: getattr(get_origin(v), "_name", None) for k, v in hints.items()}
    required = sorted(k for k in hints if marked[k] == "Required" or (
        marked[k] != "NotRequired" and k in getattr(declared, "__required_keys__", hints)))
    if required:
        schema["required"] = required
    return schema


_SIMPLE: Mapping[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean",
                              list: "array", dict: "object"}


def _json_type(annotation: Any) -> dict[str, Any]:
    """A Python type as JSON Schema: the simple types, ``list[X]``, ``X | None`` and unions,
    nested TypedDicts, ``Annotated[X, "description"]``; anything else is a string, as in
    claude-agent-sdk."""
    origin = get_origin(annotation)
    if getattr(origin, "_name", None) in ("NotRequired", "Required", "ReadOnly"):
        return _json_type(get_args(annotation)[0])
    if origin is Annotated:
        base, *extras = get_args(annotation)
        schema = _json_type(base)
        text = next((e for e in extras if isinstance(e, str)), None)
        return {**schema, "description": text} if text is not None else schema
    if annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}
    if origin is Union or isinstance(annotation, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        if len(options) == 1:
            return _json_type(options[0])
        return {"anyOf": [_json_type(a) for a in options]}
    if origin is list:
        args = get_args(annotation)
        return {"type": "array", "items": _json_type(args[0])} if args else {"type": "array"}
    if origin is dict:
        return {"type": "object"}
    if is_typeddict(annotation):
        return _typeddict_schema(annotation)
    return {"type": "string"}


# ---------------------------------------------------------------------- host tools


def mcp_tool_name(server: str, tool_name: str) -> str:
    """``mcp__<server>__<tool>``, with what a tool name cannot hold replaced by ``_`` as
    Claude Code does."""
    return f"mcp__{_NOT_IN_NAMES.sub('_', server)}__{_NOT_IN_NAMES.sub('_', tool_name)}"


def hint(annotations: Any, wire: str) -> Any:
    """One MCP hint of ``annotations`` (a mapping or an object, either spelling), or None."""
    if annotations is None:
        return None
    snake = next((k for k, v in _HINTS.items() if v == wire), wire)
    if isinstance(annotations, Mapping):
        return annotations.get(wire, annotations.get(snake))
    value = getattr(annotations, wire, None)
    return value if value is not None else getattr(annotations, snake, None)


def host_tools(server: str, instance: SdkMcpServer) -> list[Tool]:
    """The server's tools as this host's tools, under the server key ``server``."""
    return [_host_tool(server, t) for t in instance.tools]


def _host_tool(server: str, declared: SdkMcpTool[Any]) -> Tool:
    name = mcp_tool_name(server, declared.name)
    schema = input_schema_of(declared.name, declared.input_schema)
    read_only = hint(declared.annotations, "readOnlyHint") is True
    metadata = ToolMetadata(read_only=read_only, concurrency_safe=read_only,
                            side_effects=not read_only)

    def prepare(arguments: Mapping[str, Any]) -> Any:
        return _check_object(name, schema, arguments)

    async def execute(args: Any, ctx: Any) -> ToolResult:
        try:
            answer: Any = declared.handler(dict(args))
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:  # the model reads what went wrong; the session goes on
            return ToolResult.error(f"{name} failed: {type(exc).__name__}: {exc}")
        return tool_result(name, answer)

    return Tool(name, declared.description or "", schema, execute, metadata, prepare=prepare)


def tool_result(name: str, answer: Any) -> ToolResult:
    """A handler's ``{"content": [...], "is_error": bool}`` as a tool result; another shape
    is an error result that says what was expected."""
    content = answer.get("content", []) if isinstance(answer, Mapping) else None
    if not isinstance(content, Sequence) or isinstance(content, str):
        return ToolResult.error(f"{name} returned {answer!r:.200}; a tool handler returns "
                                "{'content': [{'type': 'text', 'text': ...}], 'is_error': "
                                "False}")
    assert isinstance(answer, Mapping)
    blocks: list[TextContent | ImageContent] = []
    for index, block in enumerate(content):
        converted = _content(block)
        if converted is None:
            return ToolResult.error(f"{name} returned an unusable content[{index}]: "
                                    f"{block!r:.200}; text blocks need 'text', image blocks "
                                    "'data' (base64) and 'mimeType'")
        blocks.append(converted)
    is_error = bool(answer.get("is_error", answer.get("isError", False)))
    return ToolResult(tuple(blocks), is_error)


def _content(block: Any) -> TextContent | ImageContent | None:
    """One MCP content block: text and images as they are, resource links and text resources
    as text (what Claude Code shows of them); other kinds as a note saying what was left
    out. None: a block of a known kind without its fields."""
    if not isinstance(block, Mapping):
        return None
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return TextContent(text) if isinstance(text, str) else None
    if kind == "image":
        data, mime = block.get("data"), block.get("mimeType", block.get("mime_type"))
        if isinstance(data, str) and isinstance(mime, str):
            return ImageContent(data, mime)
        return None
    if kind == "resource_link":
        parts = [str(block[k]) for k in ("name", "uri", "description") if block.get(k)]
        return TextContent("\n".join(parts) or "Resource link")
    if kind == "resource":
        resource = block.get("resource")
        if isinstance(resource, Mapping) and isinstance(resource.get("text"), str):
            return TextContent(resource["text"])
        uri = resource.get("uri") if isinstance(resource, Mapping) else None
        return TextContent(f"[a binary resource{f' ({uri})' if uri else ''} was left out: "
                           "this host passes only text resources to the model]")
    return TextContent(f"[content of type {kind!r} was left out: this host passes text, "
                       "images and text resources to the model]")
