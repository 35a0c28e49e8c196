"""The controls of an SDKClient while it is connected: interrupt, permission mode, model,
context usage, background tasks and the server info of the ``init`` message.

A mixin of :class:`~.client.SDKClient`; it shares the client's state.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .accounting import context_usage_dict
from .errors import TaskNotConnectedError
from .options import PERMISSION_MODES

if TYPE_CHECKING:
    from ..agent.file_checkpoints import RewindReport
    from ..session.agent_session import AgentSession
    from .options import AgentOptions

__all__ = ["MODE_RULE_SOURCE", "ClientControls"]

#: where the mode allowances of ``acceptEdits`` come from (removed when the mode changes)
MODE_RULE_SOURCE = "permission mode acceptEdits"


class ClientControls:
    """Requests a program makes of a connected client between or during inputs."""

    options: AgentOptions
    _session: AgentSession | None
    _mode: str
    _translator: Any
    #: (provider, catalog entry) the session started with: what ``set_model(None)`` restores
    _started_model: tuple[Any, Any]

    if TYPE_CHECKING:  # the client's own, declared for the type checker
        @property
        def session(self) -> AgentSession: ...

    async def rewind_files(self, user_message_id: str) -> RewindReport:
        """Put the files a tool changed since user message ``user_message_id`` back as they
        were then (a file created since is deleted); needs ``enable_file_checkpointing=True``.
        Returns what was restored (claude-agent-sdk returns None)."""
        return self.session.rewind_files(user_message_id)

    async def interrupt(self) -> None:
        """Stop the input that runs now; its result comes with ``error_during_execution``."""
        self.session.abort()

    async def set_permission_mode(self, mode: str) -> None:
        """Change the permission mode for the calls that follow."""
        self._apply_mode(mode)

    def _apply_mode(self, mode: str) -> None:
        if mode not in PERMISSION_MODES:
            raise UsageError(f"unknown permission mode {mode!r}; use one of "
                             f"{', '.join(PERMISSION_MODES)}")
        from ..permissions import parse_rule

        policy = self.session.permissions if self._session is not None else None
        self._mode = mode
        if policy is None:
            return
        kernel, extra = PERMISSION_MODES[mode]
        policy.mode = kernel  # type: ignore[assignment]
        policy.rules.allow[:] = [r for r in policy.rules.allow if r.source != MODE_RULE_SOURCE]
        for rule in extra:
            policy.rules.add("allow", parse_rule(rule, source=MODE_RULE_SOURCE))

    async def set_model(self, model: str | None = None) -> None:
        """Use ``model`` (``PROVIDER:MODEL`` or a catalog name) from the next request on;
        None: the model the session started with, wherever it came from (the options,
        settings, ``ZPI_MODEL``, the resumed session)."""
        from ..providers.catalog import resolve_model
        from ..providers.factories import from_environment

        session = self.session
        if session.is_running:
            raise UsageError("set_model: wait for the current response to finish")
        started_provider, started_entry = self._started_model
        if model is None:
            if session.provider is started_provider:
                return  # already the model it started with
            if started_provider is self.options.provider or started_entry is None:
                await self._use_model(started_provider, started_entry)
                return
            entry = started_entry
        else:
            environ = {**os.environ, **{str(k): str(v) for k, v in self.options.env.items()}}
            entry = from_environment(resolve_model(model, session.settings), environ)
        await self._use_model(await self._provider_for(entry), entry)

    async def _provider_for(self, entry: Any) -> Any:
        from ..providers.factories import collect_providers

        session = self.session
        factories = await collect_providers(session.host, session.settings)
        if entry.provider not in factories:
            raise UsageError(f"unknown model provider {entry.provider!r} (installed: "
                             f"{', '.join(sorted(factories)) or 'none'})")
        return factories[entry.provider].create(entry, session.settings)

    async def _use_model(self, provider: Any, entry: Any) -> None:
        """Switch the session to ``provider``; the one replaced is closed unless the program
        gave it (``options.provider``) or it is the one the session started with."""
        session = self.session
        old, session.provider, session.model_entry = session.provider, provider, entry
        session.store.append("model_change", provider=provider.name, model=provider.model)
        if old is not self.options.provider and old is not self._started_model[0]:
            await old.aclose()

    async def get_context_usage(self) -> dict[str, Any]:
        """How full the context is; never calls the model."""
        session = self.session
        return context_usage_dict(session.get_context_usage(), session.view.model)

    async def stop_task(self, task_id: str) -> None:
        """Stop a background task of this session (the registry ``TaskOutput``/``TaskStop``
        use) and wait until its processes are gone; its ``TaskNotificationMessage``
        (status ``stopped``) is on the stream. Stopping a task that already ended succeeds.
        An unknown id or another session's task raises :class:`~zpi_host.session.ports.TaskError`
        (``UnknownTaskError`` for an unknown one); after ``disconnect`` too."""
        if self._session is None:
            raise TaskNotConnectedError(
                f"stop_task({task_id!r}): the client is not connected (after disconnect its "
                "tasks were stopped with its session)")
        await self._session.ports.tasks.stop(task_id, "stopped by stop_task")

    async def get_server_info(self) -> dict[str, Any]:
        """What the ``init`` system message says, and ``commands`` as claude-agent-sdk's
        initialize answer has them (``name``, ``description``, ``argumentHint``)."""
        info = dict(self._translator.init_message(self._mode).data)
        resources = self.session.resources
        info["commands"] = [{"name": c.name, "description": c.description,
                             "argumentHint": c.argument_hint or ""}
                            for c in (resources.commands if resources else ())]
        return info
