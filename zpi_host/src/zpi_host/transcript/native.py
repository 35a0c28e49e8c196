"""Native storage: a database as the authority for sessions (the ``TranscriptStore`` protocol).

A ``TranscriptStore`` keeps each session's records in order, with the chain checked on every
append (a record follows the session's head, or the append is refused), and beside them the
session's :class:`CurrentState`: what a host needs without reading the history (the head, the
model, reasoning level, title and tags in force, the open tool calls of the journal, the
snapshot's reference and where the model's context starts). The state is folded record by
record by :func:`advance` inside the append's transaction, so it is never behind the records.

One owner per session: appends carry a :class:`Lease` (owner, fencing token, expiry). Taking a
lease over (after it expired) raises the token, and an append whose token is not the current
one is refused in the same transaction that would insert it, so a worker that lost its lease
cannot write. The SQLite and PostgreSQL implementations are in :mod:`zpi_host.stores`;
:mod:`.native_session` runs a session over any of them (docs/session-stores.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

import attrs

from ..errors import ZpiError, docs_url
from ..providers.messages import ToolCallContent
from ..support.attrs_methods import FrozenFieldsEq
from .records import (
    AssistantRecord,
    CompactionRecord,
    HeaderRecord,
    ModelChangeRecord,
    ReasoningLevelRecord,
    Record,
    SnapshotRecord,
    TagRecord,
    TitleRecord,
    ToolResultRecord,
    ToolUseRecord,
    UserRecord,
)

__all__ = [
    "DEFAULT_LEASE_SECONDS", "DEFAULT_RECONNECT_SECONDS", "PAGE_SIZE", "ChainError",
    "CurrentState", "Lease", "LeaseLostError", "OpenCall", "SessionOwnedError",
    "StoreUnavailableError", "StoredRecord", "TranscriptStore", "TranscriptStoreError",
    "WriteBarrierError", "advance", "iter_records", "new_state",
]

#: how long a lease lasts without being renewed (every append renews it, and so does the
#: session's keeper thread, three times per lease): a dead worker's sessions can be taken
#: over this long after its last write
DEFAULT_LEASE_SECONDS = 30.0
#: how long an append waits for an unreachable database before it fails
DEFAULT_RECONNECT_SECONDS = 30.0
#: records read per query when the history is read lazily
PAGE_SIZE = 500


class TranscriptStoreError(ZpiError):
    """A transcript store refused or failed an operation (its message names which)."""


class ChainError(TranscriptStoreError):
    """An append that does not follow the session's head (another writer moved it on)."""


class SessionOwnedError(TranscriptStoreError):
    """The session is owned by another worker whose lease has not expired."""

    def __init__(self, session_id: str, owner: str, remaining: float) -> None:
        self.session_id, self.owner, self.remaining = session_id, owner, remaining
        super().__init__(
            f"session {session_id} is owned by {owner!r} for another {remaining:.1f} s (its "
            "lease); wait for it to end the session, or take it over once the lease has "
            f"expired (lease_seconds; see {docs_url('session-stores', 'native-storage')})")


class LeaseLostError(TranscriptStoreError):
    """This worker's lease was taken over: it may no longer append (it was fenced)."""


class StoreUnavailableError(TranscriptStoreError):
    """The database could not be reached within the reconnect bound."""


class WriteBarrierError(TranscriptStoreError):
    """A write failed before, so the session accepts no more: resume it to go on."""


@attrs.frozen(repr=False, eq=False, slots=False)
class Lease(FrozenFieldsEq):
    """The right to append to one session: ``token`` is the fencing token (it grows with each
    new owner), ``expires_at`` the database clock's epoch seconds."""

    session_id: str
    owner: str
    token: int
    expires_at: float


@attrs.frozen(repr=False, eq=False, slots=False)
class StoredRecord(FrozenFieldsEq):
    """One record as a store keeps it: its position, identity and exact JSONL line."""

    seq: int
    uuid: str
    parent_uuid: str | None
    type: str
    line: str


@attrs.frozen(repr=False, eq=False, slots=False)
class OpenCall(FrozenFieldsEq):
    """A tool call the model made that has no result yet; ``started``: journaled as running."""

    call_id: str
    name: str
    started: bool = False


@attrs.frozen(kw_only=True, repr=False, eq=False, slots=False)
class CurrentState(FrozenFieldsEq):
    """The small, always-current part of a session (see the module docstring)."""

    session_id: str
    cwd: str
    created_at: str
    head_uuid: str
    head_seq: int = 0
    records: int = 1
    model: tuple[str, str] | None = None
    reasoning_level: str | None = None
    title: str | None = None
    tags: tuple[str, ...] = ()
    first_prompt: str | None = None
    open_calls: tuple[OpenCall, ...] = ()
    snapshot_uuid: str | None = None
    #: the first record of the model's context (the kept part, or the last compaction)
    context_seq: int = 0
    #: every record's parent is the one before it
    linear: bool = True
    #: the store's clock at the last append (epoch seconds)
    mtime: float = 0.0
    #: set for a sub-agent's transcript: the session that started it
    parent_session_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = attrs.asdict(self, recurse=True)
        data["open_calls"] = [[c.call_id, c.name, c.started] for c in self.open_calls]
        data["model"] = list(self.model) if self.model else None
        data["tags"] = list(self.tags)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CurrentState:
        fields = dict(data)
        fields["open_calls"] = tuple(OpenCall(c[0], c[1], bool(c[2]))
                                     for c in fields.get("open_calls", ()))
        model = fields.get("model")
        fields["model"] = (model[0], model[1]) if model else None
        fields["tags"] = tuple(fields.get("tags", ()))
        known = {a.name for a in attrs.fields(cls)}
        return cls(**{k: v for k, v in fields.items() if k in known})


