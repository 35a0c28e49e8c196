"""TranscriptMirror: copies a session's committed records to a session store.

The local JSONL stays the authority: the transcript owner calls :meth:`TranscriptMirror.record`
(its ``on_commit`` callback) only after a record's line is written, and the mirror sends the
records to ``store.append`` from a worker task, serially and in commit order. ``batched``
flushes 100 ms after the first pending record, at 100 records, at 256 KiB, or at turn end
(which waits for the write); ``eager`` after every commit. A failed append is tried 3 times
in all with a short backoff; a call that times out (60 s) is not retried, since it may still
land. Then ``on_error`` is told (the client turns it into a ``mirror_error`` message) and the
session goes on. :meth:`close` waits for every scheduled write.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError

if TYPE_CHECKING:
    from ..agent.state import SessionState, SubagentLink
    from ..transcript.records import Record
    from .session_store import SessionKey

__all__ = ["FLUSH_MODES", "SubagentMirrors", "TranscriptMirror", "attach_mirror", "check_store",
           "close_mirrors", "detach_mirror", "resync_subagents"]

FLUSH_MODES = ("batched", "eager")
FLUSH_INTERVAL = 0.1
FLUSH_RECORDS = 100
FLUSH_BYTES = 256 * 1024
ATTEMPTS = 3
BACKOFF = (0.05, 0.2)
APPEND_TIMEOUT = 60.0


def check_store(store: Any, flush_mode: str) -> None:
    """A UsageError unless ``store`` has the required methods and ``flush_mode`` is known."""
    missing = [m for m in ("append", "load") if not callable(getattr(store, m, None))]
    if missing:
        raise UsageError(f"session_store must implement async append(key, entries) and "
                         f"load(key); {type(store).__name__} lacks {', '.join(missing)}")
    if flush_mode not in FLUSH_MODES:
        raise UsageError(f"session_store_flush must be one of {', '.join(FLUSH_MODES)}, not "
                         f"{flush_mode!r}")


class TranscriptMirror:
    """One session's mirror; run :meth:`run` in a task group, then :meth:`close` it."""

    def __init__(self, store: Any, key: SessionKey, *, flush_mode: str = "batched",
                 on_error: Callable[[SessionKey, str], None] | None = None,
                 local: Path | None = None) -> None:
        import anyio

        check_store(store, flush_mode)
        self.store, self.key, self.eager = store, key, flush_mode == "eager"
        self.on_error = on_error
        self.local = local  # the durable file that holds every record, for the error
        self._pending: list[bytes | dict[str, Any]] = []
        self._pending_bytes = 0
        self._arrived = anyio.Event()  # something to send, or closing
        self._urgent = anyio.Event()  # send now: a threshold, turn end, or closing
        self._closing = False
        self._done = anyio.Event()
        self._idle = anyio.Event()  # nothing pending, nothing in flight
        self._idle.set()
        self.appended = 0  # entries handed to the store successfully

    # ----------------------------------------------------------- called by the session

    def record(self, record: Record, line: bytes) -> None:
        """The transcript owner's commit callback: ``line`` is on disk."""
        self._add(line, len(line))

    def seed(self, entries: Iterable[dict[str, Any]]) -> None:
        """Records that were committed before the mirror was attached (the header, or a
        local session's records on resume: uuids make resending them harmless)."""
        for entry in entries:
            self._add(entry, 0)

    def _add(self, item: bytes | dict[str, Any], size: int) -> None:
        if self._idle.is_set():
            import anyio

            self._idle = anyio.Event()
        self._pending.append(item)
        self._pending_bytes += size
        self._arrived.set()
        if self.eager or len(self._pending) >= FLUSH_RECORDS or \
                self._pending_bytes >= FLUSH_BYTES:
            self._urgent.set()

    async def turn_end(self) -> None:
        """The end of an input: flush now and wait until it is written (or reported failed),
        so that the result comes after the mirror has the turn."""
        self._urgent.set()
        await self._idle.wait()

    # ------------------------------------------------------------------- the worker

    async def run(self) -> None:
        """Send pending records until closed and drained."""
        import anyio

        try:
            while True:
                await self._arrived.wait()
                self._arrived = anyio.Event()
                if not self._closing:
                    with anyio.move_on_after(FLUSH_INTERVAL):
                        await self._urgent.wait()
                self._urgent = anyio.Event()
                await self._flush()
                if not self._pending:
                    self._idle.set()
                if self._closing and not self._pending:
                    return
        finally:
            self._done.set()
            self._idle.set()

    async def close(self) -> None:
        """Flush what is pending and wait until it is written (or reported failed)."""
        self._closing = True
        self._arrived.set()
        self._urgent.set()
        await self._done.wait()

    async def _flush(self) -> None:
        if not self._pending:
            return
        batch, self._pending, self._pending_bytes = self._pending, [], 0
        entries = [json.loads(item) if isinstance(item, bytes) else item for item in batch]
        error = await self._append(entries)
        if error is None:
            self.appended += len(entries)
        elif self.on_error is not None:
            if self.local is not None:
                error += (f"; every record is kept in {self.local}: resuming the session "
                          "with this store sends the store what it lacks")
            self.on_error(self.key, error)

    async def _append(self, entries: list[dict[str, Any]]) -> str | None:
        """None once the store took ``entries``; else what went wrong."""
        import anyio

        problem = ""
        for attempt in range(ATTEMPTS):
            try:
                with anyio.fail_after(APPEND_TIMEOUT):
                    await self.store.append(self.key, entries)
                return None
            except TimeoutError:
                return (f"append of {len(entries)} record(s) timed out after "
                        f"{APPEND_TIMEOUT:g} s (not retried: it may still land)")
            except Exception as exc:
                problem = f"{type(exc).__name__}: {exc}"
            if attempt < ATTEMPTS - 1:
                await anyio.sleep(BACKOFF[attempt])
        return f"append of {len(entries)} record(s) failed {ATTEMPTS} times: {problem}"


