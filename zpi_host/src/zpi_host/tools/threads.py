"""Where a tool's ``execute`` runs. A synchronous tool that is read-only and concurrency-safe
runs in a worker thread: on the event loop it would block everything else, and parallel calls
would run one after another. Other synchronous tools (they run alone anyway) and async tools
run on the loop.

What a threaded tool may use of its :class:`~zpi_host.tools.base.ToolContext`: ``update``
(progress is handed to the loop), ``file_state`` (it has a lock), the paths, settings and
lookups. An abort does not wait for a threaded call: the call is recorded as interrupted at
once and its thread's late result is dropped (read-only tools have nothing to undo).
"""

from __future__ import annotations

import contextlib
import inspect
import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import attrs

from .base import Tool, ToolContext, ToolUpdate, no_update


def runs_in_thread(tool: Tool) -> bool:
    """True for a synchronous, read-only, concurrency-safe tool."""
    meta = tool.metadata
    return meta.read_only and meta.concurrency_safe and not _is_async(tool.execute)


async def execute(tool: Tool, arguments: Any, ctx: ToolContext) -> Any:
    """``tool.execute(arguments, ctx)``, awaited when it returns an awaitable; in a worker
    thread when :func:`runs_in_thread`."""
    if runs_in_thread(tool):
        if ctx.on_update is not no_update:  # progress has a receiver: hand it to the loop
            ctx = attrs.evolve(ctx, on_update=_to_loop(ctx.on_update))
        value = await anyio.to_thread.run_sync(tool.execute, arguments, ctx,
                                               abandon_on_cancel=True)
    else:
        value = tool.execute(arguments, ctx)
    return await value if inspect.isawaitable(value) else value


def _is_async(fn: Any) -> bool:
    call = getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def _to_loop(on_update: Callable[[ToolUpdate], None]) -> Callable[[ToolUpdate], None]:
    """``on_update`` made callable from any thread: it runs on the event loop. Progress
    after the loop has gone (an abandoned call) is dropped."""
    token = anyio.lowlevel.current_token()
    loop_thread = threading.get_ident()

    def update(value: ToolUpdate) -> None:
        if threading.get_ident() == loop_thread:
            on_update(value)
            return
        with contextlib.suppress(RuntimeError):
            anyio.from_thread.run_sync(on_update, value, token=token)
    return update
