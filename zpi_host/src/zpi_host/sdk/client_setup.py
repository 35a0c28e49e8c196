"""How an SDKClient builds its session: options to ``create_session`` arguments, the
in-process plugins (standard tools, hook callbacks, MCP servers, the approver), resume,
continue and fork (locally or through a session store), and the store mirror.

A mixin of :class:`~.client.SDKClient`; it shares the client's state.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from ..session.agent_session import AgentSession
    from .options import AgentOptions

__all__ = ["ClientSetup"]


class ClientSetup:
    """Session creation and the store mirror of an SDKClient."""

    options: AgentOptions
    _mode: str
    _mcp: Any
    _mirror: Any
    _resynced: list[Any]
    _resume_choice: Any
    _group: Any
    _send: Any

    if TYPE_CHECKING:  # the client's own, declared for the type checker
        @property
        def session(self) -> AgentSession: ...

        def _apply_mode(self, mode: str) -> None: ...

        def _report(self, message: Any) -> None: ...

    async def _create_session(self) -> AgentSession:
        from ..session.assembly import create_session
        from .tools import StandardToolsPlugin

        options = self.options
        kwargs = options.session_kwargs()
        plugins: dict[str, Any] = {"sdk-standard-tools": StandardToolsPlugin()}
        if options.hooks:
            from .hook_callbacks import callback_hooks_plugin

            hooks = options.hooks
            if options.include_hook_events:
                from .hook_events import reporting_hooks

                hooks = reporting_hooks(hooks, self._report)
            plugins["sdk-hooks"] = callback_hooks_plugin(hooks)
        from .mcp_servers import InProcessServers

        self._mcp = InProcessServers(options.in_process_servers())
        if self._mcp.servers:  # says which server is switched off when its tool is called
            plugins["sdk-mcp-servers"] = self._mcp
        kwargs["plugins"] = plugins
        if options.can_use_tool is not None:
            from .permissions import sdk_approver

            approve = sdk_approver(options.can_use_tool, lambda: self.session,
                                   self._apply_mode)

            async def approver(name: str, arguments: dict[str, Any], context: Any) -> Any:
                from ..permissions import PermissionDeny

                if self._mode == "dontAsk":
                    return PermissionDeny(f"{context.reason}; permission mode dontAsk denies "
                                          "what is not allowed by a rule")
                return await approve(name, arguments, context)

            kwargs["can_use_tool"] = approver
        if options.session_store is not None:
            await self._resume_from_store(kwargs)
        elif kwargs.get("continue_recent") and self._latest(kwargs) is None:
            del kwargs["continue_recent"]  # nothing to continue: a new session
            self.options = attrs.evolve(options, continue_conversation=False,
                                        fork_session=False)
        elif options.resume_session_at is not None:
            from .resume_at import fork_at

            source = kwargs.get("resume") or self._latest(kwargs)
            assert source is not None  # continue_conversation without a session starts anew
            kwargs["resume"] = fork_at(source, options.resume_session_at,
                                       options.resume_drops_turn,
                                       agent_dir=kwargs.get("agent_dir"),
                                       new_id=options.session_id)
            kwargs.pop("continue_recent", None)
        elif options.fork_session and options.session_store is None:
            kwargs["resume"] = self._fork(kwargs)
            kwargs.pop("continue_recent", None)
        return await create_session(**kwargs)

    async def _resume_from_store(self, kwargs: dict[str, Any]) -> None:
        """With a session_store, resume and continue read the mirror first
        (``store_resume.py``); the local session of the same id is the fallback.
        ``fork_session`` forks in the store (``fork_session_via_store``), or locally when the
        store does not have the session, and resumes the fork."""
        from ..stores.store_resume import newest_session, resolve_resume

        options = self.options
        project = options.store_project_key()
        continue_recent = bool(kwargs.pop("continue_recent", False))
        resume = options.resume
        if options.fork_session:
            from .store_sessions import fork_session_via_store

            if continue_recent:
                resume = await newest_session(options.session_store, project,
                                              options.load_timeout_ms)
                continue_recent = False
            if resume is not None:
                from ..transcript.errors import SessionNotFoundError

                try:
                    fork = await fork_session_via_store(options.session_store, resume,
                                                        project_key=project,
                                                        new_id=options.session_id)
                    resume = fork.session_id
                except SessionNotFoundError:  # not in the store: the local session's fork
                    resume = self._fork({**kwargs, "resume": resume})
        from ..session.assembly import resolve_agent_dir

        choice = await resolve_resume(
            options.session_store, project, resume=resume, continue_recent=continue_recent,
            timeout_ms=options.load_timeout_ms,
            agent_dir=resolve_agent_dir(kwargs.get("agent_dir"),
                                        kwargs.get("environ") or os.environ),
            cwd=Path(kwargs.get("cwd") or os.getcwd()).expanduser().resolve())
        if choice.resume is None:
            kwargs.pop("resume", None)
            self.options = attrs.evolve(options, continue_conversation=False,
                                        fork_session=False)
        else:
            kwargs["resume"] = choice.resume
        self._resume_choice = choice

    def _attach_mirror(self, session: AgentSession) -> None:
        from ..stores.mirror import SubagentMirrors, attach_mirror, resync_subagents

        options = self.options
        key: Any = {"project_key": options.store_project_key(),
                    "session_id": session.session_id}
        choice = self._resume_choice
        self._mirror = attach_mirror(session, options.session_store, key,
                                     flush_mode=options.session_store_flush,
                                     on_error=self._mirror_error,
                                     known=choice.known if choice is not None else frozenset())
        self._resynced = resync_subagents(
            session, options.session_store, key, flush_mode=options.session_store_flush,
            on_error=self._mirror_error,
            known=choice.children_known if choice is not None else {})
        session.subagent_observers.append(SubagentMirrors(
            options.session_store, key, flush_mode=options.session_store_flush,
            on_error=self._mirror_error, start_soon=lambda run: self._group.start_soon(run)))

    def _mirror_error(self, key: Any, error: str) -> None:
        from .messages import MirrorErrorMessage

        if self.options.stderr is not None:
            self.options.stderr(f"session store mirror: {error}")
        if self._send is not None:
            self._send.send_nowait(MirrorErrorMessage(
                "mirror_error", {"key": dict(key), "error": error}, key=dict(key), error=error))

    @staticmethod
    def _latest(kwargs: Mapping[str, Any]) -> str | None:
        """The latest session of the chosen working directory, or None."""
        from ..transcript import list_sessions

        cwd = Path(kwargs.get("cwd") or os.getcwd()).expanduser().resolve()
        recent = list_sessions(cwd, agent_dir=kwargs.get("agent_dir"))
        return recent[0].session_id if recent else None

    def _fork(self, kwargs: dict[str, Any]) -> str:
        """``fork_session``: resume a copy of the chosen session under a new id."""
        from ..transcript import fork_session

        source = kwargs.get("resume") or self._latest(kwargs)
        assert source is not None  # continue_conversation without a session starts anew
        return fork_session(source, agent_dir=kwargs.get("agent_dir"),
                            new_id=self.options.session_id)

    async def _close_mirror(self, session: AgentSession) -> None:
        """Query exit waits for every scheduled write to the store."""
        from ..stores.mirror import close_mirrors, detach_mirror

        mirror, self._mirror = self._mirror, None
        resynced, self._resynced = self._resynced, []
        try:
            if mirror is not None:
                await detach_mirror(session, mirror)
        finally:
            await close_mirrors(resynced)

