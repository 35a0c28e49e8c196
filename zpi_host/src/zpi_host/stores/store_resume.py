"""Resuming from a session store: the mirror is read first, and what it holds is materialized
as a JSONL file in a private temporary folder that the normal resume path opens (the folder is
removed after the query), with the sub-agents' transcripts beside it when the store has
``list_subkeys`` (a failure there propagates too). ``None`` from the store falls back to the
local session of the same id; an error from the store propagates (it never silently falls
back)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..transcript.paths import check_session_id, is_agent_id, subagents_folder
from .session_store import (
    SUBAGENT_PREFIX,
    SessionKey,
    SessionStoreError,
    checked_listing,
    entries_jsonl,
    supports,
)

if TYPE_CHECKING:
    from ..transcript.reader import Transcript

__all__ = ["STORE_HINT", "Materialized", "ResumeChoice", "load_for_resume", "newest_session",
           "parse_stored", "resolve_resume"]


class Materialized:
    """A transcript loaded from a store, written to ``path`` inside a private folder."""

    def __init__(self, session_id: str, data: bytes, uuids: set[str],
                 subagents: Mapping[str, list[Any]] | None = None) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="zpi-store-resume-"))
        self.path = self.folder / f"{session_id}.jsonl"
        #: the uuids the store has already (not mirrored again)
        self.uuids = uuids
        try:
            _write_new(self.path, data)
            if subagents:
                children = subagents_folder(self.path)
                children.mkdir(parents=True, mode=0o700)
                for agent_id, child in subagents.items():
                    _write_new(children / f"agent-{agent_id}.jsonl", entries_jsonl(child))
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _write_new(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


#: what to do about records in a store that do not make a valid transcript
STORE_HINT = ("nothing was changed; the session store holds these records: delete the session "
              "from the store (`zpi-host sessions delete ID --store STORE`) or use another one")


def parse_stored(data: bytes, key: SessionKey) -> Transcript:
    """The lines of ``key``'s entries (:func:`entries_jsonl`) validated as a transcript file is;
    a :class:`TranscriptError` names ``<store PROJECT/SESSION[/SUBPATH]>`` and, as its line,
    the number of the entry at fault (counted from 1). A main transcript must be the one of
    ``key``'s session id: a shared store is not trusted to file records under the right key."""
    from ..transcript.errors import TranscriptError, TranscriptVersionError
    from ..transcript.reader import parse_transcript

    sub = f"/{key['subpath']}" if key.get("subpath") else ""
    where = Path(f"<store {key['project_key']}/{key['session_id']}{sub}>")
    try:
        transcript = parse_transcript(data, where)
    except TranscriptError as exc:
        if isinstance(exc, TranscriptVersionError) and "newer zpi-host" in exc.problem:
            raise  # its own hint (upgrade zpi-host) is right
        raise type(exc)(exc.problem, path=where, line=exc.line, hint=STORE_HINT) from None
    if "subpath" not in key and transcript.session_id != key["session_id"]:
        raise TranscriptError(
            f"the header's sessionId is {transcript.session_id!r}: the store holds another "
            f"session's records under {key['session_id']}, and using them would continue or "
            "change that other session", path=where, line=1, hint=STORE_HINT)
    return transcript


async def _load_subagents(store: Any, key: SessionKey, timeout_ms: int) -> dict[str, list[Any]]:
    """The session's sub-agent transcripts in the store (agent id -> entries); none when the
    store cannot list subkeys."""
    if not supports(store, "list_subkeys"):
        return {}
    where = f"session {key['session_id']}"
    subkeys = await _bounded(store.list_subkeys(key), timeout_ms, f"list_subkeys of {where}")
    out: dict[str, list[Any]] = {}
    for subpath in subkeys:
        if not isinstance(subpath, str) or not subpath.startswith(SUBAGENT_PREFIX):
            continue  # not a sub-agent's transcript: nothing of this host's
        agent_id = subpath[len(SUBAGENT_PREFIX):]
        if not is_agent_id(agent_id):
            raise SessionStoreError(f"session store: {where} has a sub-agent key {subpath!r} "
                                    "that cannot be a file name; it cannot be resumed")
        entries = await _bounded(store.load({**key, "subpath": subpath}), timeout_ms,
                                 f"load of {subpath} of {where}")
        if entries:
            out[agent_id] = entries
    return out


async def _bounded(call: Any, timeout_ms: int, what: str) -> Any:
    import anyio

    try:
        with anyio.fail_after(timeout_ms / 1000):
            return await call
    except TimeoutError:
        raise SessionStoreError(f"session store: {what} took longer than load_timeout_ms "
                                f"({timeout_ms} ms)") from None


async def load_for_resume(store: Any, project_key: str, session_id: str,
                          timeout_ms: int) -> Materialized | None:
    """The session from the store, materialized; None when the store does not have it."""
    session_id = check_session_id(session_id)
    key: SessionKey = {"project_key": project_key, "session_id": session_id}
    entries = await _bounded(store.load(key), timeout_ms, f"load of session {session_id}")
    if entries is None:
        return None
    if not entries or not isinstance(entries, list):
        raise SessionStoreError(f"session store returned no records for session {session_id} "
                                f"(project {project_key!r}); it cannot be resumed")
    data = entries_jsonl(entries)
    transcript = parse_stored(data, key)
    return Materialized(session_id, data, transcript.uuids,
                        await _load_subagents(store, key, timeout_ms))


async def newest_session(store: Any, project_key: str, timeout_ms: int) -> str | None:
    """``continue``: the main transcript with the newest mtime, or None."""
    if not supports(store, "list_sessions"):
        raise UsageError("continue_conversation with a session_store needs the store's "
                         "list_sessions(); give resume=<session id> instead")
    listed = checked_listing(await _bounded(store.list_sessions(project_key), timeout_ms,
                                            "list_sessions"), store, "list_sessions")
    if not listed:
        return None
    return str(max(listed, key=lambda s: (s["mtime"], s["session_id"]))["session_id"])


@dataclass
class ResumeChoice:
    """What to pass as ``resume`` (a materialized file, a local session id, or None for a new
    session), and the materialized transcript to remove after the query."""

    resume: str | None
    materialized: Materialized | None = None


async def resolve_resume(store: Any, project_key: str, *, resume: str | None,
                         continue_recent: bool, timeout_ms: int) -> ResumeChoice:
    """``resume`` / ``continue`` with a store: the mirror first, the local session of the same
    id when the store has none; ``continue`` with nothing in the store starts a new session."""
    if continue_recent:
        resume = await newest_session(store, project_key, timeout_ms)
    if resume is None:
        return ResumeChoice(None)
    found = await load_for_resume(store, project_key, resume, timeout_ms)
    if found is None:
        return ResumeChoice(resume)
    return ResumeChoice(str(found.path), found)
