"""HookCalls: the typed facade over the contract, one method per hook.

Callers never touch ``pm.hook.*``: they call ``host.hooks.before_tool(...)`` and get the
combined, validated answer. Implementations are called one by one in pluggy's call order so
that each answer can be awaited, attributed to its plugin and traced
(``ZPI_TRACE_PLUGINS=1``).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Awaitable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import HookAnswerError, HookError, ZpiError

if TYPE_CHECKING:
    from pluggy import HookImpl

    from .decisions import (
        CombinedCompactDecision,
        CombinedPromptDecision,
        CombinedResultPatch,
        CombinedStopDecision,
        CombinedToolDecision,
        Instruction,
    )
    from .plugins import PluginHost

T = TypeVar("T")

#: Hooks whose presence switches off early execution of streamed read-only tool calls.
TOOL_HOOKS = ("zpi_before_tool", "zpi_after_tool", "zpi_tool_failed")


class Attributed:
    """An answer together with the plugin that gave it (diagnostics and transcripts need it)."""

    __slots__ = ("plugin", "value")

    def __init__(self, plugin: str, value: Any) -> None:
        self.plugin, self.value = plugin, value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Attributed) and (self.plugin, self.value) == (
            other.plugin, other.value)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Attributed({self.plugin!r}, {self.value!r})"


class Diagnostic:
    """A problem with a plugin's answer that was handled (logged) rather than raised."""

    __slots__ = ("hook", "message", "plugin")

    def __init__(self, plugin: str, hook: str, message: str) -> None:
        self.plugin, self.hook, self.message = plugin, hook, message

    def __repr__(self) -> str:
        return f"<Diagnostic {self.plugin} {self.hook}: {self.message}>"


class _LazyDecisions:
    """``decisions`` (attrs answer types and combine rules) imported on first use, so that
    listing plugins does not pay for it."""

    def __getattr__(self, name: str) -> Any:
        from . import decisions

        return getattr(decisions, name)


_d = _LazyDecisions()


def run_sync(awaitable: Awaitable[T] | T) -> T:
    """Finish an awaitable from synchronous code.

    Plain values pass through. A coroutine runs on a fresh asyncio loop, or on one in a worker
    thread when this thread already runs a loop (so an embedding program's loop is never
    re-entered). asyncio is imported only when a coroutine actually arrives.
    """
    if not inspect.isawaitable(awaitable):
        return awaitable
    import asyncio

    async def finish() -> T:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(finish())
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            box["value"] = asyncio.run(finish())
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=worker, name="zpi-run-sync")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


