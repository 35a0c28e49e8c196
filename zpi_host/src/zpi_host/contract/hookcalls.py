"""HookCalls: the typed facade over the contract, one method per hook.

Callers never touch ``pm.hook.*``: they call ``host.hooks.before_tool(...)`` and get the
combined, validated answer. Implementations are called one by one in pluggy's call order so
that each answer can be awaited within its time budget, validated, attributed to its plugin and
traced (``ZPI_TRACE_PLUGINS=1``). A failure of one implementation is handled by its error
policy (``hookrunner``): reported and skipped, turned into the hook's closed answer, or raised.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..errors import HookAnswerError, HookError, RunStopped, ZpiError
from .attributed import Attributed
from .hookrunner import (
    CLOSED_ANSWERS,
    DEFAULT_HOOK_POLICIES,
    LIST_HOOKS,
    OBSERVER_HOOKS,
    FailClosed,
    HookPolicies,
    HookPolicy,
    effective_budget,
    run_impl,
)

if TYPE_CHECKING:
    import pluggy
    from pluggy import HookImpl

    from .decisions import (
        CombinedCompactDecision,
        CombinedPromptDecision,
        CombinedResultPatch,
        CombinedStopDecision,
        CombinedToolDecision,
        Instruction,
    )

T = TypeVar("T")


class HookHost(Protocol):
    """What the facade needs of the plugin host (``PluginHost``): its pluggy manager, the
    records of the plugins it holds (their names) and its configuration (``trace``)."""

    @property
    def pm(self) -> pluggy.PluginManager: ...

    @property
    def records(self) -> Iterable[Any]: ...

    @property
    def config(self) -> Any: ...


def trace_stream() -> Any:
    """Where ``ZPI_TRACE_PLUGINS`` output goes (stderr, looked up late so tests can capture)."""
    return sys.stderr

#: Hooks whose presence switches off early execution of streamed read-only tool calls.
TOOL_HOOKS = ("zpi_before_tool", "zpi_after_tool", "zpi_tool_failed")


#: How many diagnostics a facade keeps (a broken ``zpi_event`` observer fails on every event).
MAX_DIAGNOSTICS = 1000


class Diagnostic:
    """A plugin failure or bad answer that was handled (logged) rather than raised.

    ``policy`` is the error policy that handled it (``fail-open`` or ``fail-closed``), or
    ``None`` for a warning that changed nothing (a plain function that overran its budget).
    """

    __slots__ = ("hook", "message", "plugin", "policy")

    def __init__(self, plugin: str, hook: str, message: str, policy: str | None = None) -> None:
        self.plugin, self.hook, self.message, self.policy = plugin, hook, message, policy

    def __repr__(self) -> str:
        return f"<Diagnostic {self.plugin} {self.hook} ({self.policy}): {self.message}>"


class _LazyDecisions:
    """``decisions`` (attrs answer types and combine rules) imported on first use, so that
    listing plugins does not pay for it."""

    def __getattr__(self, name: str) -> Any:
        from . import decisions

        value = getattr(decisions, name)
        setattr(self, name, value)  # found on the instance from now on, without this call
        return value


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
    """One method per hook; each returns the combined answer documented in ``hookspecs``.

    Budgets and error policies come from the ``hooks`` settings given to :meth:`configure`
    (built-in defaults until then). ``diagnostics`` holds the failures that were reported
    rather than raised, newest last (at most ``MAX_DIAGNOSTICS``).
    """

    def __init__(self, host: HookHost, policies: HookPolicies | None = None) -> None:
        self._host = host
        self._pm = host.pm
        self.policies = policies if policies is not None else DEFAULT_HOOK_POLICIES
        self.diagnostics: deque[Diagnostic] = deque(maxlen=MAX_DIAGNOSTICS)

    # ------------------------------------------------------------------------- settings

    def configure(self, settings: Mapping[str, Any] | None) -> list[str]:
        """Apply the ``hooks`` settings (budgets, error policies) from now on.

        Called by session assembly with the session's frozen settings, before the first hook
        call. Raises HookSettingsError (a UsageError naming the key) for a bad value. Returns
        warnings for plugin names the settings mention that this host has never seen.
        """
        self.policies = HookPolicies(settings)
        return self._unknown_plugins(self.policies)

    def configured(self, settings: Mapping[str, Any] | None) -> HookCalls:
        """A facade over the same plugins with its own settings and diagnostics (for a host
        shared by sessions whose settings differ)."""
        return HookCalls(self._host, HookPolicies(settings))

    def _unknown_plugins(self, policies: HookPolicies) -> list[str]:
        known = {record.name for record in self._host.records}
        return [f"the hooks settings name the plugin {name!r}, which is not installed; its "
                "budgets and policies apply to nothing"
                for name in sorted(policies.plugins - known)]

    def policy_for(self, hook: str, plugin: str) -> HookPolicy:
        """The budget and error policy of ``plugin``'s implementation of ``hook``."""
        policies = self.policies
        return policies._cache.get((hook, plugin)) or policies.policy_for(hook, plugin)

    # ------------------------------------------------------------------------- machinery

    def implementations(self, hook: str) -> list[HookImpl]:
        """The implementations of ``hook`` in call order."""
        return list(reversed(getattr(self._pm.hook, hook).get_hookimpls()))

    def has_implementations(self, *hooks: str) -> bool:
        """Whether any of ``hooks`` has an implementation now (asked per call, so it follows
        registration; the one-name form, asked several times per tool call, skips building
        a generator)."""
        if len(hooks) == 1:
            return bool(getattr(self._pm.hook, hooks[0]).get_hookimpls())
        return any(getattr(self._pm.hook, h).get_hookimpls() for h in hooks)

    @property
    def tool_hooks_registered(self) -> bool:
        """True when a tool hook exists: the loop then must not start calls early."""
        return self.has_implementations(*TOOL_HOOKS)

    def report(self, error: HookAnswerError | HookError, policy: str | None = None) -> None:
        """Record a handled failure as a diagnostic (and trace it)."""
        self._diagnose(Diagnostic(error.plugin, error.hook, str(error), policy))

    def _diagnose(self, diagnostic: Diagnostic) -> None:
        self.diagnostics.append(diagnostic)
        self._trace(f"{diagnostic.hook} <- {diagnostic.plugin}: diagnostic"
                    f"{f' ({diagnostic.policy})' if diagnostic.policy else ''}: "
                    f"{diagnostic.message}")

    def _trace(self, line: str) -> None:
        if self._host.config.trace:
            print(f"zpi trace: {line}", file=trace_stream(), flush=True)

    async def _call(self, impl: HookImpl, hook: str, kwargs: Mapping[str, Any]) -> Any:
        """One implementation's raw answer, within its budget; HookError (HookTimeoutError)
        when it raises or overruns."""
        plugin = impl.plugin_name
        budget = effective_budget(self.policy_for(hook, plugin).budget_s, impl.plugin, hook)
        tracing = self._host.config.trace
        try:
            value = await run_impl(impl, hook, kwargs, budget, on_overrun=lambda seconds:
                                   self._overran(plugin, hook, budget or 0.0, seconds))
        except HookError as exc:
            if tracing:
                self._trace(f"{hook} <- {plugin}: raised {type(exc.cause).__name__}: "
                            f"{exc.cause}")
            raise
        if tracing:  # formatting an answer is not free: only when someone reads it
            self._trace(f"{hook} <- {plugin}: "
                        + ("no answer" if value is None else "answered " + _short(value)))
        return value

    def _overran(self, plugin: str, hook: str, budget: float, seconds: float) -> None:
        self._diagnose(Diagnostic(plugin, hook, (
            f"plugin {plugin!r} took {seconds:.1f} s in {hook}, over its budget of "
            f"{budget:g} s; a plain function cannot be interrupted, so its answer was used "
            "(make it `async def` to be held to the budget)")))

    def _check(self, hook: str, plugin: str, value: Any) -> None:
        """HookAnswerError when ``value`` (not None) is not an answer ``hook`` allows."""
        if hook in LIST_HOOKS:
            if isinstance(value, str | bytes) or not isinstance(value, Sequence):
                raise HookAnswerError(plugin, hook,
                                      f"expected a list, got {type(value).__name__}")
        elif hook in OBSERVER_HOOKS:
            raise HookAnswerError(plugin, hook, (
                f"this hook returns nothing, got {type(value).__name__}: {value!r:.200}"
                + ("; raise a typed error to stop the request"
                   if hook == "zpi_before_request" else "")))
        elif hook == "zpi_system_prompt":
            if not isinstance(value, str):
                raise HookAnswerError(plugin, hook,
                                      f"expected str or None, got {type(value).__name__}")
        elif hook != "zpi_instructions":  # fragments are checked one by one when collected
            _d.check_answer(hook, plugin, value)

    def _handle(self, error: HookError | HookAnswerError, hook: str) -> None:
        """Apply the failing plugin's error policy: return (fail-open: skip its answer), raise
        FailClosed (the caller gives the hook's closed answer), or raise the error."""
        policy = self.policy_for(hook, error.plugin).on_error
        if policy == "raise" or (policy == "fail-closed" and hook not in CLOSED_ANSWERS):
            raise error
        self.report(error, policy)
        if policy == "fail-closed":
            raise FailClosed(error)

    def _reporter(self, hook: str) -> Callable[[HookAnswerError], None]:
        """A ``report`` callback for the combine functions that drop single bad items."""
        return lambda error: self._handle(error, hook)

    async def _answers(
        self, hook: str, kwargs: Mapping[str, Any],
        *, passthrough: tuple[type[BaseException], ...] = (),
    ) -> list[Attributed]:
        """Every implementation's valid non-None answer, in call order, each failure handled
        by its plugin's policy. An exception of a ``passthrough`` type is the hook's way of
        answering and propagates unwrapped whatever the policy."""
        impls = self.implementations(hook)
        if self._host.config.trace:
            self._trace(f"{hook}({', '.join(kwargs)}) -> "
                        f"[{', '.join(i.plugin_name for i in impls)}]")
        out: list[Attributed] = []
        for impl in impls:
            try:
                value = await self._call(impl, hook, kwargs)
                if value is not None:
                    self._check(hook, impl.plugin_name, value)
            except HookError as exc:
                if isinstance(exc.cause, RunStopped) or (
                        passthrough and isinstance(exc.cause, passthrough)):
                    raise exc.cause from exc
                self._handle(exc, hook)
                continue
            except HookAnswerError as exc:
                self._handle(exc, hook)
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

    async def register_search_backends(self, settings: Mapping[str, Any]) -> list[Attributed]:
        return await self._flatten("zpi_register_search_backends", {"settings": settings})

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
        hook = "zpi_instructions"
        answers = await self._answers(
            hook, {"cwd": cwd, "settings": settings, "resources": resources}
        )
        return _d.collect_instructions(answers, self._reporter(hook))

    async def system_prompt(
        self, prompt: str, tools: Sequence[Any], instructions: Sequence[Instruction],
        resources: Any,
    ) -> str:
        hook = "zpi_system_prompt"
        for impl in self.implementations(hook):
            kwargs = {"prompt": prompt, "tools": tuple(tools),
                      "instructions": tuple(instructions), "resources": resources}
            try:
                value = await self._call(impl, hook, kwargs)
                if value is not None:
                    self._check(hook, impl.plugin_name, value)
            except (HookError, HookAnswerError) as exc:
                self._handle(exc, hook)  # fail-open: the prompt stays as it was
                continue
            if value is not None:
                prompt = value
        return prompt

    # ------------------------------------------------------------------------- requests

    async def before_request(self, session: Any, request: Any) -> None:
        """Typed host errors (``ContextOverflowError`` ...) pass through unwrapped, whatever
        the policy, so the loop can act on them; anything else is a HookError naming the
        plugin, handled by its policy."""
        await self._answers("zpi_before_request", {"session": session, "request": request},
                            passthrough=(ZpiError,))

    async def request_options(self, session: Any, request: Any) -> dict[str, Any]:
        hook = "zpi_request_options"
        return _d.merge_options(
            await self._answers(hook, {"session": session, "request": request}),
            self._reporter(hook),
        )

    # ------------------------------------------------------------------------- compaction

    async def before_compact(self, session: Any, preparation: Any) -> CombinedCompactDecision:
        hook = "zpi_before_compact"
        try:
            answers = await self._answers(hook, {"session": session, "preparation": preparation})
        except FailClosed as closed:
            return _closed(hook, closed)
        return _d.combine_compact_decisions(answers)

    async def after_compact(self, session: Any, result: Any) -> None:
        await self._observe("zpi_after_compact", {"session": session, "result": result})

    # ------------------------------------------------------------------------- lifecycle

    async def session_start(self, session: Any, source: str) -> tuple[Attributed, ...]:
        hook = "zpi_session_start"
        return _d.collect_texts(
            await self._answers(hook, {"session": session, "source": source}), hook
        )

    async def user_prompt(self, session: Any, prompt: str) -> CombinedPromptDecision:
        hook = "zpi_user_prompt"
        try:
            answers = await self._answers(hook, {"session": session, "prompt": prompt})
        except FailClosed as closed:
            return _closed(hook, closed)
        return _d.combine_prompt_decisions(answers)

    async def turn_start(self, session: Any, turn: int) -> None:
        await self._observe("zpi_turn_start", {"session": session, "turn": turn})

    async def before_tool(self, session: Any, call: Any, tool: Any) -> CombinedToolDecision:
        hook = "zpi_before_tool"
        try:
            answers = await self._answers(hook, {"session": session, "call": call, "tool": tool})
        except FailClosed as closed:
            return _closed(hook, closed)
        return _d.combine_tool_decisions(answers, hook)

    async def permission_request(
        self, session: Any, call: Any, tool: Any, reason: str
    ) -> CombinedToolDecision:
        hook = "zpi_permission_request"
        try:
            answers = await self._answers(
                hook, {"session": session, "call": call, "tool": tool, "reason": reason}
            )
        except FailClosed as closed:
            return _closed(hook, closed)
        # only allow or deny settle a permission question: "ask" counts as no answer
        settled = [a for a in answers if getattr(a.value, "behavior", None) != "ask"]
        return _d.combine_tool_decisions(settled, hook)

    async def after_tool(self, session: Any, call: Any, result: Any) -> CombinedResultPatch:
        hook = "zpi_after_tool"
        try:
            answers = await self._answers(
                hook, {"session": session, "call": call, "result": result})
        except FailClosed as closed:
            return _closed(hook, closed)
        return _d.combine_result_patches(answers)

    async def tool_failed(self, session: Any, call: Any, result: Any) -> tuple[Attributed, ...]:
        hook = "zpi_tool_failed"
        return _d.collect_texts(
            await self._answers(hook, {"session": session, "call": call, "result": result}), hook
        )

    async def unknown_tool(self, session: Any, call: Any, available: Sequence[str]
                           ) -> tuple[Attributed, ...]:
        hook = "zpi_unknown_tool"
        return _d.collect_texts(await self._answers(
            hook, {"session": session, "call": call, "available": available}), hook)

    async def turn_end(self, session: Any, turn: int, message: Any) -> None:
        await self._observe(
            "zpi_turn_end", {"session": session, "turn": turn, "message": message}
        )

    async def stop(self, session: Any, message: Any, continuation: int) -> CombinedStopDecision:
        hook = "zpi_stop"
        try:
            answers = await self._answers(
                hook, {"session": session, "message": message, "continuation": continuation})
        except FailClosed as closed:
            return _closed(hook, closed)
        return _d.combine_stop_decisions(answers)

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
        try:
            answers = await self._answers(hook, kwargs)
        except FailClosed as closed:
            return _closed(hook, closed)
        return _d.combine_stop_decisions(answers, hook)

    async def notification(self, session: Any, message: str, title: str | None,
                           kind: str) -> None:
        await self._observe("zpi_notification", {"session": session, "message": message,
                                                 "title": title, "kind": kind})

    async def run_end(self, session: Any, result: Any) -> None:
        await self._observe("zpi_run_end", {"session": session, "result": result})

    async def session_end(self, session: Any, reason: str) -> None:
        await self._observe("zpi_session_end", {"session": session, "reason": reason})

    async def event(self, session: Any, event: Any) -> None:
        """Observers: by default (``fail-open``) a failing one is reported as a diagnostic and
        does not stop the run; under ``raise`` its HookError stops it."""
        await self._observe("zpi_event", {"session": session, "event": event})


def _closed(hook: str, closed: FailClosed) -> Any:
    return _d.closed_answer(hook, closed.error.plugin, closed.reason)


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
            names.extend(_label(item) for item in value)
    return found, failed


def _label(item: Any) -> str:
    """How a contribution is named in listings: its name, else its folder (a resource
    source), else its text."""
    name = getattr(item, "name", None)
    if isinstance(name, str):
        return name
    root = getattr(item, "root", None)
    return str(root) if root is not None else str(item)
