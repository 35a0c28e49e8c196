"""The agent loop: user input -> (model request -> stream -> tool batch)* -> stop.

Scheduling rules (DESIGN 4.4): consecutive read-only, concurrency-safe calls run together in a
task group; anything else runs alone, in order; results are recorded in the model's order. A
read-only call may start while the model is still streaming, unless a tool hook is registered
(hooks must see every call first). Per-turn work does not depend on the history's length: the
request gets a copy-free view of the history.

Durability (docs/reliability.md): an event that reports a fact (``message_end``, ``tool_end``)
is emitted only after the fact is in the transcript. A result is recorded as soon as it and
every result before it (in the model's order) are done, then its ``tool_end`` follows.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import ContextOverflowError, RunStopped, ZpiError
from ..providers.base import (
    Done,
    ModelRequest,
    ProviderStreamBroken,
    ReasoningDelta,
    Retrying,
    TextDelta,
    ToolCallEnd,
    ToolSpec,
    UsageReport,
)
from ..providers.messages import (
    AssistantMessage,
    ContextMessage,
    TextContent,
    ThinkingContent,
    ToolCallContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .commands import expand_prompt
from .compaction_settings import CompactionSettings, over_threshold
from .events import (
    InputDelivered,
    MessageEnd,
    ReasoningDeltaEvent,
    RetryEvent,
    RunEnd,
    RunStart,
    TextDeltaEvent,
    TurnEnd,
    TurnStart,
)
from .run_result import RunResult
from .state import HistoryView
from .toolcalls import ToolCallRunner, interrupted_result, is_parallel_safe, not_run_result

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..providers.messages import ImageContent
    from .state import SessionState

DEFAULT_MAX_STOP_CONTINUATIONS = 8


class _Outcome:
    __slots__ = ("cause", "error", "stop_reason", "text")

    def __init__(self, text: str, stop_reason: str, error: str | None = None,
                 cause: ZpiError | None = None) -> None:
        self.text, self.stop_reason, self.error, self.cause = text, stop_reason, error, cause


class AgentLoop:
    """One run of a session. Created by ``SessionState.run``."""

    def __init__(self, session: SessionState) -> None:
        self.s = session
        self.hooks = session.host.hooks
        self.runner = ToolCallRunner(session)
        self.tool_specs = tuple(
            ToolSpec(t.name, t.description, t.parameters) for t in session.tools.values()
        )
        self.early_start = not self.hooks.tool_hooks_registered
        hooks_settings = session.settings.get("hooks", {})
        self.max_continuations = int(
            hooks_settings.get("max_stop_continuations", DEFAULT_MAX_STOP_CONTINUATIONS))
        self.compaction = CompactionSettings.from_settings(session.settings)
        self.turns = 0
        #: finished results not recorded yet, by call id
        self._results: dict[str, ToolResultMessage] = {}
        #: calls of the recorded assistant message still without a recorded result, in order
        self._pending: list[ToolCallContent] = []
        #: calls given to the runner (they had a tool_start, so their result gets a tool_end)
        self._ran: set[str] = set()
        #: the current message's message_end was emitted (its calls' tool_end may follow)
        self._announced = False
        #: one recorder at a time; taking it free does not yield to the loop (a result is
        #: recorded as soon as it is ready, without a scheduling round per call)
        self._recording = anyio.Lock(fast_acquire=True)
        self._usage, self._stop_reason = Usage(), "end_turn"

    async def run(self, prompt: str, *, images: Sequence[ImageContent] = ()) -> RunResult:
        started = time.perf_counter()
        s = self.s
        usage_before, model_usage_before = s.usage, dict(s.model_usage)
        cost_before = dict(s.model_cost_usd)
        denials_before = len(s.denials)
        s.interrupt_reason = None
        s.prompt_id = str(uuid.uuid4())
        outcome: _Outcome | None = None
        with anyio.CancelScope() as scope:
            s._cancel_scope = scope
            try:
                outcome = await self._run(prompt, tuple(images))
            except anyio.get_cancelled_exc_class():
                # cancelled from outside (a sub-agent whose parent was interrupted, a client
                # disconnecting): the calls in flight are closed as the abort closes them
                if self._pending:
                    with anyio.CancelScope(shield=True):
                        await self._close_open_calls()
                raise
            except ZpiError as exc:
                outcome = self._failed(exc)
            except BaseExceptionGroup as group:  # a tool batch's task group wraps errors
                leaf = _single_leaf(group)
                if isinstance(leaf, ZpiError):
                    outcome = self._failed(leaf)
                elif leaf is not None and not isinstance(leaf, anyio.get_cancelled_exc_class()):
                    raise leaf from group
                else:
                    raise
        if outcome is None:  # cancelled by abort()
            outcome = _Outcome("", "aborted", "the run was aborted")
        if self._pending:  # aborted, stopped by a hook or failed with calls in flight
            with anyio.CancelScope(shield=True):
                await self._close_open_calls()
        result = RunResult(
            result=outcome.text if outcome.error is None else outcome.error,
            is_error=outcome.error is not None,
            num_turns=self.turns,
            session_id=s.session_id,
            usage=_minus(s.usage, usage_before),
            duration_ms=int((time.perf_counter() - started) * 1000),
            stop_reason=outcome.stop_reason,
            model_usage={k: _minus(v, model_usage_before.get(k, Usage()))
                         for k, v in s.model_usage.items()},
            error=outcome.error, failure=outcome.cause,
            total_cost_usd=s.total_cost_usd - sum(cost_before.values()),
            model_cost_usd={k: v - cost_before.get(k, 0.0)
                            for k, v in s.model_cost_usd.items()},
            unpriced_models=tuple(sorted(s.unpriced_models)),
            denials=tuple(s.denials[denials_before:]),
        )
        if s.parent is None and s.host.hooks.has_implementations("zpi_run_end"):
            with anyio.CancelScope(shield=True):
                await s.host.hooks.run_end(s.view, result)
                await s.deliver_warnings()  # what a run_end hook reports belongs to this run
        if s.wants_event("run_end"):
            with anyio.CancelScope(shield=True):
                await s.emit(RunEnd(result))
        return result

    def _failed(self, exc: ZpiError) -> _Outcome:
        """A typed error ends the run; a hook's RunStopped ends it on purpose, with the calls
        in flight closed as interrupted so the history stays valid."""
        if isinstance(exc, RunStopped):
            self.s.warnings.append(f"a hook stopped the run: {exc}")
            last = self.s.messages[-1] if self.s.messages else None
            if isinstance(last, AssistantMessage) and not last.tool_calls and self.turns:
                return _Outcome(last.text, "hook_stopped")  # stopped when it would stop
            return _Outcome(f"stopped by a hook: {exc}", "hook_stopped")
        return _Outcome("", "error", str(exc), exc)

    # ------------------------------------------------------------------------ the run

    async def _run(self, prompt: str, images: tuple[ImageContent, ...] = ()) -> _Outcome:
        s, hooks = self.s, self.hooks
        if s.wants_event("run_start"):
            await s.emit(RunStart(prompt))
        await s.deliver_warnings()
        if not s.session_started:
            s.session_started = True
            await s.start_recording()
            for context in await hooks.session_start(s.view, s.start_source):
                await s.commit_message(ContextMessage(context.value, context.plugin))
        decision = await hooks.user_prompt(s.view, prompt)
        if decision.blocked:
            reason = "; ".join(r.value for r in decision.reasons) or "no reason given"
            return _Outcome("", "blocked", f"the prompt was blocked by a hook: {reason}")
        # the prompt's context comes before the prompt, in the same user turn
        for context in decision.contexts:
            await s.commit_message(ContextMessage(context.value, context.plugin))
        await s.commit_message(UserMessage((TextContent(await expand_prompt(s, prompt)), *images)))
        if s.parent is None:
            s.prompt_uuid = s.message_ids[-1]
        continuations = 0
        while True:
            if s.max_turns is not None and self.turns >= s.max_turns:
                return _Outcome("", "max_turns", f"reached the maximum of {s.max_turns} turns "
                                "(raise --max-turns to let the agent go on)")
            self.turns += 1
            message = await self._turn(self.turns)
            if message.error is not None:
                return _Outcome(message.text, "error", message.error)
            if s.interrupt_reason is not None:
                return _Outcome("", "interrupted", f"the run was interrupted: "
                                f"{s.interrupt_reason}")
            if message.tool_calls:
                await self._deliver_queued()
                continue
            if await self._deliver_queued():
                continue
            stop = (await hooks.stop(s.view, message, continuations) if s.parent is None
                    else await s.parent.stop(s, message, continuations))
            if stop.continue_with and continuations < self.max_continuations:
                continuations += 1
                # host-added feedback, not the user's words: a system-reminder
                source = ", ".join(dict.fromkeys(r.plugin for r in stop.reasons)) or "stop"
                await s.commit_message(ContextMessage(stop.continue_with, source))
                continue
            return _Outcome(message.text, message.stop_reason)

    async def _deliver_queued(self) -> bool:
        queued = self.s.take_queued()
        for text in queued:
            await self.s.commit_message(UserMessage.text(text))
            if self.s.parent is None:
                self.s.prompt_uuid = self.s.message_ids[-1]
            if self.s.wants_event("input_delivered"):

                await self.s.emit(InputDelivered(text))
        return bool(queued)

    async def _turn(self, turn: int) -> AssistantMessage:
        s, hooks = self.s, self.hooks
        events = s.wants_events
        if events and s.wants_event("turn_start"):
            await s.emit(TurnStart(turn))
        await hooks.turn_start(s.view, turn)
        for text, source in s.take_context():  # what happened beside the run (a task ended)
            await s.commit_message(ContextMessage(text, source))
        if over_threshold(s, self.compaction):
            from .compaction import compact

            await compact(s, trigger="auto", reason="threshold")
        started: set[str] = set()
        try:
            message = await self._respond(events, started)
        except ContextOverflowError as overflow:
            from .compaction import compact

            # compact once and retry the request once; a second overflow ends the run
            if not self.compaction.enabled or await compact(
                    s, trigger="auto", reason="overflow") is None:
                raise ContextOverflowError(
                    f"{overflow} (the history could not be compacted: nothing older to "
                    "summarise, compaction disabled or cancelled by a plugin)") from overflow
            message = await self._respond(events, started)
        calls = message.tool_calls

        if message.error is not None:
            for call in self._pending:
                self._results.setdefault(call.id, not_run_result(
                    call, f"the model's response broke off before it ended ({message.error})"))
            await self._record_ready()
        elif calls:
            await self._run_calls([c for c in calls if c.id not in started])
            await self._record_ready()
        await s.end_turn()
        await s.deliver_warnings()
        if events and s.wants_event("turn_end"):
            await s.emit(TurnEnd(turn))
        await hooks.turn_end(s.view, turn, message)
        return message

    async def _respond(self, events: bool, started: set[str]) -> AssistantMessage:
        """One model request (after the request hooks) and its recorded answer."""
        s, hooks = self.s, self.hooks
        request = ModelRequest(
            model=s.provider.model, system_prompt=s.system_prompt,
            messages=HistoryView(s.messages), tools=self.tool_specs,
            reasoning_level=s.reasoning_level,
        )
        await hooks.before_request(s.view, request)
        options = await hooks.request_options(s.view, request)
        if options:
            request = ModelRequest(request.model, request.system_prompt, request.messages,
                                   request.tools, options, request.reasoning_level)
        # Read-only calls started while streaming run in this task group; the message is
        # recorded as soon as the stream ends, then the group waits for those calls.
        self._announced = False
        error: Exception | None = None
        message: AssistantMessage | None = None
        async with anyio.create_task_group() as early:
            try:
                async with s.spend.request() as spend:
                    message = await self._stream(request, events, early, started)
                    await s.commit_message(message)  # no checkpoint: it precedes any journal record
                    self._pending = list(message.tool_calls)
                    spend.add(s.record_usage(message.usage))
                if events and s.wants_event("message_end"):
                    await s.emit(MessageEnd(message))
                self._announced = True  # early calls' tool_end events may follow now
                await self._record_ready()
            except Exception as exc:  # re-raised below, unwrapped from the task group
                error = exc
                early.cancel_scope.cancel()
        if error is not None:
            raise error
        assert message is not None
        return message

    async def _stream(
        self, request: ModelRequest, events: bool, early_group: Any, started: set[str]
    ) -> AssistantMessage:
        """Consume the model's stream; start read-only calls early (in ``early_group``) when
        allowed, adding their ids to ``started``."""
        s = self.s
        texts: list[str] = []
        thinking: list[ReasoningDelta] = []
        calls: list[ToolCallContent] = []
        try:
            await self._consume(request, events, early_group, started, texts, thinking, calls)
        except ProviderStreamBroken as exc:
            # Not replayed: what arrived is kept with the error; complete calls that did not
            # start get a "not run" result (see _turn), and the user can continue.
            return AssistantMessage(_content(thinking, texts, calls), "error", self._usage,
                                    s.provider.name, s.provider.model, error=str(exc))
        return AssistantMessage(_content(thinking, texts, calls), self._stop_reason,
                                self._usage, s.provider.name, s.provider.model)

    async def _consume(
        self, request: ModelRequest, events: bool, early_group: Any, started: set[str],
        texts: list[str], thinking: list[Any], calls: list[ToolCallContent],
    ) -> None:
        s = self.s
        early = self.early_start
        self._usage, self._stop_reason = Usage(), "end_turn"
        text_events = events and s.wants_event("text_delta")
        reasoning_events = events and s.wants_event("reasoning_delta")
        async for event in s.provider.stream(request):
            if isinstance(event, TextDelta):
                texts.append(event.text)
                if text_events:
                    await s.emit(TextDeltaEvent(event.text))
            elif isinstance(event, ReasoningDelta):
                thinking.append(event)
                if reasoning_events:
                    await s.emit(ReasoningDeltaEvent(event.text))
            elif isinstance(event, ToolCallEnd):
                call = ToolCallContent(event.id, event.name, dict(event.arguments))
                calls.append(call)
                if early and is_parallel_safe(s, call.name):
                    started.add(call.id)
                    early_group.start_soon(self._run_into, call)
                else:
                    early = False  # keep order: nothing after a non-safe call starts early
            elif isinstance(event, UsageReport):
                self._usage = self._usage + event.usage
            elif isinstance(event, Done):
                self._stop_reason = event.stop_reason
            elif isinstance(event, Retrying) and events and s.wants_event("retry"):

                await s.emit(RetryEvent(event.reason, event.delay, event.attempt,
                                        event.attempts))

    async def _run_into(self, call: ToolCallContent) -> None:
        reason = self.s.interrupt_reason
        if reason is None:
            self._ran.add(call.id)
            result = await self.runner.run(call.as_call())
        else:
            result = not_run_result(call, f"the run was interrupted: {reason}")
        self._results[call.id] = result
        await self._record_ready()

    async def _record_ready(self) -> None:
        """Record the finished results that are next in the model's order, each followed by
        its ``tool_end``: no consumer sees a result the transcript does not hold."""
        if not self._announced:
            return
        async with self._recording:
            while self._pending and self._pending[0].id in self._results:
                call = self._pending.pop(0)
                result = self._results.pop(call.id)
                await self.s.commit_message(result)
                if call.id in self._ran:
                    await self.runner.report_end(result)

    async def _run_calls(self, calls: list[ToolCallContent]) -> None:
        """Batches: a run of parallel-safe calls together, anything else alone, in order."""
        i = 0
        while i < len(calls):
            j = i
            while j < len(calls) and is_parallel_safe(self.s, calls[j].name):
                j += 1
            if j - i > 1:
                async with anyio.create_task_group() as tg:
                    for call in calls[i:j]:
                        tg.start_soon(self._run_into, call)
                i = j
            else:
                await self._run_into(calls[i])
                i += 1

    async def _close_open_calls(self) -> None:
        """After an abort, a hook's stop or an error: every call of the last assistant message
        gets a result (the finished one or an "interrupted" one), so the history stays valid
        for the next run; everything is recorded before any ``tool_end`` is emitted."""
        recorded = []
        for call in self._pending:
            done = self._results.pop(call.id, None)
            result = done if done is not None else interrupted_result(call)
            await self.s.commit_message(result)
            if call.id in self._ran:  # it had a tool_start: its consumer waits for an end
                recorded.append(result)
        self._pending = []
        self._results.clear()
        await self.s.end_turn()
        for result in recorded:
            await self.runner.report_end(result)


def _content(
    thinking: list[ReasoningDelta], texts: list[str], calls: list[ToolCallContent]
) -> tuple[Any, ...]:
    content: list[Any] = []
    plain = [d for d in thinking if d.redacted is None]
    if plain:
        signature = next((d.signature for d in reversed(plain) if d.signature), None)
        content.append(ThinkingContent("".join(d.text for d in plain), signature))
    content += [ThinkingContent("", redacted=d.redacted) for d in thinking
                if d.redacted is not None]
    if texts:
        content.append(TextContent("".join(texts)))
    content.extend(calls)
    return tuple(content)


def _single_leaf(group: BaseExceptionGroup) -> BaseException | None:
    """The one exception inside (possibly nested) groups, or None if there are several."""
    leaves: list[BaseException] = []
    stack: list[BaseException] = [group]
    while stack:
        exc = stack.pop()
        if isinstance(exc, BaseExceptionGroup):
            stack.extend(exc.exceptions)
        else:
            leaves.append(exc)
    return leaves[0] if len(leaves) == 1 else None


def _minus(a: Usage, b: Usage) -> Usage:
    return Usage(a.input_tokens - b.input_tokens, a.output_tokens - b.output_tokens,
                 a.cache_read_tokens - b.cache_read_tokens,
                 a.cache_write_tokens - b.cache_write_tokens)
