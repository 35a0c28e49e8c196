"""The state of one conversation, as the loop and its helpers work on it: history, tools,
model, usage, subscribers, context waiting for the model, the abort handle, and the records a
run writes. :class:`~zpi_host.session.agent_session.AgentSession` is the one implementation:
it adds what needs the layer above (running the loop, compaction on request, sub-agents,
disposal), declared here so that the loop, the view and the ports can name them.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..providers.messages import Message, Usage
from ..support.listview import ListView
from ..transcript.offloop import commit, make_durable
from .events import Event, SystemMessageEvent, WarningEvent
from .spend import SpendLedger

if TYPE_CHECKING:
    from ..contract.plugins import PluginHost
    from ..contract.snapshot import PluginSnapshot
    from ..permissions import Denial, PermissionPolicy
    from ..providers.base import Provider
    from ..providers.catalog import ModelEntry
    from ..resources import ResourceLoader
    from ..settings.manager import SettingsManager
    from ..support.redaction import Redactor
    from ..tools.base import Tool, ToolCall
    from ..tools.file_state import FileReadState
    from ..transcript import SessionManager
    from .file_checkpoints import FileCheckpoints
    from .run_result import RunResult

__all__ = ["DENIAL_NAMESPACE", "HistoryView", "SessionState", "SubagentLink", "Subscriber"]

Subscriber = Callable[[Event], Awaitable[None] | None]
#: the ``custom`` transcript records that hold denied tool calls
DENIAL_NAMESPACE = "zpi.permission-denial"


class HistoryView(ListView[Message]):
    """A read-only, copy-free view of the history as it was when the view was made."""

    __slots__ = ()
    what = "history"


class SessionState:
    """One conversation's state and the records a run writes; see the module docstring."""

    def __init__(
        self,
        *,
        host: PluginHost,
        provider: Provider,
        tools: Sequence[Tool],
        system_prompt: str,
        cwd: Path,
        file_state: FileReadState,
        settings: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        max_turns: int | None = None,
        reasoning_level: str | None = None,
        spill_dir: Path | None = None,
        store: SessionManager | None = None,
        settings_manager: SettingsManager | None = None,
        resources: ResourceLoader | None = None,
        snapshot: PluginSnapshot | None = None,
        warnings: Sequence[str] = (),
        model_entry: ModelEntry | None = None,
        agent_dir: Path | None = None,
        start_source: str = "startup",
        permissions: PermissionPolicy | None = None,
        parent: SubagentLink | None = None,
        remove_spill_at_dispose: bool = False,
        redactor: Redactor | None = None,
    ) -> None:
        self.host = host
        self.provider = provider
        self.tools: dict[str, Tool] = {t.name: t for t in tools}
        self.system_prompt = system_prompt
        self.cwd = cwd
        self.file_state = file_state
        self.settings: Mapping[str, Any] = settings or {}
        if store is None:
            from ..transcript import SessionManager

            store = SessionManager.in_memory(cwd=cwd, session_id=session_id)
        if redactor is None:
            import os

            from ..support.redaction import Redactor

            redactor = Redactor.from_settings(self.settings, os.environ)
        from ..support.redaction import key_variables

        #: environment variables kept out of bash and hook commands (the provider keys)
        self.hidden_variables: frozenset[str] = key_variables(self.settings)
        #: the agent definition this session runs as (``agent=``; a sub-agent's own), or None
        self.agent_definition: Any = None
        #: the tools the session may show any agent (before a definition's ``permissions``
        #: chose this agent's): where a sub-agent with its own permissions picks from
        self.available_tools: dict[str, Tool] = dict(self.tools)
        #: keeps the provider keys out of events, warnings, results and the transcript
        self.redactor = redactor
        store.redactor = redactor
        self.store = store
        self.session_id = store.session_id
        self.max_turns = max_turns
        self.reasoning_level = reasoning_level
        self.spill_dir = spill_dir
        #: an in-memory session's spill folder goes with it (a saved one's stays for resume)
        self.remove_spill_at_dispose = remove_spill_at_dispose
        self.settings_manager = settings_manager
        self.resources = resources
        self.snapshot = snapshot
        self.model_entry = model_entry if model_entry is not None else getattr(
            provider, "entry", None)
        self.agent_dir = agent_dir
        #: UUID of the current user prompt, set when a run starts (``SessionView.prompt_id``)
        self.prompt_id = ""
        #: the transcript uuid of the user message being run (a queued input delivered
        #: mid-run takes over): what file checkpoints are kept under and rewound to
        self.prompt_uuid = ""
        #: ``FileCheckpoints`` when the session keeps them (option ``file_checkpoints``; a
        #: sub-agent shares its parent's)
        self.file_checkpoints: FileCheckpoints | None = (
            parent.parent.file_checkpoints if parent is not None else None)
        self.warnings: list[str] = list(warnings)
        #: calls whose tool should report stdout and stderr apart (``keep_streams_apart``)
        self.streams_apart: set[str] = set()
        #: soft refusals a service asks for while it runs (``SessionView.guard_tools``): each
        #: takes a call and returns the text the model gets instead of running it, or None
        self.tool_guards: list[Callable[[Any], str | None]] = []
        #: (message, source) for the user, not the model (``SessionView.tell_user``)
        self.user_messages: list[tuple[str, str | None]] = []
        entries = store.context_entries()
        self.messages: list[Message] = [message for _, message in entries]
        #: the transcript record of each message (compaction names its first kept record)
        self.message_ids: list[str] = [uuid for uuid, _ in entries]
        self.usage = Usage()
        self.model_usage: dict[str, Usage] = {}
        self.model_cost_usd: dict[str, float] = {}
        self.unpriced_models: set[str] = set()
        #: the budget check before every model request, shared with sub-agents (spend.py)
        self.spend: SpendLedger = (parent.parent.spend if parent is not None
                                   else SpendLedger(lambda: self.total_cost_usd))
        self._run_done: Any = None
        #: ``context_usage.RunningEstimate`` of the history, made by the first guard that asks
        self.context_estimate: Any = None
        #: work a service left for the end of the current run (``ports.conversation``)
        self.after_run_jobs: list[Callable[[], Awaitable[None]]] = []
        if permissions is None:
            from ..permissions import build_policy

            permissions = build_policy(None, cwd=cwd)
        self.permissions = permissions
        self.denials: list[Denial] = []
        self.environment: dict[str, str] = {}
        self._reported: set[str] = set()
        self.interrupt_reason: str | None = None
        #: ``zpi_session_start`` runs once, at the first run, with this source
        self.start_source = start_source
        #: a sub-agent's link to its parent (``subagents.run_subagent``): no session start or
        #: end hooks, stop decided by ``zpi_subagent_stop``, usage counted in the parent's
        self.parent = parent
        self.session_started = parent is not None
        #: told when a child starts and stops (``subagents.SubagentObserver``)
        self.subagent_observers: list[Any] = []
        #: the plugins' read-only window on this session (``SessionView``, set by
        #: ``AgentSession``): what hooks and tools receive as ``session``
        self.view: Any = None
        self.is_running = False
        self._subscribers: list[tuple[Subscriber, frozenset[str] | None]] = []
        self._wanted: frozenset[str] | None = frozenset()
        self._queued: list[str] = []
        #: context for the model waiting for the next turn (``add_context``)
        self._context: list[tuple[str | Callable[[], str | None], str]] = []
        self._cancel_scope: Any = None
        self._disposed = False
        #: what services use to reach the user, the model and storage (``SessionPorts``,
        #: set by ``AgentSession``; ``SessionView.ports``)
        self.ports: Any = None
        #: per-session plugin state (SessionView.plugin_state)
        self.plugin_state: dict[str, Any] = {}

    # ------------------------------------------------------------------ events

    def subscribe(self, callback: Subscriber, types: Iterable[str] | None = None
                  ) -> Callable[[], None]:
        """Call ``callback(event)`` for every event (sync or async), or only for events whose
        ``type`` is in ``types`` (work for events nobody wants is skipped: a tool's progress
        is not pumped when no one wants ``tool_update``). Returns an unsubscribe function.
        An exception from a subscriber stops the run with that error."""
        entry = (callback, None if types is None else frozenset(types))
        self._subscribers.append(entry)
        self._update_wanted()

        def unsubscribe() -> None:
            if entry in self._subscribers:
                self._subscribers.remove(entry)
                self._update_wanted()

        return unsubscribe

    def _update_wanted(self) -> None:
        """The event types some subscriber wants (None: every type)."""
        wanted: set[str] = set()
        for _, types in self._subscribers:
            if types is None:
                self._wanted = None
                return
            wanted |= types
        self._wanted = frozenset(wanted)

    @property
    def wants_events(self) -> bool:
        return bool(self._subscribers) or self.host.hooks.has_implementations("zpi_event")

    def wants_event(self, type: str) -> bool:
        """Whether an event of ``type`` has a receiver (a subscriber or a ``zpi_event``
        plugin)."""
        wanted = self._wanted
        return wanted is None or type in wanted or \
            self.host.hooks.has_implementations("zpi_event")

    async def emit(self, event: Event) -> None:
        if self.redactor:
            event = self.redactor.value(event)
        hooks = self.host.hooks
        if hooks.has_implementations("zpi_event"):
            await hooks.event(self.view, event)
        for callback, types in list(self._subscribers):
            if types is not None and event.type not in types:
                continue
            value = callback(event)
            if inspect.isawaitable(value):
                await value

    # ------------------------------------------------------------------ input

    def queue(self, text: str) -> None:
        """Add user input during a run; it reaches the model at the next safe point (after the
        current tool batch), or starts the next turn when the model would stop."""
        self._queued.append(text)

    def add_context(self, text: str | Callable[[], str | None], source: str) -> None:
        """Context for the model, delivered before the next model request (``take_context``
        in the loop); nothing is sent to the model until then."""
        if not callable(text) and (not isinstance(text, str) or not text.strip()):
            raise UsageError("context for the model must be a non-empty string or a callable")
        self._context.append((text, str(source)))

    def take_context(self) -> list[tuple[str, str]]:
        """The context waiting for the model (deferred texts asked now, None dropped)."""
        pending, self._context = self._context, []
        ready = []
        for text, source in pending:
            value = text() if callable(text) else text
            if isinstance(value, str) and value.strip():
                ready.append((value, source))
        return ready

    def take_queued(self) -> list[str]:
        queued, self._queued = self._queued, []
        return queued

    @property
    def cancel_scope(self) -> Any:
        """The anyio cancel scope of the current run (None between runs); tools may check
        ``cancel_scope.cancel_called`` to stop cooperative work early."""
        return self._cancel_scope

    def abort(self) -> None:
        """Cancel the current run: model streaming stops, running tools (and their processes)
        are cancelled; the history stays consistent."""
        if self._cancel_scope is not None:
            self._cancel_scope.cancel()

    # ------------------------------------------------------------------ recording

    def add_message(self, message: Message) -> None:
        """Append to the history and to the transcript (one record, flushed)."""
        record = self.store.append_message(message)
        self.messages.append(message)
        self.message_ids.append(record.uuid)

    async def commit_message(self, message: Message) -> None:
        """:meth:`add_message` as the loop calls it: a write that would block (a database's
        round trip) runs in a worker thread, so other sessions on the loop go on meanwhile;
        it returns once the record is committed."""
        record = await commit(self.store, self.store.append_message, message)
        self.messages.append(message)
        self.message_ids.append(record.uuid)

    async def journal_tool_call(self, call: ToolCall,
                                arguments: Mapping[str, Any] | None = None) -> None:
        """Record a call (with the input that runs) as pending before it runs, so a crash
        leaves a trace that resuming closes as interrupted (the tool is never re-run)."""
        await commit(self.store, self.store.append_tool_use, call.id, call.name,
                     dict(call.arguments if arguments is None else arguments))

    async def record_denial(self, denial: Denial) -> None:
        """A denied call: counted in the run's result and recorded in the transcript."""
        self.denials.append(denial)
        await commit(self.store, self.store.append_custom, DENIAL_NAMESPACE, denial.to_json())

    def request_interrupt(self, reason: str) -> None:
        """The approver asked to stop: calls not started yet are not run, the run ends."""
        self.interrupt_reason = reason

    def replace_context(self, messages: list[Message], ids: list[str]) -> None:
        """What the model sees from now on (after a compaction); the transcript keeps all."""
        self.messages, self.message_ids = messages, ids

    async def notify(self, message: str, title: str | None = None, kind: str = "info") -> None:
        """Tell the user something outside the conversation (``zpi_notification`` plugins
        deliver it: desktop notifications, chat webhooks). The host sends
        ``permission_prompt`` before it asks an approver."""
        await self.host.hooks.notification(self.view, message, title, kind)

    def take_warnings(self) -> list[str]:
        """Warnings from assembly and plugin failures handled by their error policy
        (``fail-open``: logged), each delivered once as an event. A failure that repeats
        (an observer failing on every event) is reported the first time only."""
        diagnostics = self.host.hooks.diagnostics
        while diagnostics:
            d = diagnostics.popleft()
            self.warnings.append(f"plugin {d.plugin!r} in {d.hook}: {d.message}" + (
                f" (handled: {d.policy})" if d.policy else ""))
        redact = self.redactor.text
        fresh = [w for w in dict.fromkeys(map(redact, self.warnings)) if w not in self._reported]
        self._reported.update(fresh)
        self.warnings = []
        return fresh

    async def deliver_warnings(self) -> None:
        """Warnings as ``warning`` events and messages for the user as ``system`` events
        (dropped when nobody listens: they are not problems)."""
        told, self.user_messages = self.user_messages, []
        if not self.wants_events:
            return
        warnings = self.take_warnings()
        if warnings or told:
            for warning in warnings:
                await self.emit(WarningEvent(warning))
            if self.wants_event("system"):
                for message, source in told:
                    await self.emit(SystemMessageEvent(message, source))

    async def start_recording(self) -> None:
        """Once, when the session starts (the loop's first run): write the snapshot, and model
        or reasoning changes. The plugin host is sealed: the snapshot says what this session
        (and its sub-agents, which share the host) runs with."""
        self.host.seal("a session it serves has started")
        store = self.store
        if self.snapshot is not None:
            data = self.snapshot.to_json()
            if store.latest_snapshot() != data:
                await commit(store, lambda: store.append("snapshot", snapshot=data))
        model = (self.provider.name, self.provider.model)
        if store.last_model() != model:
            await commit(store, lambda: store.append("model_change", provider=model[0],
                                                       model=model[1]))
        if self.reasoning_level is not None and \
                store.last_reasoning_level() != self.reasoning_level:
            level = self.reasoning_level
            await commit(store, lambda: store.append("reasoning_level", level=level))

    async def end_turn(self) -> None:
        """Make the turn durable (fsync per the session's policy)."""
        await make_durable(self.store)

    def record_usage(self, usage: Usage, entry: ModelEntry | None = None) -> float:
        """Add one request's usage to the totals; cost from the catalog, or flagged unpriced.
        ``entry``: the model that answered, when not the session's (a side request to
        another model). A sub-agent's usage counts in its parent's totals too, under its
        own model. Returns the cost in US dollars (0 when unpriced)."""
        if entry is None:
            key, entry = f"{self.provider.name}/{self.provider.model}", self.model_entry
        else:
            key = f"{entry.provider}/{entry.model}"
        amount: float | None = None
        priced = entry is not None and entry.provider != "scripted"
        if priced:
            from ..providers.catalog import cost

            assert entry is not None
            amount = cost(usage, entry.price)
        self.count_usage(key, usage, amount, priced)
        return amount or 0.0

    def count_usage(self, key: str, usage: Usage, amount: float | None, priced: bool) -> None:
        """Add ``usage`` of model ``key`` costing ``amount`` (None: unpriced; ``priced``
        False: a model that is never priced, such as the scripted one) to the totals."""
        if self.parent is not None:
            self.parent.parent.count_usage(key, usage, amount, priced)
        self.usage = self.usage + usage
        self.model_usage[key] = self.model_usage.get(key, Usage()) + usage
        if not priced:
            return
        if amount is None:
            self.unpriced_models.add(key)
            amount = 0.0
        self.model_cost_usd[key] = self.model_cost_usd.get(key, 0.0) + amount

    @property
    def total_cost_usd(self) -> float:
        return sum(self.model_cost_usd.values(), 0.0)

    # ------------------------------------------------------------------ what AgentSession adds

    async def run(self, prompt: str) -> RunResult:
        """Send ``prompt`` and run until the model stops (``AgentSession.run``)."""
        raise NotImplementedError

    async def run_subagent(self, agent_type: str, prompt: str, *,
                           max_turns: int | None = None, description: str = "",
                           tool_call_id: str = "", extra_tools: Sequence[Any] = ()) -> Any:
        """Run ``prompt`` in a child session (``AgentSession.run_subagent``)."""
        raise NotImplementedError

    def child_session(self, **options: Any) -> SessionState:
        """A new session of the same kind, for a sub-agent (``AgentSession.child_session``)."""
        raise NotImplementedError

    async def dispose(self, reason: str = "other") -> None:
        """End the session and release what it holds (``AgentSession.dispose``)."""
        raise NotImplementedError



class SubagentLink:
    """What a child session knows of its parent: whom to ask about stopping, where usage
    goes, and which tool call started it. The child owns neither the model connection nor
    the plugins."""

    __slots__ = ("agent_id", "agent_type", "parent", "tool_call_id")

    def __init__(self, parent: SessionState, agent_type: str, agent_id: str = "",
                 tool_call_id: str = "") -> None:
        self.parent, self.agent_type = parent, agent_type
        self.agent_id, self.tool_call_id = agent_id, tool_call_id

    async def stop(self, child: SessionState, message: Any, continuation: int) -> Any:
        return await self.parent.host.hooks.subagent_stop(
            self.parent.view, self.agent_type, child.session_id, message, continuation)
