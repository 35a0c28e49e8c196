"""ConversationPort: a service acting on its session's own conversation between runs.

A hand-off runs the agent once more in its own session, stops the run in progress, and
rebuilds the context around a break point. Services reach the session only through ports
(``SessionView.ports.conversation``), never the ``SessionState`` itself, so this port offers
exactly those steps: ``run``, ``stop``, ``after_run`` (work that must wait until the current
run has ended, such as a migration decided at ``zpi_run_end``) and ``restart`` (the context
replaced through the compaction machinery: a compaction record, the transcript keeps every
record).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..errors import UsageError

if TYPE_CHECKING:
    from ..agent.run_result import RunResult
    from ..agent.state import SessionState

AfterRun = Callable[[], Awaitable[None]]


class ConversationPort:
    """The session's conversation, for a service (``SessionView.ports.conversation``)."""

    def __init__(self, session: SessionState) -> None:
        self._session = session

    @property
    def is_running(self) -> bool:
        return self._session.is_running

    async def run(self, prompt: str) -> RunResult:
        """Run ``prompt`` in the session, as a user prompt would (UsageError during a run)."""
        return await self._session.run(prompt)

    async def stop(self) -> None:
        """Abort the run in progress, if any, and wait until it has ended (its calls closed
        as interrupted, its messages recorded). Not from inside that run."""
        session = self._session
        if not session.is_running:
            return
        session.abort()
        done: Any = session._run_done
        if done is not None:
            await done.wait()

    def after_run(self, job: AfterRun) -> None:
        """Run ``job`` once the run in progress has ended, before its ``run()`` returns (a
        failure is a warning of the session, never the run's error). UsageError between
        runs: then there is nothing to wait for, call it directly."""
        if not self._session.is_running:
            raise UsageError("after_run() is for work that must wait for the run in progress; "
                             "no run is in progress")
        self._session.after_run_jobs.append(job)

    def restart(self, summary: str, break_point: str, source: str,
                migration: str | None = None) -> str:
        """Replace the whole context with ``summary`` (as a compaction's summary message,
        with the files read and modified) and the ``break_point`` context message from
        ``source``; ``migration`` (``omit`` or ``prune``) says what the people's history
        keeps of the old part (``transcript.history.history_entries``); returns the
        compaction record's uuid. Between runs only."""
        if self._session.is_running:
            raise UsageError("the context cannot be rebuilt while a run is in progress")
        from ..agent.compaction import restart_context

        return restart_context(self._session, summary, break_point, source, migration)
