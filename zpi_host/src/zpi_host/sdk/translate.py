"""Session events -> claude-agent-sdk messages, for one session.

:class:`Translator` turns each kernel event into zero or more messages (assistant answers,
tool results as user messages, partial-message stream events, warnings), remembers what the
result needs (tool inputs for ``permission_denials``, time spent waiting for the model), and
builds the ``init`` system message and the ``ResultMessage`` of each input.
"""

from __future__ import annotations

import json
import os
import time
import types
import uuid as uuids
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..agent.events import (
    CompactionEvent,
    Event,
    MessageEnd,
    ReasoningDeltaEvent,
    SystemMessageEvent,
    TaskNotification,
    TaskProgress,
    TaskStarted,
    TextDeltaEvent,
    ToolEnd,
    TurnStart,
    WarningEvent,
)
from ..providers.messages import AssistantMessage as KernelAssistant
from ..providers.messages import TextContent, ThinkingContent, ToolCallContent, Usage
from ..providers.messages import UserMessage as KernelUser
from ..tools.base import ImageContent
from .accounting import Budget, model_usage, usage_dict
from .messages import (
    AssistantMessage,
    ContentBlock,
    Message,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TaskNotificationMessage,
    TaskProgressMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

if TYPE_CHECKING:
    from ..session.agent_session import AgentSession, RunResult

__all__ = ["Translator", "assistant_blocks", "result_subtype", "task_message", "task_updated"]


def assistant_blocks(message: KernelAssistant) -> list[ContentBlock]:
    blocks: list[ContentBlock] = []
    for part in message.content:
        if isinstance(part, TextContent):
            blocks.append(TextBlock(part.text))
        elif isinstance(part, ThinkingContent) and part.redacted is None:  # the SDK has no
            blocks.append(ThinkingBlock(part.thinking, part.signature or ""))  # redacted type
        elif isinstance(part, ToolCallContent):
            blocks.append(ToolUseBlock(part.id, part.name, dict(part.arguments)))
    return blocks


def result_content(content: Any) -> str | list[dict[str, Any]]:
    """A tool result's content: its text, or Anthropic-style blocks when it has images."""
    if all(isinstance(c, TextContent) for c in content):
        return "\n".join(c.text for c in content)
    out: list[dict[str, Any]] = []
    for c in content:
        if isinstance(c, ImageContent):
            out.append({"type": "image", "source": {"type": "base64", "media_type": c.mime_type,
                                                    "data": c.data}})
        else:
            out.append({"type": "text", "text": c.text})
    return out


def task_message(event: Event, session_id: str) -> SystemMessage:
    """A task event as claude-agent-sdk's task message; ``data`` is the raw payload."""
    info = event.info  # type: ignore[attr-defined]
    usage = {"total_tokens": 0, "tool_uses": 0, "duration_ms": info.duration_ms}
    common = {"task_id": info.task_id, "uuid": str(uuids.uuid4()), "session_id": session_id,
              "tool_use_id": info.tool_use_id}
    if isinstance(event, TaskStarted):
        fields: dict[str, Any] = {**common, "description": info.description,
                                  "task_type": "local_bash"}
        cls: type[SystemMessage] = TaskStartedMessage
    elif isinstance(event, TaskProgress):
        fields = {**common, "description": info.description, "usage": usage,
                  "last_tool_name": None}
        cls = TaskProgressMessage
    else:
        fields = {**common, "status": info.status, "output_file": info.output_file,
                  "summary": info.summary, "usage": usage}
        cls = TaskNotificationMessage
    data = {"type": "system", "subtype": event.type, **fields}
    return cls(event.type, data, **fields)


def task_updated(event: TaskNotification, session_id: str) -> TaskUpdatedMessage:
    """A task's end as claude-agent-sdk's ``task_updated``: the raw status (``killed`` for a
    stopped task) and the end time in milliseconds since the epoch."""
    info = event.info
    status = "killed" if info.status == "stopped" else info.status
    patch = {"status": status, "end_time": int(time.time() * 1000)}
    fields: dict[str, Any] = {"task_id": info.task_id, "patch": patch, "status": status,
                              "session_id": session_id, "uuid": str(uuids.uuid4())}
    return TaskUpdatedMessage("task_updated", {"type": "system", "subtype": "task_updated",
                                               **fields}, **fields)


def result_subtype(run: RunResult, budget_exceeded: bool) -> str:
    if budget_exceeded:
        return "error_max_budget_usd"
    if run.stop_reason == "max_turns":
        return "error_max_turns"
    return "error_during_execution" if run.is_error else "success"


def _text_of(content: Any) -> str:
    return "\n".join(c.text for c in content if isinstance(c, TextContent))


def plugin_path(plugin: Any) -> str | None:
    """Where a plugin lives, for the ``init`` message's ``path``: what it says
    (``plugin_path``: a Claude or ZCode folder), else the file of the module that defines it;
    None when neither is known (a plugin made at run time)."""
    declared = getattr(plugin, "plugin_path", None)
    if isinstance(declared, str | os.PathLike):
        return str(declared)
    import sys

    module = plugin if isinstance(plugin, types.ModuleType) else \
        sys.modules.get(type(plugin).__module__)
    where = getattr(module, "__file__", None)
    return str(where) if isinstance(where, str) else None


TERMINAL_REASONS = {"max_turns": "max_turns", "aborted": "aborted_streaming",
                    "interrupted": "aborted_tools", "blocked": "prompt_blocked",
                    "hook_stopped": "hook_stopped", "error": "error"}


class Translator:
    """One session's events as messages; ``partial`` adds ``StreamEvent`` messages."""

    def __init__(self, session: AgentSession, *, partial: bool = False,
                 mcp_servers: Callable[[], list[dict[str, Any]]] = list,
                 echo_prompts: bool = False, forward_subagent_text: bool = False) -> None:
        self.session = session
        self.partial = partial
        #: each input's prompt sent back as a UserMessage with its uuid (at its first turn)
        self.echo_prompts = echo_prompts
        #: a sub-agent's text and thinking forwarded too, not only its tool calls
        self.forward_subagent_text = forward_subagent_text
        self._echoed = ""
        #: the ``mcp_servers`` entries of the ``init`` message, as they are at each input
        self.mcp_servers = mcp_servers
        self.inputs: dict[str, dict[str, Any]] = {}
        #: this input's main-loop usage: the answers of this session (a sub-agent's answers
        #: come from its own session; the session's totals include them)
        self.main_usage = Usage()
        self.api_seconds = 0.0
        #: when the model was last waited for: the input's start, or the last tool's end
        self._waiting_since = time.perf_counter()
        self._block: str | None = None
        self._index = -1

    # ------------------------------------------------------------------ per input

    def start(self) -> None:
        self.main_usage = Usage()
        self.api_seconds = 0.0
        self.inputs.clear()
        self._waiting_since = time.perf_counter()

    def init_message(self, permission_mode: str) -> SystemMessage:
        s = self.session
        resources = s.resources
        from .. import __version__

        return SystemMessage("init", {
            "type": "system", "subtype": "init", "session_id": s.session_id,
            "uuid": str(uuids.uuid4()), "cwd": str(s.cwd), "tools": list(s.tools),
            "mcp_servers": self.mcp_servers(), "model": s.view.model,
            "permissionMode": permission_mode,
            "slash_commands": [c.name for c in resources.commands] if resources else [],
            "skills": [k.name for k in resources.skills] if resources else [],
            "agents": [a.name for a in resources.agents] if resources else [],
            "plugins": [{"name": r.name, "path": plugin_path(r.plugin), "source": r.source,
                         "version": r.version}
                        for r in s.host.records if r.status == "ok"],
            "apiKeySource": "none", "output_style": "default",
            "zpi_host_version": __version__,
        })

    def result(self, run: RunResult, budget: Budget, started: float,
               structured: tuple[Any, list[str]] | None = None) -> ResultMessage:
        """``structured``: (value, problems) of ``output_format``, when it is used."""
        s = self.session
        subtype = result_subtype(run, budget.exceeded)
        if subtype == "success" and structured is not None and structured[1]:
            subtype = "error_max_structured_output_retries"
        error = subtype != "success"
        errors = None
        if subtype == "error_max_structured_output_retries":
            assert structured is not None
            errors = [f"the answer did not match the output schema: {p}" for p in structured[1]]
        elif subtype == "error_max_budget_usd":
            errors = [f"reached the maximum budget of ${budget.limit} for this query "
                      f"(spent ${budget.spent(s):.6f})"]
        elif error:
            errors = [run.error or run.result]
        return ResultMessage(
            subtype=subtype,
            duration_ms=int((time.perf_counter() - started) * 1000),
            duration_api_ms=int(self.api_seconds * 1000),
            is_error=error, num_turns=run.num_turns, session_id=s.session_id,
            stop_reason=None if error else run.stop_reason,
            total_cost_usd=s.total_cost_usd, usage=usage_dict(self.main_usage),
            result=None if error else run.result, model_usage=model_usage(s),
            structured_output=structured[0] if structured is not None and not error else None,
            permission_denials=[{"tool_name": d.tool, "tool_use_id": d.call_id,
                                 "tool_input": self.inputs.get(d.call_id, {})}
                                for d in run.denials],
            errors=errors, uuid=str(uuids.uuid4()),
            api_error_status=getattr(run.failure, "status", None) if error else None,
            terminal_reason=("max_budget" if budget.exceeded else
                             TERMINAL_REASONS.get(run.stop_reason, "completed")),
        )

    # ------------------------------------------------------------------ events

    def translate(self, event: Event) -> list[Message]:
        if isinstance(event, MessageEnd):  # the most frequent first
            return self._message_end(event.message)
        if isinstance(event, ToolEnd):
            self._waiting_since = time.perf_counter()
            result = event.result
            block = ToolResultBlock(result.call_id, result_content(result.content),
                                    result.is_error)
            from .tool_results import claude_tool_result

            structured = claude_tool_result(
                result.tool_name, result.details, _text_of(result.content),
                self.inputs.get(result.call_id, {}), result.is_error)
            return [UserMessage([block], tool_use_result=structured)]
        if isinstance(event, TextDeltaEvent):
            return self._delta("text", "text_delta", event.text)
        if isinstance(event, ReasoningDeltaEvent):
            return self._delta("thinking", "thinking_delta", event.text)
        if isinstance(event, TurnStart):
            self._block, self._index = None, -1
            out = self._echo()
            if self.partial:
                out.append(self._stream({"type": "message_start", "message": {
                    "role": "assistant", "model": self.session.view.model, "content": []}}))
            return out
        if isinstance(event, WarningEvent):
            return [SystemMessage("warning", {"message": event.message})]
        if isinstance(event, SystemMessageEvent):  # a hook's systemMessage
            return [SystemMessage("hook_message", {"message": event.message,
                                                   "source": event.source})]
        if isinstance(event, TaskStarted | TaskProgress | TaskNotification):
            ended = [task_updated(event, self.session.session_id)] \
                if isinstance(event, TaskNotification) else []
            return [*ended, task_message(event, self.session.session_id)]
        if isinstance(event, CompactionEvent):
            r = event.result
            return [SystemMessage("compact_boundary", {"compact_metadata": {
                "trigger": getattr(r, "trigger", "auto"),
                "pre_tokens": getattr(r, "tokens_before", None)}})]
        return []

    def subagent(self, event: Event, parent_tool_use_id: str) -> list[Message]:
        """A sub-agent's event as claude-agent-sdk reports it: its tool calls and their
        results (with ``forward_subagent_text`` its text and thinking too), marked with the
        parent's call that started it."""
        if isinstance(event, MessageEnd):
            calls: list[ContentBlock] = [b for b in assistant_blocks(event.message)
                                         if self.forward_subagent_text
                                         or isinstance(b, ToolUseBlock)]
            if not calls:
                return []
            message = event.message
            return [AssistantMessage(calls, model=f"{message.provider}:{message.model}",
                                     parent_tool_use_id=parent_tool_use_id,
                                     usage=usage_dict(message.usage),
                                     stop_reason=message.stop_reason,
                                     session_id=self.session.session_id)]
        if isinstance(event, ToolEnd):
            result = event.result
            block = ToolResultBlock(result.call_id, result_content(result.content),
                                    result.is_error)
            return [UserMessage([block], parent_tool_use_id=parent_tool_use_id)]
        return []

    def _stream(self, event: dict[str, Any]) -> StreamEvent:
        return StreamEvent(str(uuids.uuid4()), self.session.session_id, event)

    def _delta(self, kind: str, delta: str, text: str) -> list[Message]:
        if not self.partial:
            return []
        out: list[Message] = []
        if self._block != kind:
            out += self._close_block()
            self._index += 1
            self._block = kind
            out.append(self._stream({"type": "content_block_start", "index": self._index,
                                     "content_block": {"type": kind, kind: ""}}))
        out.append(self._stream({"type": "content_block_delta", "index": self._index,
                                 "delta": {"type": delta, kind: text}}))
        return out

    def _echo(self) -> list[Message]:
        """The prompt of the input now running, once, with its transcript uuid."""
        s = self.session
        uuid = s.prompt_uuid
        if not self.echo_prompts or not uuid or uuid == self._echoed:
            return []
        self._echoed = uuid
        text = next((m.text_content for i, m in zip(s.message_ids, s.messages, strict=False)
                     if i == uuid and isinstance(m, KernelUser)), "")
        return [UserMessage(text, uuid=uuid)]

    def _close_block(self) -> list[Message]:
        if self._block is None:
            return []
        self._block = None
        return [self._stream({"type": "content_block_stop", "index": self._index})]

    def _message_end(self, message: KernelAssistant) -> list[Message]:
        s = self.session
        now = time.perf_counter()  # the answer came: the wait since the last tool was the
        self.api_seconds += now - self._waiting_since  # request (and its request hooks)
        self._waiting_since = now
        self.main_usage = self.main_usage + message.usage
        for call in message.tool_calls:  # the model's input, for permission_denials
            self.inputs[call.id] = dict(call.arguments)
        out: list[Message] = []
        if self.partial:
            out += self._close_block()
            for call in message.tool_calls:
                self._index += 1
                out.append(self._stream({"type": "content_block_start", "index": self._index,
                                         "content_block": {"type": "tool_use", "id": call.id,
                                                           "name": call.name, "input": {}}}))
                out.append(self._stream({"type": "content_block_delta", "index": self._index,
                                         "delta": {"type": "input_json_delta",
                                                   "partial_json": json.dumps(
                                                       dict(call.arguments))}}))
                out.append(self._stream({"type": "content_block_stop", "index": self._index}))
            out.append(self._stream({"type": "message_delta",
                                     "delta": {"stop_reason": message.stop_reason},
                                     "usage": usage_dict(message.usage)}))
            out.append(self._stream({"type": "message_stop"}))
        record = s.message_ids[-1] if s.message_ids and s.messages and \
            s.messages[-1] is message else None
        out.append(AssistantMessage(
            assistant_blocks(message), model=f"{message.provider}:{message.model}",
            error=message.error, usage=usage_dict(message.usage), message_id=record,
            stop_reason=message.stop_reason, session_id=s.session_id, uuid=record))
        return out
