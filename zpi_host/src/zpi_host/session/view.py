"""SessionView: what hooks, tools and services may read about a session, and the few
requests they may make of it (context for the model, a warning, an environment variable).

Every method reads or forwards to the session's state
(:class:`~zpi_host.agent.state.SessionState`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agent.state import HistoryView, SessionState
from ..errors import UsageError
from ..providers.messages import Message, Usage

if TYPE_CHECKING:
    from ..agent.context_usage import ContextSize
    from ..contract.diagnostics import PluginInfo
    from .ports import SessionPorts

__all__ = ["HistoryView", "SessionView"]


class SessionView:
    """What hooks and tools may read about a session; they cannot change it through this."""

    __slots__ = ("_s",)

    def __init__(self, session: SessionState) -> None:
        self._s = session

    @property
    def session_id(self) -> str:
        return self._s.session_id

    @property
    def cwd(self) -> Path:
        return self._s.cwd

    @property
    def model(self) -> str:
        return f"{self._s.provider.name}:{self._s.provider.model}"

    @property
    def messages(self) -> Sequence[Message]:
        return HistoryView(self._s.messages)

    @property
    def usage(self) -> Usage:
        return self._s.usage

    @property
    def system_prompt(self) -> str:
        return self._s.system_prompt

    @property
    def is_running(self) -> bool:
        return self._s.is_running

    @property
    def permission_mode(self) -> str:
        return str(self._s.permissions.mode)

    @property
    def prompt_id(self) -> str:
        """A UUID naming the current user prompt (new for each run; "" before the first)."""
        return self._s.prompt_id

    @property
    def skills(self) -> tuple[Any, ...]:
        """The session's skills (``resources.Skill``), for a tool that loads one by name."""
        resources = self._s.resources
        return resources.skills if resources is not None else ()

    @property
    def agent_dir(self) -> Path | None:
        """The host's data folder (``~/.zpi``); None when the session has none."""
        return self._s.agent_dir

    @property
    def spill_dir(self) -> Path | None:
        """The session's private folder for tool output (``fs/spill.py``); None without one."""
        return self._s.spill_dir

    @property
    def transcript_path(self) -> Path | None:
        """The session's JSONL file (None in memory mode)."""
        return self._s.store.path

    @property
    def settings(self) -> Mapping[str, Any]:
        """The session's merged settings, read-only (what the registration hooks saw)."""
        from types import MappingProxyType

        return MappingProxyType(self._s.settings)  # type: ignore[arg-type]

    @property
    def ports(self) -> SessionPorts:
        """How a service reaches the user, the model and the session's records
        (:mod:`zpi_host.session.ports`)."""
        return self._s.ports

    async def notify(self, message: str, title: str | None = None, kind: str = "info") -> None:
        """Raise a notification for the user (``zpi_notification`` plugins deliver it)."""
        await self._s.notify(message, title, kind)

    @property
    def plugins(self) -> tuple[PluginInfo, ...]:
        """Every plugin the host saw (loaded, blocked, failed) and what it declares it
        contributes: how a plugin tells the model which disabled plugin offers a tool."""
        from ..contract.diagnostics import plugin_infos

        return plugin_infos(self._s.host)

    def context_size(self) -> ContextSize:
        """How many tokens the next request holds and the model's context window (what a
        context guard compares before a request); never calls the model."""
        from ..agent.context_usage import context_size

        return context_size(self._s)

    def plugin_state(self, key: str, factory: Callable[[], Any]) -> Any:
        """Per-session state of a plugin under ``key``, made by ``factory()`` on first use
        (plugin objects are shared by every session of a process; their state is not). A
        state with an ``aclose()`` is awaited when the session is disposed."""
        state = self._s.plugin_state
        if key not in state:
            state[key] = factory()
        return state[key]

    @property
    def environment(self) -> Mapping[str, str]:
        """Variables added to the environment of later bash calls (``set_environment``)."""
        return dict(self._s.environment)

    @property
    def hidden_variables(self) -> frozenset[str]:
        """Environment variables the commands this session starts must not get: the
        provider keys, unless ``secrets.pass_to_commands`` passes them."""
        return self._s.hidden_variables

    def redact(self, text: str) -> str:
        """``text`` with the session's provider keys replaced by ``[redacted]`` (for what a
        plugin logs or shows itself; events, warnings and the transcript are redacted
        already)."""
        return self._s.redactor.text(text)

    def add_context(self, text: str | Callable[[], str | None], source: str) -> None:
        """Context for the model at its next turn (before the next model request, or at the
        next run): a ``ContextMessage`` attributed to ``source``, recorded in the
        transcript. For a service reporting something that happened beside the run (a
        background task ended). A callable is asked for the text at delivery; None: nothing
        to say any more (the model learned it meanwhile)."""
        self._s.add_context(text, source)

    def warn(self, message: str) -> None:
        """Tell the user something went wrong without stopping anything (a hook handler that
        timed out, printed invalid output ...): a ``warning`` event at the next turn
        boundary, each distinct message once."""
        self._s.warnings.append(str(message))

    def tell_user(self, message: str, source: str | None = None) -> None:
        """Show the user a message that is not a problem and never reaches the model (a
        Claude Code hook's ``systemMessage``): a ``system`` event at the next turn boundary;
        ``source`` names who says it (the plugin)."""
        self._s.user_messages.append((str(message), None if source is None else str(source)))

    def keep_streams_apart(self, call_id: str) -> None:
        """Ask the tool of the call ``call_id`` (not started yet) to report its stdout and
        stderr apart in the result's ``details`` (the kernel's bash does; what the model
        reads stays the merged output): for a hook that reads them, as Claude's
        ``tool_response.stderr``. Call it from ``zpi_before_tool``."""
        apart = self._s.streams_apart
        if len(apart) < 1024:  # calls that never ran do not pile up
            apart.add(str(call_id))

    def guard_tools(self, guard: Callable[[Any], str | None]) -> Callable[[], None]:
        """Until the returned function is called, ``guard(call)`` sees every allowed tool call
        (a ``ToolCall``: ``name``, ``arguments``) before it runs; a text it returns is the
        call's error result instead of running it (a soft refusal the model reads). Costs
        nothing while no guard is set, unlike a tool hook."""
        guards = self._s.tool_guards
        guards.append(guard)

        def remove() -> None:
            if guard in guards:
                guards.remove(guard)

        return remove

    def set_environment(self, name: str, value: str) -> None:
        """Export ``name=value`` to the bash calls that follow (how a Claude SessionStart hook's
        ``CLAUDE_ENV_FILE`` takes effect). The one change a plugin may make through a view."""
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            raise UsageError(f"invalid environment variable name {name!r}")
        if not isinstance(value, str) or "\0" in value:
            raise UsageError(f"the value of {name} must be a string without NUL characters")
        self._s.environment[name] = value
