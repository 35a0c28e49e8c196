"""The ``openai`` provider: the Chat Completions API, streamed (OpenAI and the many servers
that speak it: DeepSeek, vLLM, llama.cpp, Ollama, OpenRouter, ...).

Request: the system prompt as a system message, tool results as ``role: tool`` messages,
context as user messages, images as data URLs; thinking is not sent back (the format has no
place for it). ``reasoning_effort`` is sent for models marked ``reasoning``; the token limit
is ``max_completion_tokens`` for those and ``max_tokens`` otherwise (older servers know only
the latter). Dynamic options from ``zpi_request_options`` are merged into the body last.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..tools.base import Content, ImageContent, TextContent
from .base import (
    Done,
    ModelRequest,
    ProviderStreamError,
    StreamEvent,
    ToolCallEnd,
    ToolCallStart,
    UsageReport,
)
from .catalog import ModelEntry
from .convert import (
    HTTPProvider,
    WireHistory,
    context_text,
    encode,
    images_of,
    make_streamer,
    reasoning_level,
    text_of,
    tool_arguments,
)
from .fastpath import REASONING, TEXT, DeltaBuffer, DeltaTemplates
from .http import stream_error
from .messages import (
    AssistantMessage,
    ContextMessage,
    Message,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .reasoning import openai_effort
from .sse import parse_event

STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use",
                "length": "max_tokens"}
_MARKERS = ('"content":"', '"reasoning_content":"', '"arguments":"')
_ARGS = "args"


class OpenAIProvider(HTTPProvider):
    """One model behind a Chat Completions endpoint (``base_url`` + ``/chat/completions``)."""

    name = "openai"

    def __init__(self, entry: ModelEntry, settings: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(entry, make_streamer(entry, settings, "/chat/completions",
                                              auth={"authorization": "Bearer {key}"},
                                              **kwargs))
        self._wire = ChatHistory(encoded=True)

    def decoder(self) -> ChatDecoder:
        return ChatDecoder(self.name)

    def frame(self, request: ModelRequest, history: list[Any]) -> dict[str, Any]:
        entry = self.entry
        body: dict[str, Any] = {
            "model": entry.model,
            "messages": history,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = [{"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": dict(t.parameters),
            }} for t in request.tools]
        if entry.max_output is not None:
            key = "max_completion_tokens" if entry.reasoning else "max_tokens"
            body[key] = entry.max_output
        level = reasoning_level(entry, request.reasoning_level)
        if level is not None:
            body["reasoning_effort"] = openai_effort(level)
        body.update(request.options)
        return body

    def history(self, request: ModelRequest) -> list[dict[str, Any]]:
        return chat_messages(request.system_prompt, request.messages)

    def encoded_history(self, request: ModelRequest) -> list[bytes]:
        system = [encode(_system(request.system_prompt))] if request.system_prompt else []
        return self._wire.array(self._wire.extend(request.messages), system)


#: One history message on the wire: its chat messages, the images its tool result sends in
#: the user message that follows the tool messages, and whether it is a tool result.
_Form = tuple[list[dict[str, Any]], list[dict[str, Any]], bool]


def chat_messages(system_prompt: str, messages: Any) -> list[dict[str, Any]]:
    """The history in Chat Completions shape. Images from tool results follow the tool
    messages as one user message (tool messages carry text only)."""
    wire = ChatHistory(encoded=False).extend(messages)
    return [_system(system_prompt), *wire] if system_prompt else wire


def _system(prompt: str) -> dict[str, Any]:
    return {"role": "system", "content": prompt}


class ChatHistory(WireHistory):
    """The history as chat messages; images of tool results wait (``pending``) until a
    message that is not a tool result, and go before it as one user message."""

    def reset(self) -> None:
        super().reset()
        self.pending: list[dict[str, Any]] = []

    def add(self, message: Message) -> None:
        wires, images, tool = _message(message)
        if self.pending and not tool:
            self.done.extend(self.tail())
            self.pending = []
        self.done.extend(map(self.item, wires))
        self.pending.extend(images)

    def tail(self) -> list[Any]:
        return [self.item({"role": "user", "content": self.pending})] if self.pending else []


def _message(message: Message) -> _Form:
    if isinstance(message, UserMessage):
        if all(isinstance(c, TextContent) for c in message.content):
            return [{"role": "user", "content": text_of(message.content)}], [], False
        return [{"role": "user", "content": _parts(message.content)}], [], False
    if isinstance(message, AssistantMessage):
        out: dict[str, Any] = {"role": "assistant", "content": message.text or None}
        if message.tool_calls:
            out["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                "name": c.name, "arguments": encode(dict(c.arguments)),
            }} for c in message.tool_calls]
        elif out["content"] is None:
            out["content"] = ""
        return [out], [], False
    if isinstance(message, ToolResultMessage):
        found = images_of(message.content)
        images: list[dict[str, Any]] = []
        if found:
            images.append({"type": "text", "text": f"(images from tool {message.tool_name}, "
                                                   f"call {message.call_id})"})
            images.extend(_image(i) for i in found)
        return [{"role": "tool", "tool_call_id": message.call_id,
                 "content": text_of(message.content) or ("(see the images below)" if found
                                                         else "")}], images, True
    if isinstance(message, ContextMessage):
        return [{"role": "user", "content": context_text(message)}], [], False
    raise TypeError(f"cannot send a {type(message).__name__} to a chat model")


def _parts(content: tuple[Content, ...]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": c.text} if isinstance(c, TextContent) else _image(c)
            for c in content]


def _image(image: ImageContent) -> dict[str, Any]:
    return {"type": "image_url",
            "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}}


class _Call:
    __slots__ = ("arguments", "id", "index", "name")

    def __init__(self, index: int, call_id: str, name: str) -> None:
        self.index, self.id, self.name = index, call_id, name
        self.arguments: list[str] = []


class ChatDecoder:
    """Chat Completions chunks -> stream events, for one response."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.templates = DeltaTemplates(_MARKERS)
        self.out = DeltaBuffer()
        self.calls: dict[int, _Call] = {}  # by the wire's tool-call index
        self.ended: list[_Call] = []
        self.finish_reason: str | None = None
        self.done = False

    def feed(self, blocks: list[str]) -> list[StreamEvent]:
        out = self.out
        add = out.add
        match = self.templates.match
        provider = self.provider
        for block in blocks:
            if self.done:
                break
            hit = match(block)
            if hit is not None:
                kind, value = hit
                if type(kind) is int:
                    add(kind, value)
                else:
                    self._arguments(kind[1], value)
                continue
            event = parse_event(block, provider)
            if event is None:
                continue
            text = event[1]
            if text == "[DONE]":
                self.done = True
                reason = self.finish_reason or ("tool_calls" if self.calls else "stop")
                self._close_calls()
                out.emit(Done(STOP_REASONS.get(reason, reason)))
                break
            try:
                chunk = json.loads(text)
            except (ValueError, RecursionError) as exc:
                raise ProviderStreamError(provider, f"an event is not valid JSON ({exc})",
                                          data=text) from None
            self._chunk(chunk, text, block, event[2])
        return out.take()

    def finish(self) -> list[StreamEvent]:
        if self.done:
            return []
        if self.finish_reason is None:
            raise ProviderStreamError(self.provider, "the stream ended without a finish_reason "
                                      "or [DONE]; the answer is incomplete")
        self.done = True  # some servers omit [DONE]; a finish_reason is enough
        self._close_calls()
        self.out.emit(Done(STOP_REASONS.get(self.finish_reason, self.finish_reason)))
        return self.out.take()

    def _chunk(self, chunk: Any, text: str, block: str, offset: int) -> None:
        if not isinstance(chunk, dict):
            raise ProviderStreamError(self.provider, "an event is not a JSON object", data=text)
        if chunk.get("error"):
            raise stream_error(self.provider, chunk["error"])
        effects = 0
        learnable: tuple[Any, tuple[Any, ...]] | None = None
        choices = chunk.get("choices") or ()
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if content:
                self.out.add(TEXT, content)
                effects += 1
                learnable = TEXT, ("choices", 0, "delta", "content")
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning:
                self.out.add(REASONING, reasoning)
                effects += 1
                learnable = REASONING, ("choices", 0, "delta", "reasoning_content")
            for piece in delta.get("tool_calls") or ():
                effects += 1
                learnable = self._tool_piece(piece)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
                self._close_calls()
                effects += 1
        usage = chunk.get("usage")
        if usage:
            self.out.emit(UsageReport(_usage(usage)))
            effects += 1
        if learnable is not None and effects == 1 and len(choices) == 1:
            self.templates.learn(block, offset, chunk, learnable[1], learnable[0])

    def _tool_piece(self, piece: Any) -> Any:
        """One entry of ``delta.tool_calls``; returns (meaning, path) when it is a bare
        arguments piece (learnable)."""
        if not isinstance(piece, dict):
            raise ProviderStreamError(self.provider, "a tool_calls entry is not an object",
                                      data=json.dumps(piece))
        wire = piece.get("index", 0)
        function = piece.get("function") or {}
        call = self.calls.get(wire)
        if call is None or (piece.get("id") and piece["id"] != call.id):
            name = function.get("name")
            if not name:
                raise ProviderStreamError(self.provider, "a tool call started without a "
                                          "function name", data=json.dumps(piece))
            if call is not None:
                self.ended.append(call)
            index = len(self.ended) + len(self.calls) - (call is not None)
            call = _Call(index, piece.get("id") or f"call_{index}", name)
            self.calls[wire] = call
            self.out.emit(ToolCallStart(call.index, call.id, call.name))
        arguments = function.get("arguments")
        if arguments:
            self._arguments(wire, arguments)
            if set(piece) <= {"index", "function"} and set(function) == {"arguments"}:
                return (_ARGS, wire), ("choices", 0, "delta", "tool_calls", 0, "function",
                                       "arguments")
        return None

    def _arguments(self, wire: int, piece: str) -> None:
        call = self.calls.get(wire)
        if call is None:
            raise ProviderStreamError(self.provider, f"arguments for tool call {wire} arrived "
                                      "before the call started", data=piece)
        call.arguments.append(piece)
        self.out.add(call.index, piece)

    def _close_calls(self) -> None:
        calls = sorted([*self.ended, *self.calls.values()], key=lambda c: c.index)
        self.ended, self.calls = [], {}
        for c in calls:
            self.out.emit(ToolCallEnd(c.index, c.id, c.name, tool_arguments(
                self.provider, c.name, "".join(c.arguments))))


def _usage(raw: Any) -> Usage:
    """``prompt_tokens`` includes cached tokens; reported input excludes them."""
    if not isinstance(raw, dict):
        return Usage()
    prompt = int(raw.get("prompt_tokens") or 0)
    details = raw.get("prompt_tokens_details") or {}
    cached = int((details.get("cached_tokens") if isinstance(details, dict) else 0)
                 or raw.get("prompt_cache_hit_tokens") or 0)  # DeepSeek's spelling
    return Usage(max(prompt - cached, 0), int(raw.get("completion_tokens") or 0), cached, 0)
