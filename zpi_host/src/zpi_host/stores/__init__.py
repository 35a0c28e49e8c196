"""Session stores and native storage.

Session stores: the ``SessionStore`` protocol (duck-type compatible with claude-agent-sdk's),
the in-memory, SQLite and PostgreSQL stores, the mirror that copies each committed record to a
store, and resuming a session from one. The CLI and the SDK both use them.

Native storage (the names below, imported on first use): a ``TranscriptStore`` on SQLite or
PostgreSQL as the authority for sessions, passed to ``create_session(storage={"transcript":
store, "current_state": state})``; the session helpers over one are in
:mod:`zpi_host.stores.transcript_helpers` (docs/session-stores.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..support.lazy import lazy_attributes

if TYPE_CHECKING:
    from ..transcript.native import (
        ChainError,
        CurrentState,
        Lease,
        LeaseLostError,
        OpenCall,
        SessionOwnedError,
        StoreUnavailableError,
        TranscriptStore,
        TranscriptStoreError,
        WriteBarrierError,
    )
    from ..transcript.native_session import StoreSessionManager
    from .postgres_transcripts import PostgresTranscriptStore
    from .sqlite_transcripts import SQLiteTranscriptStore
    from .transcript_helpers import export_jsonl, import_jsonl

_LAZY: dict[str, str] = {
    **dict.fromkeys((
        "ChainError", "CurrentState", "Lease", "LeaseLostError", "OpenCall",
        "SessionOwnedError", "StoreUnavailableError", "TranscriptStore",
        "TranscriptStoreError", "WriteBarrierError"), "..transcript.native"),
    "StoreSessionManager": "..transcript.native_session",
    "PostgresTranscriptStore": "postgres_transcripts",
    "SQLiteTranscriptStore": "sqlite_transcripts",
    **dict.fromkeys(("export_jsonl", "import_jsonl"), "transcript_helpers"),
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())
