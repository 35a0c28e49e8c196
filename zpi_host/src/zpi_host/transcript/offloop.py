"""Writes that do not hold the event loop.

Many sessions share one event loop; a write that waits (a database's round trip in native
storage, an fsync) would stop every other session's stream for as long as it takes. The loop
awaits such writes here instead: each runs in a worker thread, one at a time per session and in
the order asked, shielded from cancellation (a record asked for is committed, or has failed,
before the caller goes on, exactly as with a direct call: an acknowledged record is durable and
the write barrier holds). ``on_commit`` callbacks (the session store mirror) still run on the
loop, after the write. A write that does not block (a JSONL line to the page cache) runs in
place: a thread hop would cost more than it saves.
"""

from __future__ import annotations

import weakref
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


async def make_durable(manager: SessionManager) -> None:
    """``manager.sync()`` (the end of a turn's fsync). In place: between one turn's end and
    the next turn's context the loop takes no checkpoint, so what plugins deliver in the
    background (a Claude-style async hook's answer) lands at a turn boundary as before; a
    session whose fsyncs must not hold the loop uses ``"sessions": {"fsync": "record"}``
    (every append, with its fsync, runs in a worker thread; nothing is left for the turn's
    end)."""
    if manager.sync_pending:
        manager.sync()


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
    """This session's limiter; for a store that commits one transaction at a time
    (``write_threads = 1``: SQLite), the store's, shared by its sessions on this loop (more
    threads would only queue at its lock, and cost the loop their hand-offs)."""
    import anyio

    store = getattr(manager, "transcript_store", None)
    slots = getattr(store, "write_threads", None)
    if isinstance(slots, int) and slots > 0:
        import anyio.lowlevel

        try:
            by_loop = _store_limiters.setdefault(store, {})
        except TypeError:  # a store that cannot be weakly referenced: per session then
            by_loop = None
        if by_loop is not None:
            loop = anyio.lowlevel.current_token()
            limiter = by_loop.get(loop)
            if limiter is None:
                limiter = by_loop[loop] = anyio.CapacityLimiter(slots)
            return limiter
    if manager._thread_slot is None:
        manager._thread_slot = anyio.CapacityLimiter(1)
    return manager._thread_slot


#: per store (held weakly): its limiter per event loop
_store_limiters: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()
