"""AgentSession: one conversation with a model, its tools and plugins, and the API embedding
programs call.

The state the loop works on is :class:`~zpi_host.agent.state.SessionState`; this class adds
what belongs to the layer above the loop: running it, compaction on request, context usage,
sub-agents, the plugins' view and ports, and disposal.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..agent.run_result import RunResult
from ..agent.state import DENIAL_NAMESPACE, SessionState, Subscriber
from ..errors import RunStopped, UsageError
from .ports import SessionPorts
from .view import SessionView

if TYPE_CHECKING:
    from ..agent.compaction import CompactionResult
    from ..agent.context_usage import ContextUsage
    from ..agent.file_checkpoints import RewindReport
    from ..tools.base import ImageContent
    from .ports import HostPorts
    from .subagents import SubagentResult

__all__ = ["DENIAL_NAMESPACE", "AgentSession", "RunResult", "Subscriber"]


class AgentSession(SessionState):
    """One conversation with a model, its tools and plugins. Takes the options of
    :class:`~zpi_host.agent.state.SessionState` and ``ports``, what the embedding program
    gives its services (``HostPorts``)."""

    #: False for a plugin host the caller gave (``create_session(host=...)``): theirs to release
    owns_host = True

    def __init__(self, *, ports: HostPorts | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.view: SessionView = SessionView(self)
        self.ports: SessionPorts = SessionPorts(self, ports)

    def child_session(self, **options: Any) -> AgentSession:
        """A sub-agent's session: same kind, the options given (``subagents.run_subagent``)."""
        return AgentSession(**options)

    # ------------------------------------------------------------------ running

    async def run(self, prompt: str, *, images: Sequence[ImageContent] = ()) -> RunResult:
        """Send ``prompt`` (with ``images``, for a vision model: they follow the text in the
        same user message) and run until the model stops, max turns, an error or
        ``abort()``."""
        if self._disposed:
            raise UsageError("this session was disposed; create a new one")
        if self.is_running:
            raise UsageError("a run is already in progress; use queue() to add input to it")
        import anyio

        from ..agent.loop import AgentLoop  # start-up: a session previewed (`prompt`) never runs

        self.is_running = self.store.running = True
        self._run_done = anyio.Event()
        try:
            result = self.redactor.value(await AgentLoop(self).run(prompt, images=images))
        finally:
            self.is_running = self.store.running = False
            self._cancel_scope = None
            self._run_done.set()
        await self._after_run()
        return result  # type: ignore[no-any-return]

    async def _after_run(self) -> None:
        """The jobs services left for the end of this run (``ports.conversation.after_run``):
        each runs once, in order; a failure is a warning, never this run's error."""
        jobs, self.after_run_jobs = self.after_run_jobs, []
        for job in jobs:
            try:
                await job()
            except Exception as exc:
                self.warnings.append(f"work after the run failed: {type(exc).__name__}: {exc}")

    def rewind_files(self, message_id: str) -> RewindReport:
        """Put back every file a tool changed since user message ``message_id`` (the uuid of
        its transcript record) and say what was done; needs ``file_checkpoints=True``. Not
        while a run is in progress. What the chat's ``/rewind`` and the SDK's
        ``rewind_files`` call."""
        from ..agent.file_checkpoints import check_enabled

        checkpoints = check_enabled(self.file_checkpoints)
        if self.is_running:
            raise UsageError("files cannot be rewound while an input runs; wait for its "
                             "result (or interrupt it) first")
        return checkpoints.rewind(message_id, self.permissions.roots)

    async def compact(self, instructions: str | None = None) -> CompactionResult | None:
        """Summarise the older part of the history now (``zpi_before_compact`` may cancel:
        then None). Not while a run is in progress."""
        if self.is_running:
            raise UsageError("cannot compact while a run is in progress; call it between runs")
        from ..agent.compaction import compact

        return await compact(self, trigger="manual", reason="manual",
                             instructions=instructions)

    def get_context_usage(self) -> ContextUsage:
        """Tokens by category, from the provider's figures where it reported them and marked
        estimates otherwise; never calls the model."""
        from ..agent.context_usage import context_usage

        return context_usage(self)

    async def run_subagent(self, agent_type: str, prompt: str, *,
                           max_turns: int | None = None, description: str = "",
                           tool_call_id: str = "", extra_tools: Sequence[Any] = (),
                           ) -> SubagentResult:
        """Run ``prompt`` in a child session with the agent definition ``agent_type`` (or
        ``general-purpose``); see :mod:`zpi_host.session.subagents`."""
        from .subagents import run_subagent  # start-up: most sessions start no sub-agent

        return await run_subagent(self, agent_type, prompt, max_turns=max_turns,
                                  description=description, tool_call_id=tool_call_id,
                                  extra_tools=extra_tools)

    # ------------------------------------------------------------------ ending

    async def dispose(self, reason: str = "other") -> None:
        """End the session: a running run is aborted, ``zpi_session_end`` runs (if the session
        started), plugin state with an ``aclose()`` is closed (services drain their work),
        then subscriptions, the provider's connections and the transcript are released, and
        the plugins with them (the last registered first)."""
        self.abort()
        if self._disposed:
            return
        self._disposed = True
        if self.is_running and self._run_done is not None:
            await self._run_done.wait()  # the aborted run records its interrupted calls
        if self.parent is None:  # servers started for a session that never ran close too
            self.ports.mcp.take_offered()
        try:
            if self.session_started and self.parent is None:
                with contextlib.suppress(RunStopped):  # no run left to stop
                    await self.host.hooks.session_end(self.view, reason)
        finally:
            try:
                await self._close_plugin_state()
            finally:
                await self._release()

    async def _close_plugin_state(self) -> None:
        """Await ``aclose()`` of each plugin state object that has one (a service runtime
        draining its background work), before the provider and the transcript close; a
        failure is a warning. The last one made is closed first: a service made later may
        use one made before it."""
        for key, state in reversed(list(self.plugin_state.items())):
            close = getattr(state, "aclose", None)
            if not callable(close):
                continue
            try:
                value = close()
                if inspect.isawaitable(value):
                    await value
            except Exception as exc:
                self.warnings.append(f"plugin state {key!r} failed to close: "
                                     f"{type(exc).__name__}: {exc}")

    async def _release(self) -> None:
        """Subscriptions, the provider's connections, the transcript, the spill folder."""
        self._subscribers.clear()
        self._update_wanted()
        try:
            if self.parent is None:  # a sub-agent shares its parent's connection
                await self.provider.aclose()
        finally:
            self.store.close()
            if self.parent is None and self.owns_host:  # and its plugin host
                self.host.release()
            if self.remove_spill_at_dispose and self.spill_dir is not None:
                from ..fs.spill import remove_spill_folder

                remove_spill_folder(self.spill_dir)
