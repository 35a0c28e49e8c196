"""A borrowed host session: ``query()`` and ``SDKClient`` driving a session that the
embedding host created with ``create_session`` (its own storage, tools, policy and plugins).

``AgentOptions(host_session=HostSession(session))`` reuses the session's frozen plugin
assembly as it is. The SDK then neither disposes the session nor stops the host's background
tasks, and unsubscribes what it attached when it ends. What is fixed when a session is created
cannot be given again: creation-time options (``can_use_tool``, ``hooks``, ``tools``,
``allowed_tools``, ``model``, ``resume``, ...) are refused with a clear error, and so are the
seed's exclusions: ``session_store`` (the session has its own storage: mirror it where it was
created) and ``persist_session=False`` (the session persists as its host chose).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Mapping
from typing import Any

import attrs

from ..errors import UsageError
from ..support.attrs_methods import FrozenFieldsEq

__all__ = ["HostSession"]

#: the options that belong to the SDK layer, not to the session: allowed with a host session
SDK_LAYER_OPTIONS = frozenset({
    "host_session", "max_budget_usd", "include_partial_messages", "include_hook_events",
    "forward_subagent_text", "verbatim_prompts", "stderr", "debug_stderr", "max_buffer_size",
    "load_timeout_ms", "client_app", "user", "extra_args", "cli_path",
})
#: why an option cannot be given with a borrowed session, where the generic reason says less
_REASONS = {
    "can_use_tool": "tool policy is fixed when the session is created: give the approver to "
                    "create_session(can_use_tool=...) in the host",
    "hooks": "hooks are part of the session's frozen plugin assembly: register them on the "
             "host's plugin host before create_session",
    "session_store": "the host session has its own storage (its SessionManager, or native "
                     "storage): mirror it where the host created it",
    "persist_session": "the host session persists as its host chose when it created it",
}


@attrs.frozen(repr=False, eq=False, slots=False)
class HostSession(FrozenFieldsEq):
    """What the embedding host lends: the session, its manager (its transcript owner), its
    model runtime (the provider) and its prepared input (text the host already built, run as
    the first input when ``query()``'s prompt is empty). ``manager`` and ``model_runtime``
    default to the session's own and must be them when given."""

    session: Any
    manager: Any = None
    model_runtime: Any = None
    prepared_input: str | None = None

    def __attrs_post_init__(self) -> None:
        from ..session.agent_session import AgentSession

        if not isinstance(self.session, AgentSession):
            raise UsageError(f"HostSession needs the AgentSession create_session returned, "
                             f"got {type(self.session).__name__}")
        if self.session._disposed:
            raise UsageError("the host session was disposed; lend a live one")
        if self.manager is not None and self.manager is not self.session.store:
            raise UsageError("HostSession.manager must be the session's own (session.store)")
        if self.model_runtime is not None and self.model_runtime is not self.session.provider:
            raise UsageError("HostSession.model_runtime must be the session's own "
                             "(session.provider)")
        if self.prepared_input is not None and not isinstance(self.prepared_input, str):
            raise UsageError("HostSession.prepared_input must be text")


def check_borrowed(options: Any) -> None:
    """Refuse every option the borrowed session fixed already (one UsageError naming them)."""
    if not isinstance(options.host_session, HostSession):
        raise UsageError(f"host_session must be a zpi_host.sdk.host.HostSession, got "
                         f"{type(options.host_session).__name__}")
    given = []
    for field in attrs.fields(type(options)):
        if field.name in SDK_LAYER_OPTIONS:
            continue
        default = field.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory()  # type: ignore[attr-defined]
        if getattr(options, field.name) != default:
            given.append(field.name)
    if given:
        reasons = [f"{name} ({_REASONS.get(name, 'fixed when the session was created')})"
                   for name in given]
        raise UsageError("with host_session the SDK drives a session the host created, so "
                         "these options cannot be given: " + "; ".join(reasons))


def attach_observer(session: Any, observer: Any) -> Callable[[], None]:
    """Watch the session's sub-agents for as long as the SDK drives it; returns the undo."""
    session.subagent_observers.append(observer)
    return lambda: session.subagent_observers.remove(observer)


async def give_back(session: Any, own_input_running: bool,
                    detach: list[Callable[[], None]]) -> None:
    """End the SDK's use of a borrowed session: the input it runs (if any) stopped, waiting
    until it recorded its interrupted calls, then what it attached undone. The session stays
    open, its tasks running: the host's."""
    if own_input_running and session.is_running:
        session.abort()
        if session._run_done is not None:
            await session._run_done.wait()
    for undo in detach:
        undo()


def first_input(host: HostSession, prompts: str | AsyncIterable[Mapping[str, Any]]
                ) -> str | AsyncIterable[Mapping[str, Any]]:
    """``query()``'s input with a borrowed session: an empty prompt runs the host's prepared
    input; both given is an error."""
    if host.prepared_input is None:
        return prompts
    if prompts != "":
        raise UsageError("the host session has a prepared input and query() got a prompt "
                         "too; give the input once (prompt='' runs the prepared one)")
    return host.prepared_input
