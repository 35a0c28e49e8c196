"""The ``anthropic`` provider: the Messages API, streamed.

Request: the system prompt as ``system``; consecutive tool results (and the context that
follows them) merged into one user message of ``tool_result`` blocks, as the API requires
alternating roles; thinking blocks sent back unchanged with their signature (thinking without
a signature, e.g. from another provider, cannot be verified by the API and is left out; so is
thinking that holds OpenAI Responses reasoning items, which sit where the signature goes).
``max_tokens`` is required: the entry's ``max_output``, else 8192. Reasoning, in the form the
model takes (:mod:`.reasoning`): a thinking budget per level (or the ``thinking_budget_tokens``
setting), with ``max_tokens`` raised above it; or adaptive thinking with the level's
``output_config.effort``. Redacted thinking blocks go back as they came.

Prompt caching, as Claude Code uses it (the ``prompt_caching`` setting, on by default):
``cache_control`` breakpoints on the system prompt, the last tool, and the last block of the
two latest user messages (the newest, written to the cache; the one before, whose prefix the
previous request wrote, read back): four in all, the API's maximum.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ..tools.base import Content, TextContent
from .base import (
    Done,
    ModelRequest,
    ProviderStreamError,
    ReasoningDelta,
    StreamEvent,
    ToolCallEnd,
    ToolCallStart,
    UsageReport,
)
from .catalog import CatalogError, ModelEntry
from .convert import (
    THINKING_BUDGETS,
    HTTPProvider,
    WireHistory,
    context_text,
    encode,
    make_streamer,
    reasoning_level,
    tool_arguments,
)
from .fastpath import REASONING, TEXT, DeltaBuffer, DeltaTemplates
from .http import stream_error
from .messages import (
    AssistantMessage,
    ContextMessage,
    Message,
    ThinkingContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .reasoning import EFFORTS, reasoning_kind
from .responses import REASONING_MARK
from .sse import parse_event

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
_MARKERS = ('"text":"', '"thinking":"', '"partial_json":"')
_DELTA_FIELDS = {"text_delta": "text", "thinking_delta": "thinking",
                 "input_json_delta": "partial_json", "signature_delta": "signature"}
#: a cache breakpoint: the prefix up to and including this block is cached (five minutes)
EPHEMERAL = {"type": "ephemeral"}
#: user messages marked with a breakpoint, newest first (system and tools take the other two)
RECENT_BREAKPOINTS = 2
_MARK = ', "cache_control": ' + encode(EPHEMERAL) + "}"
_DELTA_BLOCK = {"text_delta": "text", "thinking_delta": "thinking",
                "signature_delta": "thinking", "input_json_delta": "tool_use"}


class AnthropicProvider(HTTPProvider):
    """One model behind the Messages API (``base_url`` + ``/v1/messages``; a base URL that
    already ends in ``/v1`` gets ``/messages``)."""

    name = "anthropic"

    def __init__(self, entry: ModelEntry, settings: Mapping[str, Any], **kwargs: Any) -> None:
        base = (entry.base_url or "").rstrip("/")
        path = "/messages" if base.endswith("/v1") else "/v1/messages"
        super().__init__(entry, make_streamer(entry, settings, path,
                                              auth={"x-api-key": "{key}"},
                                              headers={"anthropic-version": API_VERSION},
                                              **kwargs))
        self._wire = TurnHistory(encoded=True)
        self.caching = settings.get("prompt_caching", True) is not False
        #: the ``thinking_budget_tokens`` setting: the budget whatever the level
        self.budget: int | None = settings.get("thinking_budget_tokens")
        if self.budget is not None and (type(self.budget) is not int or self.budget < 1024):
            raise CatalogError("thinking_budget_tokens", f"must be a whole number of tokens "
                                                         f">= 1024, got {self.budget!r}")

    def decoder(self) -> MessagesDecoder:
        return MessagesDecoder(self.name)

    def frame(self, request: ModelRequest, history: list[Any]) -> dict[str, Any]:
        entry = self.entry
        max_tokens = entry.max_output or DEFAULT_MAX_TOKENS
        body: dict[str, Any] = {"model": entry.model, "max_tokens": max_tokens,
                                "messages": history, "stream": True}
        if request.system_prompt:
            body["system"] = [{"type": "text", "text": request.system_prompt,
                               "cache_control": EPHEMERAL}] if self.caching \
                else request.system_prompt
        if request.tools:
            tools = [{"name": t.name, "description": t.description,
                      "input_schema": dict(t.parameters)} for t in request.tools]
            if self.caching:
                tools[-1]["cache_control"] = EPHEMERAL
            body["tools"] = tools
        level = reasoning_level(entry, request.reasoning_level)
        if level is not None and reasoning_kind(entry) == "anthropic-adaptive":
            body["thinking"] = {"type": "adaptive"}
            body["output_config"] = {"effort": EFFORTS.get(level, "high")}
            if entry.max_output is None:  # thinking counts in max_tokens: room as for a budget
                body["max_tokens"] = THINKING_BUDGETS.get(level, THINKING_BUDGETS["medium"]) \
                    + DEFAULT_MAX_TOKENS
        elif level is not None:
            budget = self.budget or THINKING_BUDGETS.get(level, THINKING_BUDGETS["medium"])
            if max_tokens <= budget:
                if entry.max_output is not None:  # the model's own limit: shrink the budget
                    budget = max(THINKING_BUDGETS["minimal"], max_tokens - 1024)
                if max_tokens <= budget:
                    max_tokens = budget + DEFAULT_MAX_TOKENS
            body["max_tokens"] = max_tokens
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        body.update(request.options)
        return body

    def history(self, request: ModelRequest) -> list[dict[str, Any]]:
        wire = messages_body(request.messages)
        for i in self._marked(wire, lambda m: m["role"] == "user"):
            blocks = list(wire[i]["content"])
            blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
            wire[i] = {**wire[i], "content": blocks}
        return wire

    def encoded_history(self, request: ModelRequest) -> list[bytes]:
        wire = self._wire.extend(request.messages)  # a new list: the kept texts stay unmarked
        for i in self._marked(wire, lambda m: m.startswith(_USER)):  # the open part holds both
            wire[i] = _mark_last_block(wire[i])
        return self._wire.array(wire)

    def _marked(self, wire: list[Any], is_user: Callable[[Any], bool]) -> list[int]:
        """Indexes of the user messages that get a cache breakpoint (none when caching is
        off)."""
        marked: list[int] = []
        if not self.caching:
            return marked
        for i in range(len(wire) - 1, -1, -1):  # from the end: a turn costs the same late
            if is_user(wire[i]):
                marked.append(i)
                if len(marked) == RECENT_BREAKPOINTS:
                    break
        return marked


_USER = '{"role": ' + encode("user") + ","


def _mark_last_block(message: str) -> str:
    """An encoded wire message (``{"role": ..., "content": [..., {...}]}``) with a cache
    breakpoint on its last block: the block's closing brace is the third-last character."""
    return message[:-3] + _MARK + "]}"


