"""Writes that do not hold the event loop.

Many sessions share one event loop; a write that waits (a database's round trip in native
storage, an fsync) would stop every other session's stream for as long as it takes. The loop
awaits such writes here instead: each runs in a worker thread, one at a time per session and in
the order asked, shielded from cancellation (a record asked for is committed, or has failed,
before the caller goes on, exactly as with a direct call: an acknowledged record is durable and
the write barrier holds). ``on_commit`` callbacks (the session store mirror) still run on the
loop, after the write. A write that does not block (a JSONL line to the page cache) runs in
place, and so does a JSONL session's fsync while it stays fast: a thread hop would cost more
than it saves.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .store import SessionManager

__all__ = ["commit", "make_durable"]

T = TypeVar("T")


async def commit(manager: SessionManager, write: Callable[..., T], *args: Any) -> T:
    """``write(*args)`` (one of ``manager``'s appends), in a worker thread when the manager's
    writes block."""
    if not manager.writes_block:
        return write(*args)
    return await _in_thread(manager, write, *args)


#: an fsync that usually takes less than this (seconds) runs in place: handing it to a thread
#: costs the loop about as much (measured: 0.5 to 1 ms on a loaded 2-core machine)
INLINE_SYNC = 0.0005


async def make_durable(manager: SessionManager) -> None:
    """``manager.sync()`` (the end of a turn's fsync), when there is one to do: in place while
    this session's fsyncs are fast (a page cache, a fast disk), else in a worker thread. The
    choice follows a running average of how long they took."""
    if not manager.sync_pending:
        return

    def timed() -> float:
        started = time.perf_counter()
        manager.sync()
        return time.perf_counter() - started

    if manager._sync_seconds < INLINE_SYNC:
        took = timed()
    else:
        took = await _in_thread(manager, timed)
    manager._sync_seconds = 0.8 * manager._sync_seconds + 0.2 * took


async def _in_thread(manager: SessionManager, write: Callable[..., T], *args: Any) -> T:
    import anyio
    import anyio.to_thread

    from .store import worker

    # the order is taken now, before any checkpoint: writes run in the order they were asked
    # for, exactly as direct calls would (a task started meanwhile cannot overtake)
    previous, done = manager._order, anyio.Event()
    manager._order = done
    deferred: list[tuple[Callable[[Any, bytes], None], Any, bytes]] = []

    def run() -> T:
        worker.deferred = deferred
        try:
            return write(*args)
        finally:
            worker.deferred = None

    try:
        with anyio.CancelScope(shield=True):
            if previous is not None:
                await previous.wait()
            # a limiter of its own: a commit never waits behind other threaded work (a slow
            # read-only tool holding the shared pool's threads)
            result = await anyio.to_thread.run_sync(run, limiter=_limiter(manager))
    finally:
        done.set()
        for callback, record, line in deferred:
            callback(record, line)
    return result


def _limiter(manager: SessionManager) -> Any:
    import anyio

    if manager._thread_slot is None:
        manager._thread_slot = anyio.CapacityLimiter(1)
    return manager._thread_slot
