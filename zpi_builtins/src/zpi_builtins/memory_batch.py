"""Memory batches: at session end, one side request proposes updates to the memories.

When ``plugins.builtins.memory.batch`` is on, a session that had an exchange asks the batch
model (purpose ``"memory"``; a scripted model only when its script holds such a turn) for a
JSON list of updates (add, replace, remove), given the conversation and the memories as the
session knows them. Each entry is validated; the valid ones are applied together under the
memory locks by :func:`.memory_store.apply_updates`, which refuses any update to a memory
that changed on disk since the session read it (a user's edit is kept, never overwritten).
The outcome is a ``custom`` record of namespace ``zpi.memory`` in the transcript; what was
refused or failed is also a warning and a log line.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from zpi_host.errors import ZpiError
from zpi_host.fs.files import FileCommitError
from zpi_host.providers.messages import AssistantMessage, UserMessage

from .memory_store import (
    Known,
    Memory,
    MemoryDir,
    MemoryInputError,
    MemoryPathError,
    Outcome,
    Update,
    apply_updates,
)
from .runtime import BuiltinPluginRuntime

log = logging.getLogger("zpi_builtins")

PURPOSE = "memory"
NAMESPACE = "zpi.memory"
MAX_UPDATES = 20
EXCERPT_CHARS = 12_000
MEMORIES_CHARS = 12_000
MAX_ANSWER_TOKENS = 4096
SYSTEM = """\
You maintain the long-term memories of a coding agent: short Markdown notes, each with a \
name (lowercase letters, digits, '-', '_'), a one-line description and a scope ("user": the \
user's preferences, for every project; "project": facts about this project). Read the \
conversation and the current memories, and propose only changes worth keeping for later \
sessions: stable facts, preferences, commands, decisions. Never store credentials or the \
state of the task at hand. Answer with a JSON list and nothing else; [] when nothing should \
change. Each entry is one of:
{"action": "add", "scope": "project", "name": "...", "description": "...", "content": "..."}
{"action": "replace", "scope": "user", "name": "...", "description": "...", "content": "..."}
{"action": "remove", "scope": "project", "name": "..."}"""
_FENCE = re.compile(r"\A```[a-zA-Z]*\n(.*)\n```\Z", re.DOTALL)


class BatchService(Protocol):
    """What a batch uses of the session's :class:`.memory.MemoryService` (which imports this
    module, so this one names it by shape)."""

    @property
    def runtime(self) -> BuiltinPluginRuntime: ...
    @property
    def settings(self) -> Mapping[str, Any]: ...
    @property
    def seen(self) -> Mapping[tuple[str, str], Memory]: ...
    @property
    def known(self) -> Known: ...
    @property
    def dirs(self) -> Mapping[str, MemoryDir]: ...
    def settle(self, outcome: Outcome) -> None: ...


class BatchAnswerError(ZpiError):
    """The batch model's answer is not a JSON list of updates."""


def _text_of(message: Any) -> str:
    return "".join(getattr(block, "text", "") for block in message.content
                   if getattr(block, "type", "") == "text")


def conversation_excerpt(messages: Sequence[Any]) -> str | None:
    """The user's and the assistant's words, the latest ``EXCERPT_CHARS`` characters; None
    without an exchange."""
    parts = []
    for message in messages:
        if isinstance(message, UserMessage | AssistantMessage):
            text = _text_of(message).strip()
            if text:
                who = "User" if isinstance(message, UserMessage) else "Assistant"
                parts.append(f"{who}: {text}")
    if not any(p.startswith("User:") for p in parts) or not any(
            p.startswith("Assistant:") for p in parts):
        return None
    text = "\n\n".join(parts)
    return text if len(text) <= EXCERPT_CHARS else "[...]\n" + text[-EXCERPT_CHARS:]