def messages_body(messages: Any) -> list[dict[str, Any]]:
    """The history in Messages shape; consecutive same-role messages are merged."""
    return TurnHistory(encoded=False).extend(messages)


class TurnHistory(WireHistory):
    """The history as alternating user and assistant messages: a message's blocks join the
    open one (``role``, ``blocks``) while the role stays the same; messages without blocks
    are left out."""

    def reset(self) -> None:
        super().reset()
        self.role: str | None = None
        self.blocks: list[Any] = []

    def add(self, message: Message) -> None:
        role, blocks = _blocks(message)
        if not blocks:
            return
        if role != self.role:
            self.done.extend(self.tail())
            self.role, self.blocks = role, []
        self.blocks.extend(map(self.item, blocks))

    def tail(self) -> list[Any]:
        if self.role is None:
            return []
        if not self.encoded:
            return [{"role": self.role, "content": self.blocks}]
        return [f'{{"role": {encode(self.role)}, "content": [{", ".join(self.blocks)}]}}']


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(message, UserMessage):
        return "user", _content(message.content)
    if isinstance(message, ContextMessage):
        return "user", [{"type": "text", "text": context_text(message)}]
    if isinstance(message, ToolResultMessage):
        return "user", [{"type": "tool_result", "tool_use_id": message.call_id,
                         "content": _content(message.content), "is_error": message.is_error}]
    if isinstance(message, AssistantMessage):
        blocks: list[dict[str, Any]] = []
        for c in message.content:
            if isinstance(c, ThinkingContent):
                if c.redacted is not None:
                    blocks.append({"type": "redacted_thinking", "data": c.redacted})
                elif c.signature and not c.signature.startswith(REASONING_MARK):
                    blocks.append({"type": "thinking", "thinking": c.thinking,
                                   "signature": c.signature})
            elif isinstance(c, TextContent):
                if c.text:
                    blocks.append({"type": "text", "text": c.text})
            else:
                blocks.append({"type": "tool_use", "id": c.id, "name": c.name,
                               "input": dict(c.arguments)})
        return "assistant", blocks
    raise TypeError(f"cannot send a {type(message).__name__} to a messages model")


