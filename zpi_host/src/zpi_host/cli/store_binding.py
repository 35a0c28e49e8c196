"""``zpi-host run --session-store STORE``: the run's session mirrored to a session store and
resumed from it, with the SDK's parts (``sdk/mirror.py``, ``sdk/store_resume.py``)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

from .exits import CliUsageError, print_warning


class StoreBinding:
    """One run's store: resolve what to resume, mirror while the run lasts, clean up."""

    def __init__(self, spec: str, cwd: str | None, *, no_session: bool,
                 project_key: str | None = None) -> None:
        from ..stores.session_store import project_key_for_directory
        from ..stores.store_specs import open_store

        if no_session:
            raise CliUsageError("--session-store mirrors the session file, so it cannot be "
                                "used with --no-session")
        if project_key is not None and not project_key.strip():
            raise CliUsageError("--project-key must not be empty")
        self.store = open_store(spec)
        self.cwd = cwd
        self.project_key = project_key or project_key_for_directory(cwd or os.getcwd())
        self._choice: Any = None

    async def resolve(self, resume: str | None, continue_recent: bool) -> str | None:
        """What ``create_session`` should resume: the store's copy first, reconciled with the
        local file of the session (the user's agent dir and working directory)."""
        from pathlib import Path

        from ..session.assembly import resolve_agent_dir
        from ..stores.store_resume import resolve_resume

        self._choice = await resolve_resume(
            self.store, self.project_key, resume=resume, continue_recent=continue_recent,
            timeout_ms=60_000, agent_dir=resolve_agent_dir(None, os.environ),
            cwd=Path(self.cwd or os.getcwd()).expanduser().resolve())
        return self._choice.resume  # type: ignore[no-any-return]

    async def run(self, session: Any, body: Callable[[], Awaitable[int]]) -> int:
        """Run ``body`` (which disposes the session) with the session mirrored; returns its
        exit code once every scheduled write is done."""
        import anyio

        from ..stores.mirror import (
            SubagentMirrors,
            attach_mirror,
            close_mirrors,
            detach_mirror,
            resync_subagents,
        )

        key: Any = {"project_key": self.project_key, "session_id": session.session_id}
        choice = self._choice
        known = choice.known if choice is not None else frozenset()
        try:
            async with anyio.create_task_group() as group:
                mirror = attach_mirror(session, self.store, key, flush_mode="batched",
                                       on_error=_warn, known=known)
                group.start_soon(mirror.run)
                resynced = resync_subagents(
                    session, self.store, key, flush_mode="batched", on_error=_warn,
                    known=choice.children_known if choice is not None else {})
                for child in resynced:
                    group.start_soon(child.run)
                session.subagent_observers.append(SubagentMirrors(
                    self.store, key, flush_mode="batched", on_error=_warn,
                    start_soon=lambda run: group.start_soon(run)))
                try:
                    code = await body()
                finally:
                    try:
                        await detach_mirror(session, mirror)
                    finally:
                        await close_mirrors(resynced)
        finally:
            await self.close()
        return code

    async def close(self) -> None:
        closing = getattr(self.store, "close", None)
        if closing is not None:
            result = closing()
            if hasattr(result, "__await__"):
                await result


def _warn(key: Any, error: str) -> None:
    print_warning(f"session store mirror ({key['session_id']}): {error}")
