"""Time budgets and error policies around hook calls.

A plugin is code the user did not write. Each implementation therefore runs under a time budget
and its failures (an exception, a timeout or an answer the contract does not allow) are handled
by an error policy chosen per hook and per plugin, so that one broken plugin neither hangs nor
silently steers a session. The policies table below is the documented default; the ``hooks``
settings override it (docs/hooks.md, "Time budgets and error policies").

This module is on the ``--list-plugins`` path: it imports only the standard library and
``errors``; anyio is imported when an awaitable answer actually has to be timed.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, get_args

import attrs

from ..errors import HookAnswerError, HookError, UsageError, docs_url
from ..support.attrs_methods import FrozenFieldsEq

if TYPE_CHECKING:
    from pluggy import HookImpl

OnError = Literal["fail-open", "fail-closed", "raise"]
ON_ERROR: tuple[str, ...] = get_args(OnError)

#: Seconds one implementation may take, unless settings say otherwise.
DEFAULT_BUDGET_S = 60.0

#: Everything that ``settings["hooks"]`` may hold (``max_stop_continuations`` is the loop's).
SETTINGS_KEYS = ("timeout", "timeouts", "on_error", "policies", "max_stop_continuations")

WILDCARD = "*"


@attrs.frozen(repr=False, eq=False, slots=False)
class HookPolicy(FrozenFieldsEq):
    """How one plugin's implementation of one hook is run: its budget and its error policy.

    ``budget_s`` is ``None`` for no budget. ``on_error``: ``fail-open`` reports a diagnostic
    and continues as if the implementation gave no answer; ``fail-closed`` reports it and
    gives the hook's closed answer (``CLOSED_ANSWERS``), or raises for a hook that guards no
    action; ``raise`` raises the error to the caller.
    """

    budget_s: float | None = DEFAULT_BUDGET_S
    on_error: OnError = "raise"


#: The built-in error policy of every hook the facade calls.
DEFAULT_ON_ERROR: Mapping[str, OnError] = {
    "zpi_register_tools": "raise",
    "zpi_tool_overrides": "raise",
    "zpi_register_providers": "raise",
    "zpi_register_commands": "raise",
    "zpi_register_resources": "raise",
    "zpi_register_search_backends": "raise",
    "zpi_prepare_tools": "raise",
    "zpi_instructions": "fail-open",
    "zpi_system_prompt": "raise",
    "zpi_before_request": "raise",
    "zpi_request_options": "fail-open",
    "zpi_before_compact": "fail-open",
    "zpi_after_compact": "fail-open",
    "zpi_session_start": "fail-open",
    "zpi_user_prompt": "fail-closed",
    "zpi_turn_start": "fail-open",
    "zpi_before_tool": "fail-closed",
    "zpi_permission_request": "fail-closed",
    "zpi_after_tool": "fail-open",
    "zpi_tool_failed": "fail-open",
    "zpi_unknown_tool": "fail-open",
    "zpi_turn_end": "fail-open",
    "zpi_stop": "fail-open",
    "zpi_subagent_start": "fail-open",
    "zpi_subagent_stop": "fail-open",
    "zpi_notification": "fail-open",
    "zpi_run_end": "fail-open",
    "zpi_session_end": "fail-open",
    "zpi_event": "fail-open",
}

DEFAULT_POLICIES: Mapping[str, HookPolicy] = {
    hook: HookPolicy(DEFAULT_BUDGET_S, on_error) for hook, on_error in DEFAULT_ON_ERROR.items()
}

#: Hooks that guard an action, and what ``fail-closed`` answers for them. For every other hook
#: there is nothing to close, so ``fail-closed`` raises like ``raise``.
CLOSED_ANSWERS: Mapping[str, str] = {
    "zpi_user_prompt": "the prompt is blocked",
    "zpi_before_tool": "the tool call is denied",
    "zpi_permission_request": "the tool call is denied",
    "zpi_after_tool": "the tool's output is withheld from the model",
    "zpi_stop": "no continuation: the run stops",
    "zpi_subagent_stop": "no continuation: the sub-agent stops",
    "zpi_before_compact": "the compaction is cancelled",
}

#: Hooks outside the policy table, and why.
NOT_GOVERNED: Mapping[str, str] = {
    "zpi_load_plugins": (
        "zpi_load_plugins runs while plugins load, before settings are read: a failure marks "
        "the plugin failed (ZPI_STRICT_PLUGINS=1 makes it an error) and it has no budget"
    ),
}

#: Hooks whose answer is a list (contributions).
LIST_HOOKS = frozenset({
    "zpi_register_tools", "zpi_tool_overrides", "zpi_register_providers",
    "zpi_register_commands", "zpi_register_resources", "zpi_register_search_backends",
    "zpi_prepare_tools",
})

#: Hooks that return nothing; a returned value is a mistake (the plugin expected an effect).
OBSERVER_HOOKS = frozenset({
    "zpi_before_request", "zpi_after_compact", "zpi_turn_start", "zpi_turn_end",
    "zpi_notification", "zpi_run_end", "zpi_session_end", "zpi_event",
})


# ------------------------------------------------------------------------------------ errors


class HookTimeoutError(HookError):
    """An implementation did not answer within its budget; it was cancelled."""

    def __init__(self, plugin: str, hook: str, budget_s: float) -> None:
        cause = TimeoutError(f"no answer within {budget_s:g} s")
        super().__init__(plugin, hook, cause)
        self.args = (
            f"plugin {plugin!r} did not answer {hook} within its budget of {budget_s:g} s and "
            f"was cancelled (make the hook faster, or raise the budget with the setting "
            f"hooks.timeouts: {{{plugin!r}: {{{hook!r}: SECONDS}}}})",
        )
        self.budget_s = budget_s


class HookSettingsError(UsageError):
    """The ``hooks`` settings hold a value the host cannot use; names the settings key."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"setting {key}: {problem} (see "
                         f"{docs_url('hooks', 'time-budgets-and-error-policies')})")
        self.key = key
        self.problem = problem


