"""BuiltinPluginRuntime: the built-in services of one session, and the work they left running.

Plugin modules are shared by every session of a process; a service is per session. The
runtime makes each service once per session (on first use, from the session's frozen
settings and its ports), owns the background work services start (a title request, a
notification command), closes the services that own something (``aclose``: the task
registry stops its processes), and when the host disposes the session (``aclose``, awaited by
``AgentSession.dispose``) cancels and drains it within ``plugins.builtins.drain_timeout``
seconds, reporting what did not finish.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from .settings import drain_timeout

if TYPE_CHECKING:
    import asyncio
    import logging

STATE_KEY = "zpi_builtins.runtime"
T = TypeVar("T")


def logger() -> logging.Logger:
    """The services' logger (``zpi_builtins``); ``logging`` is imported when something is
    first logged, not by every start that loads the services."""
    import logging

    return logging.getLogger("zpi_builtins")


class BuiltinPluginRuntime:
    """The services of one session (a ``SessionView``) and their background tasks."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.settings = session.settings
        self.ports = session.ports
        self._services: dict[str, Any] = {}
        self._tasks: dict[asyncio.Task[Any], str] = {}
        self.closed = False

    def service(self, name: str, factory: Callable[[BuiltinPluginRuntime], T]) -> T:
        """The session's ``name`` service, made by ``factory(runtime)`` the first time."""
        if name not in self._services:
            self._services[name] = factory(self)
        return self._services[name]  # type: ignore[no-any-return]

    def spawn(self, what: str, work: Coroutine[Any, Any, Any]) -> None:
        """Run ``work`` beside the session; a failure is logged, never raised into it."""
        if self.closed:
            work.close()
            return
        import asyncio

        task = asyncio.get_running_loop().create_task(self._guard(what, work))
        self._tasks[task] = what
        task.add_done_callback(self._tasks.pop)

    @staticmethod
    async def _guard(what: str, work: Coroutine[Any, Any, Any]) -> None:
        import asyncio

        try:
            await work
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # INFO, not WARNING: a title that could not be made is no news on the terminal
            logger().info("zpi-builtins: %s failed: %s: %s", what, type(exc).__name__, exc)

    @property
    def pending(self) -> list[str]:
        return sorted(self._tasks.values())

    async def aclose(self) -> None:
        """Called by the host when the session is disposed (every session, sub-agents and
        sessions that never ran included): drain, and warn about what did not finish."""
        left = await self.close()
        if left:
            self.session.warn("built-in services did not finish at session end and were "
                              "cancelled: " + ", ".join(left))

    async def close(self, timeout: float | None = None) -> list[str]:
        """Wait up to ``timeout`` seconds for the background work, cancel what is left and
        return its names (empty: everything finished)."""
        import asyncio

        self.closed = True
        await self._close_services()
        if not self._tasks:
            return []
        limit = drain_timeout(self.settings) if timeout is None else timeout
        tasks = list(self._tasks)
        names = dict(self._tasks)
        _, unfinished = await asyncio.wait(tasks, timeout=limit)
        for task in unfinished:
            task.cancel()
        if unfinished:
            await asyncio.wait(unfinished, timeout=1.0)
        left = sorted(names[t] for t in unfinished)
        if left:
            logger().info("zpi-builtins: cancelled at session end after %.1f s: %s", limit,
                     ", ".join(left))
        return left


    async def _close_services(self) -> None:
        """Services that own something beyond the session (the task registry's processes)
        close first: ``aclose()`` of each service that has one; a failure is logged."""
        for name, service in list(self._services.items()):
            close = getattr(service, "aclose", None)
            if close is None:
                continue
            try:
                await close()
            except Exception as exc:
                logger().warning("zpi-builtins: service %s failed to close: %s: %s", name,
                            type(exc).__name__, exc)


def runtime_for(session: Any) -> BuiltinPluginRuntime:
    """The session's runtime (a ``SessionView``), made on first use."""
    return session.plugin_state(STATE_KEY, lambda: BuiltinPluginRuntime(session))  # type: ignore[no-any-return]