class HookCalls:
    """One method per hook; each returns the combined answer documented in ``hookspecs``."""

    def __init__(self, host: PluginHost) -> None:
        self._host = host
        self._pm = host.pm
        self.diagnostics: list[Diagnostic] = []

    # ------------------------------------------------------------------------- machinery

    def implementations(self, hook: str) -> list[HookImpl]:
        """The implementations of ``hook`` in call order."""
        return list(reversed(getattr(self._pm.hook, hook).get_hookimpls()))

    def has_implementations(self, *hooks: str) -> bool:
        return any(getattr(self._pm.hook, h).get_hookimpls() for h in hooks)

    @property
    def tool_hooks_registered(self) -> bool:
        """True when a tool hook exists: the loop then must not start calls early."""
        return self.has_implementations(*TOOL_HOOKS)

    def report(self, error: HookAnswerError | HookError) -> None:
        self.diagnostics.append(Diagnostic(error.plugin, error.hook, str(error)))
        self._trace(f"{error.hook} <- {error.plugin}: diagnostic: {error}")

    def _trace(self, line: str) -> None:
        if self._host.config.trace:
            from .plugins import trace_stream

            print(f"zpi trace: {line}", file=trace_stream(), flush=True)

    async def _call(self, impl: HookImpl, hook: str, kwargs: Mapping[str, Any]) -> Any:
        try:
            value = impl.function(*[kwargs[name] for name in impl.argnames])
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            self._trace(f"{hook} <- {impl.plugin_name}: raised {type(exc).__name__}: {exc}")
            raise HookError(impl.plugin_name, hook, exc) from exc
        self._trace(f"{hook} <- {impl.plugin_name}: "
                    + ("no answer" if value is None else "answered " + _short(value)))
        return value

    async def _answers(
        self, hook: str, kwargs: Mapping[str, Any], *, isolate: bool = False
    ) -> list[Attributed]:
        """Every implementation's non-None answer, in call order. With ``isolate``, a failing
        implementation is reported as a diagnostic and the others still run."""
        impls = self.implementations(hook)
        self._trace(f"{hook}({', '.join(kwargs)}) -> [{', '.join(i.plugin_name for i in impls)}]")
        out: list[Attributed] = []
        for impl in impls:
            try:
                value = await self._call(impl, hook, kwargs)
            except HookError as exc:
                if not isolate:
                    raise
                self.report(exc)
                continue
            if value is not None:
                out.append(Attributed(impl.plugin_name, value))
        return out

    def call_sync(self, coro: Coroutine[Any, Any, T], *hooks: str) -> T:
        """Drive a facade coroutine from synchronous code (listing plugins). When none of the
        ``hooks`` has an ``async def`` implementation, no event loop is started at all."""
        if any(inspect.iscoroutinefunction(i.function)
               for hook in hooks for i in self.implementations(hook)):
            return run_sync(coro)  # type: ignore[arg-type]
        try:
            coro.send(None)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        coro.close()
        raise RuntimeError(
            f"an implementation of {', '.join(hooks)} returned an awaitable that suspended while "
            "the host was called synchronously; make it `async def` or call the async API"
        )

    async def _flatten(self, hook: str, kwargs: Mapping[str, Any]) -> list[Attributed]:
        out: list[Attributed] = []
        for answer in await self._answers(hook, kwargs):
            if isinstance(answer.value, str | bytes) or not isinstance(answer.value, Sequence):
                raise HookAnswerError(
                    answer.plugin, hook, f"expected a list, got {type(answer.value).__name__}"
                )
            out.extend(Attributed(answer.plugin, item) for item in answer.value)
        return out

    async def _observe(self, hook: str, kwargs: Mapping[str, Any]) -> None:
        await self._answers(hook, kwargs)

    # ------------------------------------------------------------------------- registration

    async def register_tools(self, cwd: Path, settings: Mapping[str, Any]) -> list[Attributed]:
        return await self._flatten("zpi_register_tools", {"cwd": cwd, "settings": settings})

    async def tool_overrides(self, cwd: Path, settings: Mapping[str, Any]) -> list[Attributed]:
        return await self._flatten("zpi_tool_overrides", {"cwd": cwd, "settings": settings})

    async def register_providers(self, settings: Mapping[str, Any]) -> list[Attributed]:
        return await self._flatten("zpi_register_providers", {"settings": settings})

    async def register_commands(self, cwd: Path, settings: Mapping[str, Any]) -> list[Attributed]:
        return await self._flatten("zpi_register_commands", {"cwd": cwd, "settings": settings})

    async def register_resources(
        self, cwd: Path, settings: Mapping[str, Any]
    ) -> list[Attributed]:
        return await self._flatten("zpi_register_resources", {"cwd": cwd, "settings": settings})

    async def prepare_tools(
        self, tools: Sequence[Any], resources: Any, cwd: Path, settings: Mapping[str, Any]
    ) -> list[Attributed]:
        return await self._flatten(
            "zpi_prepare_tools",
            {"tools": tuple(tools), "resources": resources, "cwd": cwd, "settings": settings},
        )

    # ------------------------------------------------------------------------- system prompt

    async def instructions(
        self, cwd: Path, settings: Mapping[str, Any], resources: Any
    ) -> tuple[Instruction, ...]:
        answers = await self._answers(
            "zpi_instructions", {"cwd": cwd, "settings": settings, "resources": resources}
        )
        return _d.collect_instructions(answers, self.report)

    async def system_prompt(
        self, prompt: str, tools: Sequence[Any], instructions: Sequence[Instruction],
        resources: Any,
    ) -> str:
        hook = "zpi_system_prompt"
        for impl in self.implementations(hook):
            kwargs = {"prompt": prompt, "tools": tuple(tools),
                      "instructions": tuple(instructions), "resources": resources}
            value = await self._call(impl, hook, kwargs)
            if value is None:
                continue
            if not isinstance(value, str):
                raise HookAnswerError(impl.plugin_name, hook,
                                      f"expected str or None, got {type(value).__name__}")
            prompt = value
        return prompt

    # ------------------------------------------------------------------------- requests

    async def before_request(self, session: Any, request: Any) -> None:
        """Typed host errors (``ContextOverflowError`` ...) pass through unwrapped so the loop
        can act on them; anything else is a HookError naming the plugin."""
        try:
            await self._observe("zpi_before_request", {"session": session, "request": request})
        except HookError as exc:
            if isinstance(exc.cause, ZpiError):
                raise exc.cause from exc
            raise

    async def request_options(self, session: Any, request: Any) -> dict[str, Any]:
        return _d.merge_options(
            await self._answers("zpi_request_options", {"session": session, "request": request}),
            self.report,
        )

    # ------------------------------------------------------------------------- compaction

    async def before_compact(self, session: Any, preparation: Any) -> CombinedCompactDecision:
        return _d.combine_compact_decisions(await self._answers(
            "zpi_before_compact", {"session": session, "preparation": preparation}
        ))

    async def after_compact(self, session: Any, result: Any) -> None:
        await self._observe("zpi_after_compact", {"session": session, "result": result})

    # ------------------------------------------------------------------------- lifecycle

    async def session_start(self, session: Any, source: str) -> tuple[Attributed, ...]:
        hook = "zpi_session_start"
        return _d.collect_texts(
            await self._answers(hook, {"session": session, "source": source}), hook
        )

    async def user_prompt(self, session: Any, prompt: str) -> CombinedPromptDecision:
        return _d.combine_prompt_decisions(
            await self._answers("zpi_user_prompt", {"session": session, "prompt": prompt})
        )

    async def turn_start(self, session: Any, turn: int) -> None:
        await self._observe("zpi_turn_start", {"session": session, "turn": turn})

    async def before_tool(self, session: Any, call: Any, tool: Any) -> CombinedToolDecision:
        return _d.combine_tool_decisions(await self._answers(
            "zpi_before_tool", {"session": session, "call": call, "tool": tool}
        ))

    async def permission_request(
        self, session: Any, call: Any, tool: Any, reason: str
    ) -> CombinedToolDecision:
        hook = "zpi_permission_request"
        answers = await self._answers(
            hook, {"session": session, "call": call, "tool": tool, "reason": reason}
        )
        # only allow or deny settle a permission question: "ask" counts as no answer
        settled = [a for a in answers if getattr(a.value, "behavior", None) != "ask"]
        return _d.combine_tool_decisions(settled, hook)

    async def after_tool(self, session: Any, call: Any, result: Any) -> CombinedResultPatch:
        return _d.combine_result_patches(await self._answers(
            "zpi_after_tool", {"session": session, "call": call, "result": result}
        ))

    async def tool_failed(self, session: Any, call: Any, result: Any) -> tuple[Attributed, ...]:
        hook = "zpi_tool_failed"
        return _d.collect_texts(
            await self._answers(hook, {"session": session, "call": call, "result": result}), hook
        )

    async def turn_end(self, session: Any, turn: int, message: Any) -> None:
        await self._observe(
            "zpi_turn_end", {"session": session, "turn": turn, "message": message}
        )

    async def stop(self, session: Any, message: Any, continuation: int) -> CombinedStopDecision:
        return _d.combine_stop_decisions(await self._answers(
            "zpi_stop", {"session": session, "message": message, "continuation": continuation}
        ))

    async def subagent_start(
        self, session: Any, agent_type: str, agent_id: str, prompt: str
    ) -> tuple[Attributed, ...]:
        hook = "zpi_subagent_start"
        kwargs = {"session": session, "agent_type": agent_type, "agent_id": agent_id,
                  "prompt": prompt}
        return _d.collect_texts(await self._answers(hook, kwargs), hook)

    async def subagent_stop(
        self, session: Any, agent_type: str, agent_id: str, message: Any, continuation: int
    ) -> CombinedStopDecision:
        hook = "zpi_subagent_stop"
        kwargs = {"session": session, "agent_type": agent_type, "agent_id": agent_id,
                  "message": message, "continuation": continuation}
        return _d.combine_stop_decisions(await self._answers(hook, kwargs), hook)

    async def notification(self, session: Any, message: str, title: str | None,
                           kind: str) -> None:
        await self._observe("zpi_notification", {"session": session, "message": message,
                                                 "title": title, "kind": kind})

    async def session_end(self, session: Any, reason: str) -> None:
        await self._observe("zpi_session_end", {"session": session, "reason": reason})

    async def event(self, session: Any, event: Any) -> None:
        """Observers: a failing one is reported as a diagnostic and does not stop the run."""
        await self._answers("zpi_event", {"session": session, "event": event}, isolate=True)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."




