"""``fallback_model``: the model used when a request to the session's model fails before any
answer (unreachable, overloaded, an error status after the retries, an unknown model).

The session's provider is wrapped: a request goes to the main model; when it raises a
:class:`~zpi_host.providers.base.ProviderError` before any part of an answer came (retries
announced do not count), the same request goes to the fallback, and so does every later one
of the session (the switch is recorded as a ``model_change`` and said as a warning). An error
after the answer began is the run's error, as without a fallback: what was streamed cannot be
taken back. ``set_model`` replaces the wrapper (the fallback then no longer applies).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, cast

import attrs

from ..errors import UsageError
from ..providers.base import ModelRequest, Provider, ProviderError, Retrying, StreamEvent

if TYPE_CHECKING:
    from ..session.agent_session import AgentSession

__all__ = ["FallbackProvider", "attach_fallback"]


class FallbackProvider:
    """``primary`` until a request to it fails before any answer, ``fallback`` from then on;
    ``on_switch(fallback, error)`` is told once."""

    def __init__(self, primary: Provider, fallback: Provider,
                 on_switch: Callable[[Provider, ProviderError], None]) -> None:
        self.primary, self.fallback, self.on_switch = primary, fallback, on_switch
        self.switched = False

    @property
    def active(self) -> Provider:
        return self.fallback if self.switched else self.primary

    @property
    def name(self) -> str:
        return self.active.name

    @property
    def model(self) -> str:
        return self.active.model

    @property
    def entry(self) -> Any:
        return getattr(self.active, "entry", None)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if not self.switched:
            answered = False
            try:
                async for event in self.primary.stream(request):
                    answered = answered or not isinstance(event, Retrying)
                    yield event
                return
            except ProviderError as exc:
                if answered or exc.started:
                    raise
                self.switched = True
                self.on_switch(self.fallback, exc)
        async for event in self.fallback.stream(attrs.evolve(request,
                                                             model=self.fallback.model)):
            yield event

    async def aclose(self) -> None:
        try:
            await self.primary.aclose()
        finally:
            await self.fallback.aclose()


async def attach_fallback(session: AgentSession, spec: str, env: dict[str, str]) -> None:
    """Wrap ``session``'s provider with the fallback named by ``spec`` (``PROVIDER:MODEL`` or
    a catalog name), made now (a factory does not connect), so that a name no provider serves
    is an error before the first input."""
    from ..providers.catalog import resolve_model
    from ..providers.factories import collect_providers, from_environment

    entry = from_environment(resolve_model(spec, session.settings), {**os.environ, **env})
    primary = session.provider
    if (entry.provider, entry.model) == (primary.name, primary.model):
        raise UsageError(f"fallback_model {spec!r} is the main model; name another model")
    factories = await collect_providers(session.host, session.settings)
    if entry.provider not in factories:
        raise UsageError(f"fallback_model {spec!r}: unknown model provider {entry.provider!r} "
                         f"(installed: {', '.join(sorted(factories)) or 'none'})")
    fallback = factories[entry.provider].create(entry, session.settings)

    def switched(to: Provider, error: ProviderError) -> None:
        session.model_entry = entry
        session.store.append("model_change", provider=to.name, model=to.model)
        session.warnings.append(f"the model {primary.name}:{primary.model} failed ({error}); "
                                f"using the fallback model {to.name}:{to.model} from now on")

    # name and model are read-only here (the active model's): the loop only reads them
    session.provider = cast(Provider, FallbackProvider(primary, fallback, switched))
