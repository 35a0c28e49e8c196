"""Compaction: when the history no longer fits, summarise its older part and keep the rest.

Triggers: the last request's input (as the provider reported it) exceeds the model's context
window minus a reserve, or the provider (or a ``zpi_before_request`` guard) raises
``ContextOverflowError`` (the loop then compacts once and retries the request once), or
``session.compact()``. ``zpi_before_compact`` may cancel or supply the summary; otherwise the
session's model writes it. The most recent part of the history (about
``compaction.keep_recent_tokens``) is kept as it is, and the cut never separates a tool call
from its result. The compaction record keeps the summary, the first kept record, tokens
before and after, and the files read and modified; the transcript keeps every original record:
compaction changes what the model sees, not the history.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from ..providers.messages import (
    AssistantMessage,
    ContextMessage,
    Message,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from ..support.attrs_methods import FrozenFieldsEq
from .compaction_settings import (
    DEFAULT_KEEP_RECENT_TOKENS,
    DEFAULT_RESERVE_TOKENS,
    CompactionError,
    CompactionSettings,
    over_threshold,
)
from .context_usage import estimate_message, estimate_messages

if TYPE_CHECKING:
    from .state import SessionState

__all__ = ["DEFAULT_KEEP_RECENT_TOKENS", "DEFAULT_RESERVE_TOKENS", "CompactionError",
           "CompactionPreparation", "CompactionResult", "CompactionSettings", "compact",
           "find_cut", "over_threshold", "restart_context", "touched_files", "transcript_text"]

#: Per message, how much of a tool result or text goes into the summarisation request.
EXCERPT_CHARS = 2_000
READ_TOOLS = ("read",)
WRITE_TOOLS = ("write", "edit")

SUMMARY_SYSTEM_PROMPT = """\
You summarise a coding agent's conversation so the agent can continue the task without it. \
Write a concise summary: the user's goals and constraints, decisions made, what was done \
(files read and changed, commands run and their outcomes), errors met, and what remains to \
do. Keep exact names, paths and values that matter. Do not invent anything."""


@attrs.frozen(repr=False, eq=False, slots=False)
class CompactionPreparation(FrozenFieldsEq):
    """What ``zpi_before_compact`` sees."""

    trigger: str  # "auto" | "manual"
    reason: str  # "threshold" | "overflow" | "manual"
    to_summarize: tuple[Message, ...]
    kept: tuple[Message, ...]
    first_kept_uuid: str | None
    tokens_before: int
    instructions: str | None = None


@attrs.frozen(repr=False, eq=False, slots=False)
class CompactionResult(FrozenFieldsEq):
    """What ``zpi_after_compact`` sees and ``session.compact()`` returns."""

    summary: str
    first_kept_uuid: str | None
    tokens_before: int
    tokens_after: int
    read_files: tuple[str, ...]
    modified_files: tuple[str, ...]
    trigger: str
    reason: str
    summarized_by: str  # "model" or the plugin that supplied the summary


def find_cut(messages: Sequence[Message], keep_tokens: int) -> int:
    """Index of the first kept message: about ``keep_tokens`` of the most recent messages are
    kept, and the kept part never starts with a tool result (its call would be summarised
    away). 0 means there is nothing to summarise."""
    kept = 0
    target = len(messages)
    for index in range(len(messages) - 1, -1, -1):
        kept += estimate_message(messages[index]) or 1_000
        if kept > keep_tokens:
            break
        target = index
    for index in range(target, len(messages)):  # keep at most about keep_tokens
        if index > 0 and not isinstance(messages[index], ToolResultMessage):
            return index
    for index in range(min(target, len(messages)) - 1, 0, -1):  # else keep a little more
        if not isinstance(messages[index], ToolResultMessage):
            return index
    return 0


def touched_files(messages: Sequence[Message]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Paths the summarised part read and modified, in first-seen order."""
    read: dict[str, None] = {}
    modified: dict[str, None] = {}
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                path = call.arguments.get("path")
                if not isinstance(path, str):
                    continue
                if call.name in READ_TOOLS:
                    read[path] = None
                elif call.name in WRITE_TOOLS:
                    modified[path] = None
    return tuple(read), tuple(modified)