#: Registration hooks whose answers say what a plugin contributes, and the kind they list.
CONTRIBUTION_HOOKS: tuple[tuple[str, str], ...] = (
    ("zpi_register_tools", "tools"),
    ("zpi_tool_overrides", "tool_overrides"),
    ("zpi_register_providers", "providers"),
    ("zpi_register_commands", "commands"),
    ("zpi_register_resources", "resources"),
)


async def collect_contributions(
    calls: HookCalls, cwd: Path, settings: Mapping[str, Any]
) -> tuple[dict[str, dict[str, list[str]]], dict[str, str]]:
    """What each plugin's registration hooks contribute, by plugin and kind, plus the plugins
    whose registration hooks failed (plugin -> reason). Used by diagnostics."""
    found: dict[str, dict[str, list[str]]] = {}
    failed: dict[str, str] = {}
    for hook, kind in CONTRIBUTION_HOOKS:
        kwargs: dict[str, Any] = {"cwd": cwd, "settings": settings}
        for impl in calls.implementations(hook):
            try:
                value = await calls._call(impl, hook, kwargs)
            except HookError as exc:
                failed.setdefault(impl.plugin_name, str(exc))
                continue
            if value is None:
                continue
            if isinstance(value, str | bytes) or not isinstance(value, Sequence):
                failed.setdefault(impl.plugin_name, str(HookAnswerError(
                    impl.plugin_name, hook, f"expected a list, got {type(value).__name__}")))
                continue
            names = found.setdefault(impl.plugin_name, {}).setdefault(kind, [])
            names.extend(str(getattr(item, "name", item)) for item in value)
    return found, failed