def _content(content: tuple[Content, ...]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": c.text} if isinstance(c, TextContent) else
            {"type": "image", "source": {"type": "base64", "media_type": c.mime_type,
                                         "data": c.data}}
            for c in content if not isinstance(c, TextContent) or c.text]


class _Block:
    __slots__ = ("arguments", "id", "kind", "name", "tool_index")

    def __init__(self, kind: str, tool_index: int = -1, call_id: str = "",
                 name: str = "") -> None:
        self.kind, self.tool_index, self.id, self.name = kind, tool_index, call_id, name
        self.arguments: list[str] = []


class MessagesDecoder:
    """Messages API events -> stream events, for one response."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.templates = DeltaTemplates(_MARKERS)
        self.out = DeltaBuffer()
        self.blocks: dict[int, _Block] = {}
        self.tools = 0
        self.usage = Usage()
        self.stop_reason: str | None = None
        self.done = False
        self.open_delta: Any = None
        self.open_kind = TEXT
        self.open_arguments: list[str] | None = None

    def feed(self, blocks: list[str]) -> list[StreamEvent]:
        match = self.templates.match
        add = self.out.add
        provider = self.provider
        for block in blocks:
            if self.done:
                break
            hit = match(block)
            if hit is not None:
                meaning, value = hit
                if meaning is self.open_delta:  # the block this delta type was checked for
                    add(self.open_kind, value)
                    if self.open_arguments is not None and value:
                        self.open_arguments.append(value)
                else:
                    self._delta(meaning[1], meaning[0], value, meaning)
                continue
            parsed = parse_event(block, provider)
            if parsed is None:
                continue
            name, text, offset = parsed
            try:
                event = json.loads(text)
            except (ValueError, RecursionError) as exc:
                raise ProviderStreamError(provider, f"event {name!r} is not valid JSON "
                                          f"({exc})", data=text) from None
            if not isinstance(event, dict):
                raise ProviderStreamError(provider, f"event {name!r} is not a JSON object",
                                          data=text)
            self._event(name, event, text, block, offset)
        return self.out.take()

    def finish(self) -> list[StreamEvent]:
        if not self.done:
            raise ProviderStreamError(self.provider, "the stream ended without message_stop; "
                                      "the answer is incomplete")
        return []

    def _event(self, name: str, event: dict[str, Any], text: str, block: str,
               offset: int) -> None:
        kind = event.get("type", name)
        out = self.out
        if kind != "content_block_delta":
            self.open_delta = None  # block starts and stops change what is open
        if kind == "content_block_delta":
            delta = event.get("delta") or {}
            dtype = delta.get("type")
            field = _DELTA_FIELDS.get(dtype)  # type: ignore[arg-type]
            if field is None or not isinstance(delta.get(field), str):
                raise ProviderStreamError(self.provider, f"unknown content_block_delta type "
                                          f"{dtype!r}", data=text)
            index = event.get("index", 0)
            meaning = (dtype, index)
            self._delta(index, dtype, delta[field], meaning)  # type: ignore[arg-type]
            if dtype != "signature_delta" and set(delta) == {"type", field}:
                self.templates.learn(block, offset, event, ("delta", field), meaning)
        elif kind == "message_start":
            self._usage((event.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            self._start(event.get("index", 0), event.get("content_block") or {}, text)
        elif kind == "content_block_stop":
            done = self.blocks.pop(event.get("index", 0), None)
            if done is not None and done.kind == "tool_use":
                out.emit(ToolCallEnd(done.tool_index, done.id, done.name, tool_arguments(
                    self.provider, done.name, "".join(done.arguments))))
        elif kind == "message_delta":
            reason = (event.get("delta") or {}).get("stop_reason")
            self.stop_reason = reason or self.stop_reason
            self._usage(event.get("usage") or {})
        elif kind == "message_stop":
            self.done = True
            out.emit(UsageReport(self.usage))
            out.emit(Done(self.stop_reason or "end_turn"))
        elif kind == "error":
            raise stream_error(self.provider, event.get("error") or event)
        elif kind != "ping":
            raise ProviderStreamError(self.provider, f"unknown event type {kind!r}", data=text)

    def _start(self, index: int, block: dict[str, Any], text: str) -> None:
        kind = block.get("type")
        out = self.out
        if kind == "tool_use":
            if not block.get("name"):
                raise ProviderStreamError(self.provider, "a tool_use block without a name",
                                          data=text)
            tool = _Block(kind, self.tools, block.get("id") or f"toolu_{self.tools}",
                          block["name"])
            self.tools += 1
            self.blocks[index] = tool
            out.emit(ToolCallStart(tool.tool_index, tool.id, tool.name))
            if block.get("input"):  # some servers send the whole input here
                tool.arguments.append(json.dumps(block["input"]))
        elif kind == "text":
            self.blocks[index] = _Block(kind)
            out.add(TEXT, block.get("text") or "")
        elif kind == "thinking":
            self.blocks[index] = _Block(kind)
            out.add(REASONING, block.get("thinking") or "")
            if block.get("signature"):
                out.emit(ReasoningDelta("", block["signature"]))
        elif kind == "redacted_thinking":
            if not isinstance(block.get("data"), str):
                raise ProviderStreamError(self.provider, "a redacted_thinking block without "
                                          "its data", data=text)
            self.blocks[index] = _Block(kind)
            out.emit(ReasoningDelta("", redacted=block["data"]))
        else:
            raise ProviderStreamError(self.provider, f"content block type {kind!r} is not "
                                      "supported by this host", data=text)

    def _delta(self, index: int, dtype: str, value: str, meaning: Any) -> None:
        """A delta for block ``index``: checked against the open block, then remembered as
        ``open_delta`` so that the next deltas of the same shape skip the check."""
        block = self.blocks.get(index)
        expected = _DELTA_BLOCK[dtype]
        if block is None or block.kind != expected:
            raise ProviderStreamError(self.provider, f"{dtype} for content block {index}, "
                                      f"which is not an open {expected} block")
        if dtype == "signature_delta":
            if value:
                self.out.emit(ReasoningDelta("", value))
            return
        kind = TEXT if dtype == "text_delta" else REASONING if dtype == "thinking_delta" \
            else block.tool_index
        self.open_delta, self.open_kind = meaning, kind
        self.open_arguments = block.arguments if block.kind == "tool_use" else None
        self.out.add(kind, value)
        if self.open_arguments is not None and value:
            self.open_arguments.append(value)

    def _usage(self, raw: dict[str, Any]) -> None:
        """message_start carries input and cache counts; message_delta the (cumulative)
        output count, and on newer versions updated input counts."""
        u = self.usage
        self.usage = Usage(
            int(raw.get("input_tokens") or u.input_tokens),
            int(raw.get("output_tokens") or u.output_tokens),
            int(raw.get("cache_read_input_tokens") or u.cache_read_tokens),
            int(raw.get("cache_creation_input_tokens") or u.cache_write_tokens),
        )
