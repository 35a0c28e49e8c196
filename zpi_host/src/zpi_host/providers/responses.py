"""The ``openai-responses`` provider: OpenAI's Responses API (``POST /responses``), streamed.

OpenAI recommends it for reasoning models because their reasoning can be carried across
turns. Requests are stateless (``store: false``): the history is sent as ``input`` items each
time, and reasoning items come back with ``encrypted_content``
(``include: ["reasoning.encrypted_content"]``). The completed reasoning items of an answer are
kept, unchanged, in the assistant message's thinking block (its ``signature`` holds them as
JSON behind :data:`REASONING_MARK`; the summary text is the thinking shown), so they are sent
back on the next turn and survive a resume from the transcript. Thinking from other providers
has no such items and is not sent.

Request: the system prompt as ``instructions``; user text and images as ``input_text`` /
``input_image`` parts; tool calls as ``function_call`` items and results as
``function_call_output`` (images of a result follow as one user message, as for Chat
Completions); function tools with ``strict: false``; ``reasoning: {"effort", "summary":
"auto"}`` for models marked ``reasoning``; ``max_output_tokens`` from ``max_output``.
Dynamic options from ``zpi_request_options`` are merged into the body last.
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
    ReasoningDelta,
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
from .fastpath import REASONING, TEXT, DeltaBuffer
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
from .reasoning import openai_effort
from .sse import parse_event

__all__ = ["REASONING_MARK", "ResponsesDecoder", "ResponsesProvider", "reasoning_items",
           "responses_input"]

#: Opens a thinking block's ``signature`` that holds this API's reasoning items (JSON list).
REASONING_MARK = "openai-responses.reasoning:"
INCOMPLETE_REASONS = {"max_output_tokens": "max_tokens", "content_filter": "refusal"}
#: Events that carry nothing the host keeps (the ``.done`` events repeat the deltas).
_IGNORED = frozenset({
    "response.created", "response.in_progress", "response.queued",
    "response.content_part.added", "response.content_part.done", "response.output_text.done",
    "response.refusal.done", "response.function_call_arguments.done",
    "response.reasoning_summary_part.done", "response.reasoning_summary_text.done",
    "response.reasoning_text.done", "response.output_text.annotation.added",
})


class ResponsesProvider(HTTPProvider):
    """One model behind the Responses API (``base_url`` + ``/responses``)."""

    name = "openai-responses"

    def __init__(self, entry: ModelEntry, settings: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(entry, make_streamer(entry, settings, "/responses",
                                              auth={"authorization": "Bearer {key}"},
                                              **kwargs))
        self._wire = InputHistory(encoded=True)
        #: an ``openai`` entry with ``"api": "responses"`` keeps its provider's name, so the
        #: transcript's ``PROVIDER:MODEL`` finds that entry again on resume
        self.name = entry.provider

    def decoder(self) -> ResponsesDecoder:
        return ResponsesDecoder(self.name)

    def frame(self, request: ModelRequest, history: list[Any]) -> dict[str, Any]:
        entry = self.entry
        body: dict[str, Any] = {"model": entry.model}
        if request.system_prompt:
            body["instructions"] = request.system_prompt
        body.update({"input": history, "stream": True, "store": False,
                     "include": ["reasoning.encrypted_content"]})
        if request.tools:
            body["tools"] = [{"type": "function", "name": t.name, "description": t.description,
                              "parameters": dict(t.parameters), "strict": False}
                             for t in request.tools]
        if entry.max_output is not None:
            body["max_output_tokens"] = entry.max_output
        level = reasoning_level(entry, request.reasoning_level)
        if level is not None:
            body["reasoning"] = {"effort": openai_effort(level), "summary": "auto"}
        body.update(request.options)
        return body

    def history(self, request: ModelRequest) -> list[dict[str, Any]]:
        return responses_input(request.messages)

    def encoded_history(self, request: ModelRequest) -> list[bytes]:
        return self._wire.array(self._wire.extend(request.messages))


def responses_input(messages: Any) -> list[dict[str, Any]]:
    """The history as Responses ``input`` items."""
    return InputHistory(encoded=False).extend(messages)


def reasoning_items(thinking: ThinkingContent) -> list[dict[str, Any]]:
    """The reasoning items a thinking block keeps (see module doc); [] for thinking of another
    provider, or a signature that is not such a list."""
    signature = thinking.signature
    if not signature or not signature.startswith(REASONING_MARK):
        return []
    try:
        items = json.loads(signature[len(REASONING_MARK):])
    except ValueError:
        return []
    if not isinstance(items, list):
        return []
    return [i for i in items if isinstance(i, dict) and i.get("type") == "reasoning"]


class InputHistory(WireHistory):
    """The history as input items; images of tool results wait (``pending``) until a message
    that is not a tool result, and go before it as one user message (an item of the
    ``function_call_output`` kind carries text only on every server that speaks the API)."""

    def reset(self) -> None:
        super().reset()
        self.pending: list[dict[str, Any]] = []

    def add(self, message: Message) -> None:
        items, images, tool = _items(message)
        if self.pending and not tool:
            self.done.extend(self.tail())
            self.pending = []
        self.done.extend(map(self.item, items))
        self.pending.extend(images)

    def tail(self) -> list[Any]:
        return [self.item({"role": "user", "content": self.pending})] if self.pending else []


def _items(message: Message) -> tuple[list[dict[str, Any]], list[dict[str, Any]], bool]:
    if isinstance(message, UserMessage):
        if all(isinstance(c, TextContent) for c in message.content):
            return [{"role": "user", "content": text_of(message.content)}], [], False
        return [{"role": "user", "content": _parts(message.content)}], [], False
    if isinstance(message, AssistantMessage):
        items: list[dict[str, Any]] = []
        for c in message.content:
            if isinstance(c, ThinkingContent):
                items.extend(reasoning_items(c))
            elif isinstance(c, TextContent):
                if c.text:
                    items.append({"role": "assistant", "content": c.text})
            else:
                items.append({"type": "function_call", "call_id": c.id, "name": c.name,
                              "arguments": encode(dict(c.arguments))})
        return items, [], False
    if isinstance(message, ToolResultMessage):
        found = images_of(message.content)
        images: list[dict[str, Any]] = []
        if found:
            images.append({"type": "input_text", "text": f"(images from tool "
                                                         f"{message.tool_name}, call "
                                                         f"{message.call_id})"})
            images.extend(_image(i) for i in found)
        output = text_of(message.content) or ("(see the images below)" if found else "")
        return [{"type": "function_call_output", "call_id": message.call_id,
                 "output": output}], images, True
    if isinstance(message, ContextMessage):
        return [{"role": "user", "content": context_text(message)}], [], False
    raise TypeError(f"cannot send a {type(message).__name__} to a responses model")


def _parts(content: tuple[Content, ...]) -> list[dict[str, Any]]:
    return [{"type": "input_text", "text": c.text} if isinstance(c, TextContent) else _image(c)
            for c in content]


def _image(image: ImageContent) -> dict[str, Any]:
    return {"type": "input_image", "image_url": f"data:{image.mime_type};base64,{image.data}"}


class _Call:
    __slots__ = ("arguments", "id", "index", "name")

    def __init__(self, index: int, call_id: str, name: str) -> None:
        self.index, self.id, self.name = index, call_id, name
        self.arguments: list[str] = []


class ResponsesDecoder:
    """Responses API events -> stream events, for one response.

    Tool calls are keyed by ``output_index``; a call ends at its ``output_item.done``, whose
    ``arguments`` are the complete text. Each completed reasoning item is reported as the
    signature of a ReasoningDelta holding every item of the answer so far (the loop keeps the
    last signature of an answer, so it gets them all).
    """

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.out = DeltaBuffer()
        self.calls: dict[int, _Call] = {}
        self.tools = 0
        self.reasoning: list[dict[str, Any]] = []
        self.summaries: set[tuple[Any, Any]] = set()  # (output_index, summary_index) seen
        self.reasoned = False  # reasoning text was reported
        self.done = False

    def feed(self, blocks: list[str]) -> list[StreamEvent]:
        provider = self.provider
        for block in blocks:
            if self.done:
                break
            parsed = parse_event(block, provider)
            if parsed is None:
                continue
            name, text, _ = parsed
            if text == "[DONE]":  # some compatible servers end with it, as Chat Completions
                continue
            try:
                event = json.loads(text)
            except (ValueError, RecursionError) as exc:
                raise ProviderStreamError(provider, f"event {name!r} is not valid JSON "
                                          f"({exc})", data=text) from None
            if not isinstance(event, dict):
                raise ProviderStreamError(provider, f"event {name!r} is not a JSON object",
                                          data=text)
            self._event(event.get("type") or name, event, text)
        return self.out.take()

    def finish(self) -> list[StreamEvent]:
        if not self.done:
            raise ProviderStreamError(self.provider, "the stream ended without "
                                      "response.completed; the answer is incomplete")
        return []

    def _event(self, kind: str, event: dict[str, Any], text: str) -> None:
        out = self.out
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            out.add(TEXT, _string(event.get("delta")))
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            key = (event.get("output_index", 0), event.get("summary_index",
                                                           event.get("content_index", 0)))
            if key not in self.summaries:
                self.summaries.add(key)
                self._reasoning_part()
            out.add(REASONING, _string(event.get("delta")))
        elif kind == "response.function_call_arguments.delta":
            call = self.calls.get(event.get("output_index", -1))
            if call is None:
                raise ProviderStreamError(self.provider, "function call arguments arrived "
                                          "for an output item that is not an open function "
                                          "call", data=text)
            piece = _string(event.get("delta"))
            call.arguments.append(piece)
            out.add(call.index, piece)
        elif kind == "response.output_item.added":
            self._added(event.get("output_index", 0), event.get("item") or {}, text)
        elif kind == "response.output_item.done":
            self._item_done(event.get("output_index", 0), event.get("item") or {})
        elif kind in ("response.completed", "response.incomplete"):
            self._completed(event.get("response") or {})
        elif kind == "response.failed":
            error = (event.get("response") or {}).get("error")
            raise stream_error(self.provider, _error(error if isinstance(error, dict) else {
                "message": "the response failed without an error message"}))
        elif kind == "error":  # flat (code, message), or nested under "error" on older servers
            error = event.get("error")
            raise stream_error(self.provider, _error(error if isinstance(error, dict)
                                                     else event))
        elif kind.startswith("response.reasoning_summary_part."):
            pass  # parts are told apart by summary_index on their deltas
        elif kind not in _IGNORED and not kind.startswith("response."):
            raise ProviderStreamError(self.provider, f"unknown event type {kind!r}; check "
                                      "that base_url points at a Responses API", data=text)

    def _added(self, index: Any, item: Any, text: str) -> None:
        if not isinstance(item, dict) or item.get("type") != "function_call":
            return
        if not item.get("name"):
            raise ProviderStreamError(self.provider, "a function call started without a name",
                                      data=text)
        call = _Call(self.tools, item.get("call_id") or "", item["name"])
        self.tools += 1
        self.calls[index] = call
        self.out.emit(ToolCallStart(call.index, call.id, call.name))
        if item.get("arguments"):
            call.arguments.append(item["arguments"])

    def _item_done(self, index: Any, item: Any) -> None:
        if not isinstance(item, dict):
            return
        if item.get("type") == "reasoning":
            self.reasoning.append(item)
            if not any(seen == index for seen, _ in self.summaries):
                # a server that sends the summary only in the completed item
                for part in item.get("summary") or ():
                    if isinstance(part, dict) and _string(part.get("text")):
                        self._reasoning_part()
                        self.out.add(REASONING, part["text"])
            # all items so far, at once after the reasoning (as Anthropic's signature comes)
            self.out.emit(ReasoningDelta("", REASONING_MARK + encode(self.reasoning)))
        elif item.get("type") == "function_call":
            call = self.calls.pop(index, None)
            if call is None:
                return
            raw = item.get("arguments")
            arguments = raw if isinstance(raw, str) else "".join(call.arguments)
            self.out.emit(ToolCallEnd(call.index, call.id, call.name,
                                      tool_arguments(self.provider, call.name, arguments)))

    def _reasoning_part(self) -> None:
        """A new part of the reasoning summary starts: a blank line after any before it."""
        if self.reasoned:
            self.out.add(REASONING, "\n\n")
        self.reasoned = True

    def _completed(self, response: Mapping[str, Any]) -> None:
        status = response.get("status")
        reason = (response.get("incomplete_details") or {}).get("reason") \
            if status == "incomplete" else None
        if self.calls:
            cut = f"was cut off ({reason})" if reason else "completed"
            raise ProviderStreamError(self.provider, f"the response {cut} while a function "
                                      "call was still open, so the call cannot be used"
                                      + ("; raise the model's max_output" if
                                         reason == "max_output_tokens" else ""))
        self.done = True
        out = self.out
        out.emit(UsageReport(_usage(response.get("usage"))))
        if status == "incomplete":
            cut = reason if isinstance(reason, str) and reason else "max_output_tokens"
            out.emit(Done(INCOMPLETE_REASONS.get(cut, cut)))
        else:
            out.emit(Done("tool_use" if self.tools else "end_turn"))


def _error(error: Mapping[str, Any]) -> dict[str, Any]:
    """This API's error (``code``, ``message``) with its code as the error type."""
    code = error.get("code")
    kind = error.get("type")
    return {"message": error.get("message") or "", "code": code,
            "type": kind if isinstance(kind, str) and kind != "error" else code}


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _usage(raw: Any) -> Usage:
    """``input_tokens`` includes cached tokens, reported input excludes them;
    ``output_tokens`` includes the reasoning tokens (billed as output)."""
    if not isinstance(raw, dict):
        return Usage()
    details = raw.get("input_tokens_details")
    cached = int((details.get("cached_tokens") if isinstance(details, dict) else 0) or 0)
    return Usage(max(int(raw.get("input_tokens") or 0) - cached, 0),
                 int(raw.get("output_tokens") or 0), cached, 0)