def transcript_text(messages: Sequence[Message]) -> str:
    """The summarised part as plain text for the summarising model (long parts cut)."""

    def cut(text: str) -> str:
        return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + " […]"

    lines = []
    for message in messages:
        if isinstance(message, UserMessage):
            lines.append(f"[user]\n{cut(message.text_content)}")
        elif isinstance(message, ContextMessage):
            lines.append(f"[context from {message.source}]\n{cut(message.text)}")
        elif isinstance(message, AssistantMessage):
            calls = "".join(f"\n-> {c.name}({cut(json.dumps(c.arguments))})"
                            for c in message.tool_calls)
            lines.append(f"[assistant]\n{cut(message.text)}{calls}")
        else:
            text = "\n".join(c.text for c in message.content if isinstance(c, TextContent))
            status = " (error)" if message.is_error else ""
            lines.append(f"[result of {message.tool_name}{status}]\n{cut(text)}")
    return "\n\n".join(lines)


async def summarise_with_model(session: SessionState, preparation: CompactionPreparation) -> str:
    """Ask the session's model for the summary (no tools); its usage counts like any turn's."""
    from ..providers.base import ModelRequest, TextDelta, UsageReport

    task = ("Summarise this conversation so far:\n\n" + transcript_text(preparation.to_summarize))
    if preparation.instructions:
        task += f"\n\nAdditional instructions for the summary: {preparation.instructions}"
    request = ModelRequest(model=session.provider.model, system_prompt=SUMMARY_SYSTEM_PROMPT,
                           messages=(UserMessage.text(task),))
    parts: list[str] = []
    async with session.spend.request() as spend:
        async for event in session.provider.stream(request):
            if isinstance(event, TextDelta):
                parts.append(event.text)
            elif isinstance(event, UsageReport):
                spend.add(session.record_usage(event.usage))
    summary = "".join(parts).strip()
    if not summary:
        raise CompactionError("the model returned an empty summary; the history was not "
                              "compacted")
    return summary


async def compact(
    session: SessionState, *, trigger: str, reason: str, instructions: str | None = None,
) -> CompactionResult | None:
    """Compact the session's history. Returns None when a plugin cancelled it or there is
    nothing to summarise; raises CompactionError when it failed."""
    from ..transcript.history import summary_context
    from .events import CompactionEvent

    config = CompactionSettings.from_settings(session.settings)
    messages = session.messages
    cut = find_cut(messages, config.keep_recent_tokens)
    if cut == 0:
        return None
    tokens_before = _estimate(messages)
    preparation = CompactionPreparation(
        trigger=trigger, reason=reason, to_summarize=tuple(messages[:cut]),
        kept=tuple(messages[cut:]), first_kept_uuid=session.message_ids[cut],
        tokens_before=tokens_before, instructions=instructions)
    decision = await session.host.hooks.before_compact(session.view, preparation)
    if decision.cancel:
        session.warnings.append("compaction was cancelled by a plugin: "
                                f"{decision.reason or 'no reason given'}")
        return None
    if decision.summary is not None:
        summary, by = decision.summary, decision.summary_from or "plugin"
    else:
        summary, by = await summarise_with_model(session, preparation), "model"
    read, modified = touched_files(preparation.to_summarize)
    kept_ids = session.message_ids[cut:]
    kept = list(messages[cut:])
    summary_msg = summary_context(summary, read, modified)
    tokens_after = _estimate([summary_msg, *kept])
    from ..transcript.offloop import commit

    record = await commit(session.store, session.store.append_compaction, summary,
                          preparation.first_kept_uuid, tokens_before, tokens_after, read,
                          modified)
    session.replace_context([summary_msg, *kept], [record.uuid, *kept_ids])
    result = CompactionResult(summary, preparation.first_kept_uuid, tokens_before, tokens_after,
                              read, modified, trigger, reason, by)
    await session.host.hooks.after_compact(session.view, result)
    for context in await session.host.hooks.session_start(session.view, "compact"):
        await session.commit_message(ContextMessage(context.value, context.plugin))
    if session.wants_events:
        await session.emit(CompactionEvent(result))
    return result


def _estimate(messages: Sequence[Message]) -> int:
    total = estimate_messages(messages)
    if total is not None:
        return total
    return sum(estimate_message(m) or 1_000 for m in messages)


def restart_context(session: SessionState, summary: str, break_point: str, source: str,
                    migration: str | None = None) -> str:
    """Replace the whole context (a hand-off's migration): a compaction record with no kept
    part holds ``summary`` and the files read and modified, then the ``break_point`` context
    message follows it, so a resumed session sees the same. ``migration`` (``omit``,
    ``prune``) is recorded for the people's history. Returns the record's uuid."""
    from ..transcript.history import summary_context

    messages = session.messages
    read, modified = touched_files(messages)
    summary_msg = summary_context(summary, read, modified)
    record = session.store.append_compaction(summary, None, _estimate(messages),
                                             _estimate([summary_msg]), read, modified,
                                             migration=migration)
    session.replace_context([summary_msg], [record.uuid])
    session.add_message(ContextMessage(break_point, source))
    return record.uuid