def new_state(header: HeaderRecord, parent_session_id: str | None = None) -> CurrentState:
    """The state of a session that holds only its header (seq 0)."""
    return CurrentState(session_id=header.session_id, cwd=header.cwd,
                        created_at=header.created_at, head_uuid=header.uuid,
                        parent_session_id=parent_session_id)


def advance(state: CurrentState, record: Record, seq: int,
            seq_of: Callable[[str], int | None]) -> CurrentState:
    """``state`` after ``record`` was appended at ``seq`` (``seq_of`` finds an earlier
    record's seq by uuid: where a compaction's kept part starts)."""
    changes: dict[str, Any] = {"head_uuid": record.uuid, "head_seq": seq,
                               "records": state.records + 1}
    if record.parent_uuid != state.head_uuid:
        changes["linear"] = False
    cls = type(record)
    if cls is AssistantRecord:
        message = record.message  # type: ignore[attr-defined]
        calls = [OpenCall(b.id, b.name) for b in message.content if type(b) is ToolCallContent]
        if calls:
            changes["open_calls"] = state.open_calls + tuple(calls)
        if state.model is None and message.provider and message.model:
            changes["model"] = (message.provider, message.model)
    elif cls is ToolUseRecord:
        call_id = record.call_id  # type: ignore[attr-defined]
        changes["open_calls"] = tuple(attrs.evolve(c, started=True) if c.call_id == call_id
                                      else c for c in state.open_calls)
    elif cls is ToolResultRecord:
        call_id = record.call_id  # type: ignore[attr-defined]
        changes["open_calls"] = tuple(c for c in state.open_calls if c.call_id != call_id)
    elif cls is UserRecord and state.first_prompt is None:
        text = " ".join(getattr(b, "text", "") for b in record.message.content)  # type: ignore[attr-defined]
        changes["first_prompt"] = text.strip()[:200] or None
    elif cls is ModelChangeRecord:
        changes["model"] = (record.provider, record.model)  # type: ignore[attr-defined]
    elif cls is ReasoningLevelRecord:
        changes["reasoning_level"] = record.level  # type: ignore[attr-defined]
    elif cls is SnapshotRecord:
        changes["snapshot_uuid"] = record.uuid
    elif cls is TitleRecord:
        changes["title"] = record.title  # type: ignore[attr-defined]
    elif cls is TagRecord:
        changes["tags"] = tuple(record.tags)  # type: ignore[attr-defined]
    elif cls is CompactionRecord:
        kept = record.first_kept_uuid  # type: ignore[attr-defined]
        kept_seq = seq_of(kept) if kept is not None else None
        changes["context_seq"] = kept_seq if kept_seq is not None else seq
    return attrs.evolve(state, **changes)


class TranscriptStore(Protocol):
    """A database that is the authority for sessions. Every method is synchronous and safe to
    call from several threads; each write is one transaction."""

    #: how long a lease lasts (seconds)
    lease_seconds: float

    def create(self, header: HeaderRecord, line: str, owner: str, *,
               parent_session_id: str | None = None) -> tuple[CurrentState, Lease]:
        """A new session holding ``header`` (its line), leased to ``owner`` (a sub-agent's
        names its parent). SessionExistsError when the id is taken."""
        ...

    def append(self, session_id: str, records: Sequence[tuple[Record, str]], *, after: str,
               lease: Lease | None) -> CurrentState:
        """Add ``records`` (each with its line) after the record ``after``, which must be the
        head (else ChainError), each the parent of the next. ``lease`` must be the current one
        (else LeaseLostError); without one, no other owner may hold a live lease. A retried
        append that was already committed returns the state and writes nothing."""
        ...

    def current_state(self, session_id: str) -> CurrentState | None:
        ...

    def read(self, session_id: str, *, from_seq: int = 0,
             limit: int = PAGE_SIZE) -> list[StoredRecord]:
        """Up to ``limit`` records from ``from_seq`` on, in order."""
        ...

    def record(self, session_id: str, uuid: str) -> StoredRecord | None:
        ...

    def sessions(self) -> list[CurrentState]:
        """Every session's state, newest first."""
        ...

    def delete(self, session_id: str, *, lease: Lease | None = None) -> bool:
        """Remove a session (refused while an owner other than ``lease``'s holds a live
        lease)."""
        ...

    def acquire(self, session_id: str, owner: str) -> Lease:
        """The session's lease for ``owner``: free, expired, or already ``owner``'s (renewed);
        else SessionOwnedError. A new owner gets a higher token."""
        ...

    def renew(self, lease: Lease) -> Lease:
        """The lease with a new expiry; LeaseLostError if it was taken over."""
        ...

    def release(self, lease: Lease) -> None:
        """End the lease now (nothing if it was taken over)."""
        ...

    def close(self) -> None:
        ...


def iter_records(store: TranscriptStore, session_id: str, from_seq: int = 0,
                 page: int = PAGE_SIZE) -> Iterator[StoredRecord]:
    """Every record of a session from ``from_seq`` on, read a page at a time."""
    while True:
        rows = store.read(session_id, from_seq=from_seq, limit=page)
        yield from rows
        if len(rows) < page:
            return
        from_seq = rows[-1].seq + 1