def memories_text(seen: Mapping[tuple[str, str], Any]) -> str:
    """The memories as the session knows them, bounded (the longest are cut first)."""
    if not seen:
        return "(no memories yet)"
    blocks = [f"## [{m.scope}] {m.name}: {m.description}\n{m.content}"
              for _key, m in sorted(seen.items())]
    share = max(200, MEMORIES_CHARS // len(blocks))
    return "\n\n".join(b if len(b) <= share else b[:share] + "\n[... cut]" for b in blocks)


def parse_answer(text: str) -> list[Any]:
    """The answer as a list (one code fence around it allowed); BatchAnswerError else."""
    text = text.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BatchAnswerError(f"the memory batch answer is not JSON ({exc.msg} at line "
                               f"{exc.lineno}, column {exc.colno}); nothing was changed") from exc
    if not isinstance(value, list):
        raise BatchAnswerError(f"the memory batch answer must be a JSON list of updates, got "
                               f"{type(value).__name__}; nothing was changed")
    return value


def validate(entries: Sequence[Any]) -> tuple[list[Update], list[tuple[Any, str]]]:
    """The valid updates (at most ``MAX_UPDATES``) and each invalid entry with the reason."""
    updates: list[Update] = []
    invalid: list[tuple[Any, str]] = []
    for i, entry in enumerate(entries):
        if len(updates) >= MAX_UPDATES:
            invalid.append((entry, f"more than {MAX_UPDATES} updates in one batch"))
            continue
        try:
            updates.append(Update.parse(entry))
        except MemoryInputError as exc:
            invalid.append((entry, f"entry {i}: {exc}"))
    return updates, invalid


def _describe(entry: Any) -> dict[str, Any]:
    if isinstance(entry, Update):
        return {"action": entry.action, "scope": entry.scope, "name": entry.name}
    if isinstance(entry, Mapping):
        return {k: entry.get(k) for k in ("action", "scope", "name") if isinstance(
            entry.get(k), str | int | float | bool)}
    return {"entry": repr(entry)[:80]}


async def run_batch(service: BatchService) -> None:
    """Ask for the batch and apply it; every failure is reported, none is raised."""
    import asyncio

    import anyio

    runtime = service.runtime
    session, ports = runtime.session, runtime.ports
    model = service.settings["batch_model"]
    excerpt = conversation_excerpt(session.messages)
    if excerpt is None or not ports.model.can_answer(PURPOSE, model):
        return
    prompt = (f"Current memories:\n\n{memories_text(service.seen)}\n\n"
              f"Conversation:\n\n{excerpt}")
    try:
        answer = await asyncio.wait_for(
            ports.model.complete(system=SYSTEM, prompt=prompt, purpose=PURPOSE, model=model,
                                 max_tokens=MAX_ANSWER_TOKENS),
            timeout=service.settings["batch_timeout"])
        updates, invalid = validate(parse_answer(answer))
        outcome = await anyio.to_thread.run_sync(apply_updates, service.dirs, updates,
                                                 service.known)
    except TimeoutError:
        _report_failure(session, f"no answer within {service.settings['batch_timeout']} s")
        return
    except (BatchAnswerError, MemoryPathError, FileCommitError) as exc:
        _report_failure(session, str(exc))
        return
    except Exception as exc:  # the model failed: the memories stay as they are
        _report_failure(session, f"the side request failed: {type(exc).__name__}: {exc}")
        return
    service.settle(outcome)
    _report(session, outcome, invalid)


def _report_failure(session: Any, problem: str) -> None:
    message = f"memory batch: nothing was changed: {problem}"
    log.warning("zpi-builtins: %s", message)
    session.warn(message)
    _record(session, {"event": "batch", "error": problem})


def _report(session: Any, outcome: Outcome, invalid: Sequence[tuple[Any, str]]) -> None:
    refused = [(_describe(u), reason) for u, reason in outcome.refused]
    refused += [(_describe(e), reason) for e, reason in invalid]
    applied = [_describe(u) for u, _ in outcome.applied]
    _record(session, {"event": "batch", "applied": applied,
                      "refused": [{**what, "reason": reason} for what, reason in refused]})
    if applied:
        log.info("zpi-builtins: memory batch applied %s", ", ".join(
            f"{a['action']} {a['scope']}:{a['name']}" for a in applied))
    if refused:
        message = (f"memory batch: {len(refused)} update(s) refused (the files on disk are "
                   "kept): " + "; ".join(reason for _, reason in refused))
        log.warning("zpi-builtins: %s", message)
        session.warn(message)


def _record(session: Any, data: dict[str, Any]) -> None:
    try:
        session.ports.storage.append_custom(NAMESPACE, data)
    except Exception as exc:  # a closed or read-only transcript: the log line says it
        log.info("zpi-builtins: memory batch not recorded in the transcript: %s", exc)