def attach_mirror(session: SessionState, store: Any, key: SessionKey, *, flush_mode: str,
                  on_error: Callable[[SessionKey, str], None] | None,
                  known: frozenset[str] | set[str] = frozenset()) -> TranscriptMirror:
    """Mirror ``session``'s records from now on, and first those committed before that the
    store may lack (all but the uuids in ``known``). Start its :meth:`~TranscriptMirror.run`
    in a task group, and end with :func:`detach_mirror`."""
    from ..transcript.codec import encode_record

    mirror = TranscriptMirror(store, key, flush_mode=flush_mode, on_error=on_error,
                              local=session.store.path)
    mirror.seed(encode_record(r) for r in session.store.records if r.uuid not in known)
    session.store.on_commit = mirror.record
    return mirror


def resync_subagents(session: SessionState, store: Any, key: SessionKey, *, flush_mode: str,
                     on_error: Callable[[SessionKey, str], None] | None,
                     known: Mapping[str, frozenset[str]]) -> list[TranscriptMirror]:
    """On resume: a mirror for each sub-agent transcript beside the session's file whose
    records the store lacks (all but the uuids in ``known[agent id]``: a run killed before its
    mirror sent them), seeded with those. Run each, then :meth:`~TranscriptMirror.close` it.
    A transcript that cannot be read is reported to ``on_error`` and left as it is."""
    from ..transcript.codec import encode_record
    from ..transcript.errors import TranscriptError
    from ..transcript.paths import is_agent_id, subagents_folder
    from ..transcript.reader import read_transcript
    from .session_store import subagent_key

    if session.store.path is None:
        return []
    mirrors = []
    for path in sorted(subagents_folder(session.store.path).glob("agent-*.jsonl")):
        agent_id = path.name[len("agent-"):-len(".jsonl")]
        if not is_agent_id(agent_id):
            continue
        child = subagent_key(key, agent_id)
        try:
            records = read_transcript(path).records
        except (OSError, TranscriptError) as exc:
            if on_error is not None:
                on_error(child, f"cannot read {path} to send it: {exc}")
            continue
        lacking = [encode_record(r) for r in records
                   if r.uuid not in known.get(agent_id, frozenset())]
        if lacking:
            mirror = TranscriptMirror(store, child, flush_mode=flush_mode, on_error=on_error,
                                      local=path)
            mirror.seed(lacking)
            mirrors.append(mirror)
    return mirrors


async def close_mirrors(mirrors: Iterable[TranscriptMirror]) -> None:
    """Wait for every scheduled write of ``mirrors``, even when cancelled."""
    import anyio

    with anyio.CancelScope(shield=True):
        for mirror in mirrors:
            await mirror.close()


async def detach_mirror(session: SessionState, mirror: TranscriptMirror) -> None:
    """Stop mirroring and wait for every scheduled write, even when cancelled."""
    import anyio

    session.store.on_commit = None
    with anyio.CancelScope(shield=True):
        await mirror.close()


class SubagentMirrors:
    """Mirrors each sub-agent of a session under its own key (``subagents/agent-<id>``) from
    its start to its end, with the session's store, flush mode and error report; a
    :class:`~zpi_host.session.subagents.SubagentObserver`. ``start_soon`` runs a mirror's worker in
    the client's task group; a child's records are all written when it stops."""

    def __init__(self, store: Any, key: SessionKey, *, flush_mode: str,
                 on_error: Callable[[SessionKey, str], None] | None,
                 start_soon: Callable[[Callable[[], Any]], object]) -> None:
        self.store, self.key, self.flush_mode = store, key, flush_mode
        self.on_error, self.start_soon = on_error, start_soon
        self._mirrors: dict[str, TranscriptMirror] = {}

    async def subagent_started(self, child: SessionState, link: SubagentLink) -> None:
        from .session_store import subagent_key

        mirror = attach_mirror(child, self.store, subagent_key(self.key, child.session_id),
                               flush_mode=self.flush_mode, on_error=self.on_error)
        self._mirrors[child.session_id] = mirror
        self.start_soon(mirror.run)

    async def subagent_stopped(self, child: SessionState, link: SubagentLink) -> None:
        mirror = self._mirrors.pop(child.session_id, None)
        if mirror is not None:
            await detach_mirror(child, mirror)
