"""Session storage: JSONL transcripts (format version 2), their owner, and session helpers.

Names are imported on first use: ``import zpi_host.transcript`` loads neither cattrs nor the
reader. The format is described in ``records.py``, the rules of reading in ``reader.py``, what
the records mean (context, compaction, branches) in ``history.py``; writing, repair and
tool-journal recovery in ``store.py``; one writer per file in ``lock.py``; the helpers in
``helpers.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..support.lazy import lazy_attributes

if TYPE_CHECKING:
    from .codec import message_from_json, message_to_json
    from .errors import (
        InvalidSessionIdError,
        RecordError,
        SessionBusyError,
        SessionExistsError,
        SessionNotFoundError,
        TranscriptError,
        TranscriptLockedError,
        TranscriptVersionError,
    )
    from .helpers import (
        SessionInfo,
        delete_session,
        fork_session,
        get_session_entries,
        get_session_info,
        get_session_messages,
        list_sessions,
        rename_session,
        tag_session,
    )
    from .history import COMPACTION_SOURCE, summary_message
    from .owners import open_owner
    from .paths import agent_dir, check_session_id, project_key, session_path
    from .reader import Transcript, parse_transcript, read_transcript
    from .records import (
        FORMAT_VERSION,
        AssistantRecord,
        CompactionRecord,
        ContextRecord,
        CustomRecord,
        ForkOrigin,
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
        WarningRecord,
    )
    from .store import SessionManager

_LAZY: dict[str, str] = {
    **dict.fromkeys(("message_from_json", "message_to_json"), "codec"),
    **dict.fromkeys((
        "InvalidSessionIdError", "RecordError", "SessionBusyError", "SessionExistsError",
        "SessionNotFoundError", "TranscriptError", "TranscriptLockedError",
        "TranscriptVersionError"), "errors"),
    **dict.fromkeys((
        "SessionInfo", "delete_session", "fork_session", "get_session_entries",
        "get_session_info", "get_session_messages", "list_sessions", "rename_session",
        "tag_session"), "helpers"),
    **dict.fromkeys(("COMPACTION_SOURCE", "summary_message"), "history"),
    **dict.fromkeys(("agent_dir", "check_session_id", "project_key", "session_path"), "paths"),
    **dict.fromkeys(("Transcript", "parse_transcript", "read_transcript"), "reader"),
    **dict.fromkeys((
        "FORMAT_VERSION", "AssistantRecord", "CompactionRecord", "ContextRecord",
        "CustomRecord", "ForkOrigin", "HeaderRecord", "ModelChangeRecord",
        "ReasoningLevelRecord", "Record", "SnapshotRecord", "TagRecord", "TitleRecord",
        "ToolResultRecord", "ToolUseRecord", "UserRecord", "WarningRecord"), "records"),
    **dict.fromkeys(("SessionManager",), "store"),
    **dict.fromkeys(("open_owner",), "owners"),
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())