class FailClosed(Exception):
    """Internal: a ``fail-closed`` failure; the facade turns it into the hook's closed answer."""

    def __init__(self, error: HookError | HookAnswerError) -> None:
        super().__init__(str(error))
        self.error = error

    @property
    def reason(self) -> str:
        return f"{self.error} (policy fail-closed)"


# ------------------------------------------------------------------------------------ settings


def _key(*parts: str) -> str:
    """``hooks.policies["zpi.tools"].zpi_event``: dotted, with names that hold dots quoted."""
    out = parts[0]
    for part in parts[1:]:
        out += f'["{part}"]' if "." in part or not part.isidentifier() else f".{part}"
    return out


def _hook_name(key: str, name: str, *, wildcard: bool) -> str:
    if name == WILDCARD and wildcard:
        return name
    if name in NOT_GOVERNED:
        raise HookSettingsError(key, NOT_GOVERNED[name])
    if name not in DEFAULT_ON_ERROR:
        close = _close_matches(name, list(DEFAULT_ON_ERROR), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        allowed = " or '*'" if wildcard else ""
        raise HookSettingsError(key, f"{name!r} is not a hook{hint}; use a zpi_* hook name"
                                     f"{allowed}")
    return name


def _on_error(key: str, value: Any) -> OnError:
    if value not in ON_ERROR:
        raise HookSettingsError(key, f"must be one of {', '.join(map(repr, ON_ERROR))}, "
                                     f"got {value!r}")
    return value  # type: ignore[no-any-return]


def _budget(key: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
        math.isfinite(value) and value > 0
    ):
        raise HookSettingsError(key, f"must be a number of seconds greater than 0, or null for "
                                     f"no budget, got {value!r}")
    return float(value)


def _table(
    key: str, raw: Any, parse: Callable[[str, Any], Any], *, global_key: str
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``{hook: value, plugin: {hook | "*": value}}`` -> (by hook, by plugin). A mapping value
    names a plugin; anything else is a value for the hook named by the key."""
    if not isinstance(raw, Mapping):
        raise HookSettingsError(key, f"must be an object, got {type(raw).__name__}")
    by_hook: dict[str, Any] = {}
    by_plugin: dict[str, dict[str, Any]] = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not name:
            raise HookSettingsError(key, f"keys must be hook or plugin names, got {name!r}")
        here = _key(key, name)
        if isinstance(value, Mapping):
            if name in DEFAULT_ON_ERROR or name == WILDCARD:
                raise HookSettingsError(here, "a hook takes a single value; an object is for "
                                              "a plugin name")
            by_plugin[name] = {
                _hook_name(_key(here, str(hook)), str(hook), wildcard=True):
                    parse(_key(here, str(hook)), item)
                for hook, item in value.items()
            }
        elif name == WILDCARD:
            raise HookSettingsError(here, f"for every hook, use the setting {global_key}")
        elif name.startswith("zpi_"):
            by_hook[_hook_name(here, name, wildcard=False)] = parse(here, value)
        elif _close_matches(name, list(DEFAULT_ON_ERROR), n=1):
            _hook_name(here, name, wildcard=False)  # raises with "did you mean"
        else:
            raise HookSettingsError(here, f"{name!r} is not a hook; to configure the plugin "
                                          f"{name!r} give an object such as "
                                          '{"zpi_before_tool": ..., "*": ...}')
    return by_hook, by_plugin


def _optional(raw: Mapping[str, Any], key: str) -> Any:
    value = raw.get(key)
    return {} if value is None else value


class HookPolicies:
    """The ``hooks`` settings parsed and validated once; :meth:`policy_for` looks up.

    Most specific wins: plugin and hook, then plugin and ``*``, then hook, then the global
    setting (``on_error`` / ``timeout``), then the built-in default.
    """

    __slots__ = ("_budget", "_cache", "_hook_budget", "_hook_on_error", "_on_error",
                 "_plugin_budget", "_plugin_on_error")

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        raw = (settings or {}).get("hooks", {})
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise HookSettingsError("hooks", f"must be an object, got {type(raw).__name__}")
        unknown = [k for k in raw if k not in SETTINGS_KEYS]
        if unknown:
            close = _close_matches(str(unknown[0]), SETTINGS_KEYS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise HookSettingsError(_key("hooks", str(unknown[0])),
                                    f"unknown setting{hint}; known: {', '.join(SETTINGS_KEYS)}")
        self._budget = _budget("hooks.timeout", raw.get("timeout", DEFAULT_BUDGET_S))
        self._on_error = (None if raw.get("on_error") is None
                          else _on_error("hooks.on_error", raw["on_error"]))
        self._hook_budget, self._plugin_budget = _table(
            "hooks.timeouts", _optional(raw, "timeouts"), _budget, global_key="hooks.timeout")
        self._hook_on_error, self._plugin_on_error = _table(
            "hooks.policies", _optional(raw, "policies"), _on_error, global_key="hooks.on_error")
        continuations = raw.get("max_stop_continuations", 0)
        if isinstance(continuations, bool) or not isinstance(continuations, int) or (
            continuations < 0
        ):
            raise HookSettingsError("hooks.max_stop_continuations",
                                    f"must be a whole number of 0 or more, got {continuations!r}")
        self._cache: dict[tuple[str, str], HookPolicy] = {}

    @property
    def plugins(self) -> frozenset[str]:
        """Plugin names the settings mention (to warn about ones that are not loaded)."""
        return frozenset(self._plugin_budget) | frozenset(self._plugin_on_error)

    def policy_for(self, hook: str, plugin: str) -> HookPolicy:
        cached = self._cache.get((hook, plugin))
        if cached is not None:
            return cached
        if hook not in DEFAULT_ON_ERROR:
            raise KeyError(f"{hook} has no hook policy"
                           + (f": {NOT_GOVERNED[hook]}" if hook in NOT_GOVERNED else ""))
        policy = HookPolicy(
            _lookup(hook, plugin, self._plugin_budget, self._hook_budget, self._budget),
            _lookup(hook, plugin, self._plugin_on_error, self._hook_on_error,
                    self._on_error or DEFAULT_ON_ERROR[hook]),
        )
        self._cache[(hook, plugin)] = policy
        return policy


def _lookup(hook: str, plugin: str, by_plugin: Mapping[str, Mapping[str, Any]],
            by_hook: Mapping[str, Any], default: Any) -> Any:
    mine = by_plugin.get(plugin, {})
    for table, name in ((mine, hook), (mine, WILDCARD), (by_hook, hook)):
        if name in table:
            return table[name]
    return default


DEFAULT_HOOK_POLICIES = HookPolicies()


def policy_for(hook: str, plugin: str, settings: Mapping[str, Any] | None = None) -> HookPolicy:
    """The policy for ``plugin``'s implementation of ``hook`` under ``settings`` (validated:
    HookSettingsError names a bad key)."""
    policies = DEFAULT_HOOK_POLICIES if not settings else HookPolicies(settings)
    return policies.policy_for(hook, plugin)


# ------------------------------------------------------------------------------------ running


#: The attribute a plugin object may carry to say how long some of its implementations need:
#: a mapping of hook name to seconds. A plugin that enforces timeouts of its own inside (the
#: Claude hook engine: each handler's ``timeout``) declares them so that its own, documented
#: timeout handling governs and the kernel budget does not cut it short.
BUDGET_FLOORS_ATTR = "zpi_budget_floors"


def effective_budget(budget_s: float | None, plugin: object, hook: str) -> float | None:
    """``budget_s`` raised to what ``plugin`` declares for ``hook`` (``BUDGET_FLOORS_ATTR``);
    no budget stays no budget."""
    floors = getattr(plugin, BUDGET_FLOORS_ATTR, None)
    if budget_s is None or not floors:
        return budget_s
    floor = floors.get(hook) if isinstance(floors, Mapping) else None
    if isinstance(floor, int | float) and not isinstance(floor, bool) and floor > budget_s:
        return float(floor)
    return budget_s


async def run_impl(
    impl: HookImpl,
    hook: str,
    kwargs: Mapping[str, Any],
    budget_s: float | None,
    *,
    on_overrun: Callable[[float], None] | None = None,
) -> Any:
    """Call one implementation; await its answer within ``budget_s`` seconds.

    An ``async`` implementation that overruns is cancelled and HookTimeoutError is raised. A
    plain function runs in place and cannot be interrupted: when it overruns, ``on_overrun``
    gets the seconds it took and its answer is kept. Any other exception becomes a HookError
    naming the plugin and the hook (cancellation of the caller passes through untouched).
    """
    plugin = impl.plugin_name
    started = time.monotonic()
    try:
        value = impl.function(*[kwargs[name] for name in impl.argnames])
    except Exception as exc:
        raise HookError(plugin, hook, exc) from exc
    # ``None`` (most answers) is checked first: ``inspect.isawaitable`` costs microseconds
    if value is not None and inspect.isawaitable(value):
        return await _await_answer(value, plugin, hook, budget_s)
    if budget_s is not None and on_overrun is not None:
        elapsed = time.monotonic() - started
        if elapsed > budget_s:
            on_overrun(elapsed)
    return value


async def _await_answer(pending: Any, plugin: str, hook: str, budget_s: float | None) -> Any:
    """Await an ``async`` implementation's answer; cancelled at ``budget_s``."""
    timed_out = False
    value = None
    try:
        if budget_s is None:
            value = await pending
        else:
            import anyio

            with anyio.move_on_after(budget_s) as scope:
                value = await pending
            # cancel_called: the budget ran out, even if the coroutine swallowed the
            # cancellation and returned something anyway
            timed_out = scope.cancel_called
    except Exception as exc:
        raise HookError(plugin, hook, exc) from exc
    if timed_out:
        assert budget_s is not None
        raise HookTimeoutError(plugin, hook, budget_s)
    return value


def _close_matches(word: str, choices: Any, n: int = 1) -> list[str]:
    """Did-you-mean candidates (difflib imported only when a setting is wrong)."""
    import difflib

    return difflib.get_close_matches(word, list(choices), n=n)
