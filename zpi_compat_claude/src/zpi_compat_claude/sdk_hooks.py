"""``hooks={event: [HookMatcher(...)]}`` of ``zpi_host.sdk``: Python callbacks run by this
adapter's engine. The SDK finds :func:`callback_hooks_plugin` through the ``zpi.sdk_hooks``
entry point, so the kernel never imports this distribution.

The Claude adapter (``zpi_compat_claude``) already maps Claude's hook events onto the kernel's
``zpi_*`` hooks, builds their input dicts, matches, combines answers and decodes what an answer
means. :class:`CallbackHooks` reuses all of it and changes one thing: a handler is a Python
callable ``(input, tool_use_id, context) -> dict`` instead of a command, and its dict is decoded
as a command's JSON output would be. Without ``zpi-compat-claude`` installed the option is
refused with ``zpi_host.sdk.UnsupportedOptionError``.
"""

from __future__ import annotations

import inspect
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from zpi_host.errors import UsageError
from zpi_host.sdk.options import HookMatcher
from zpi_host.sdk.unsupported import UnsupportedOptionError

from .hooks.config import (
    DEFAULT_TIMEOUT_S,
    EVENTS,
    CommandHandler,
    HookConfig,
    MatcherGroup,
)
from .hooks.engine import ReadyHandler
from .hooks.matchers import MatcherError, compile_matcher
from .hooks.output import HandlerResult, interpret_answer
from .hooks.plugin import ClaudeHooks

__all__ = ["callback_hooks_plugin"]

#: the Python names of JSON keys that are keywords in Python (claude-agent-sdk's spelling)
_PYTHON_KEYS = {"continue_": "continue", "async_": "async"}


def callback_hooks_plugin(hooks: Mapping[str, Sequence[HookMatcher]]) -> Any:
    """A plugin running ``hooks``; UsageError names a bad event, matcher or callback."""
    callbacks: dict[str, Callable[..., Any]] = {}
    events: dict[str, tuple[Any, ...]] = {}
    for event, matchers in hooks.items():
        if event not in EVENTS:
            raise UsageError(f"hooks: unknown event {event!r}; known: {', '.join(EVENTS)}")
        if isinstance(matchers, HookMatcher) or not isinstance(matchers, Sequence):
            raise UsageError(f"hooks[{event!r}] must be a list of HookMatcher")
        groups = []
        for i, matcher in enumerate(matchers):
            where = f"hooks[{event!r}][{i}]"
            if not isinstance(matcher, HookMatcher):
                raise UsageError(f"{where} must be a HookMatcher, got {matcher!r:.100}")
            if matcher.on_failure not in (None, "continue"):
                raise UnsupportedOptionError("hooks", f"{where}: on_failure "
                                                      f"{matcher.on_failure!r}; only continue")
            try:
                compiled = compile_matcher(matcher.matcher)
            except MatcherError as exc:
                raise UsageError(f"{where}: {exc}") from None
            handlers = []
            for j, callback in enumerate(matcher.hooks):
                if not callable(callback):
                    raise UsageError(f"{where}.hooks[{j}] must be an async callable")
                name = getattr(callback, "__qualname__", type(callback).__name__)
                key = f"python:{event}[{i}].hooks[{j}] {name}"
                callbacks[key] = callback
                handlers.append(CommandHandler(key, timeout_s=matcher.timeout, where=where))
            groups.append(MatcherGroup(compiled, tuple(handlers), where))
        events[event] = tuple(groups)
    folder = Path(tempfile.gettempdir())
    return CallbackHooks(callbacks, name="sdk-hooks", root=folder, hooks=HookConfig(events),
                         data_dir=folder, env={}, substitute=lambda text: text,
                         timeout_s=DEFAULT_TIMEOUT_S)


class CallbackHooks(ClaudeHooks):
    """The Claude engine with Python callbacks as handlers."""

    def __init__(self, callbacks: Mapping[str, Callable[..., Any]], **options: Any) -> None:
        self._callbacks = dict(callbacks)
        super().__init__(**options)

    async def _call_handler(self, event: str, handler: ReadyHandler,
                            payload: Mapping[str, Any], data: bytes,
                            env: Mapping[str, str], cwd: Path) -> HandlerResult:
        import anyio

        callback = self._callbacks[handler.command]
        result = HandlerResult()
        try:
            with anyio.fail_after(handler.timeout_s):
                answer = callback(dict(payload), payload.get("tool_use_id"),
                                  {"signal": None})
                if inspect.isawaitable(answer):
                    answer = await answer
        except TimeoutError:
            result.problems.append(f"timed out after {handler.timeout_s:g} s; the event "
                                   "goes on as if it had not answered")
            return result
        except Exception as exc:
            result.problems.append(f"raised {type(exc).__name__}: {exc}; the event goes "
                                   "on as if it had not answered")
            return result
        if answer is None:
            return result
        if not isinstance(answer, Mapping):
            result.problems.append(f"returned {type(answer).__name__}, not a dict; ignored")
            return result
        decoded = {_PYTHON_KEYS.get(str(k), str(k)): v for k, v in answer.items()}
        if decoded.pop("async", None):
            result.problems.append("asynchronous hook output is not supported; ignored")
            return result
        return interpret_answer(event, decoded)
