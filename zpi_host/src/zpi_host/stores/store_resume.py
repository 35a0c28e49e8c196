"""Resuming from a session store: the mirror is read first and reconciled with the session's
local JSONL file in the agent dir (the durable record, never a temporary copy), which the
normal resume path then opens; the sub-agents' transcripts the same way, beside it, when the
store has ``list_subkeys``.

Reconciling one transcript: no local file -> the store's records are written there; the file
holds every record the store has (a run killed before its mirror sent its tail) -> the file is
kept, and the mirror sends what the store lacks; the store holds every record of the file and
more (another host continued the session) -> the file is replaced by the store's records;
each holds records the other lacks -> :class:`SessionStoreError`, nothing changed. Files are
written all at once (:func:`zpi_host.fs.files.commit`) under the session's lock.

``None`` from the store falls back to the local session of the same id; an error from the
store propagates (it never silently falls back)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..transcript.paths import (
    check_session_id,
    is_agent_id,
    locate,
    session_path,
    subagents_folder,
)
from .session_store import (
    SUBAGENT_PREFIX,
    SessionKey,
    SessionStoreError,
    checked_listing,
    entries_jsonl,
    subagent_key,
    supports,
)

if TYPE_CHECKING:
    from ..fs.files import FileChange
    from ..transcript.reader import Transcript

__all__ = ["STORE_HINT", "ResumeChoice", "Resumed", "load_for_resume", "newest_session",
           "parse_stored", "resolve_resume"]


@dataclass
class Resumed:
    """A session from the store, reconciled with its local file ``path``: ``known`` are the
    uuids the store has of the main transcript, ``children_known`` those of each sub-agent
    (what the mirror need not send again)."""

    path: Path
    known: frozenset[str]
    children_known: dict[str, frozenset[str]] = field(default_factory=dict)


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


async def load_for_resume(store: Any, project_key: str, session_id: str, timeout_ms: int,
                          *, agent_dir: Path, cwd: Path) -> Resumed | None:
    """The session from the store reconciled with its local file (found under ``agent_dir``,
    else made in ``cwd``'s project: the user's directory, never the records'); None when the
    store does not have it."""
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
    children = {}
    for agent_id, child in (await _load_subagents(store, key, timeout_ms)).items():
        child_data = entries_jsonl(child)
        children[agent_id] = (child_data, parse_stored(child_data, subagent_key(key, agent_id)))
    path = locate(session_id, agent_dir=agent_dir, cwd=cwd) or \
        session_path(session_id, cwd, agent_dir)
    _reconcile(path, (data, transcript), children)
    return Resumed(path, frozenset(transcript.uuids),
                   {agent_id: frozenset(t.uuids) for agent_id, (_, t) in children.items()})


def _reconcile(path: Path, main: tuple[bytes, Transcript],
               children: Mapping[str, tuple[bytes, Transcript]]) -> None:
    """Bring the local files of a session up to the store's records (module doc), all at
    once, under the session's lock (a run of this session elsewhere: TranscriptLockedError)."""
    from ..transcript.errors import TranscriptError

    try:
        _reconcile_locked(path, main, children)
    except OSError as exc:
        raise TranscriptError(f"cannot write the session's local file from the store: "
                              f"{exc.strerror or exc}", path=Path(exc.filename or path),
                              hint="check the path, its permissions and free disk space; "
                              "nothing was resumed") from exc


def _reconcile_locked(path: Path, main: tuple[bytes, Transcript],
                      children: Mapping[str, tuple[bytes, Transcript]]) -> None:
    from ..fs.files import commit
    from ..transcript.lock import FileLock

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = FileLock.acquire(path)
    try:
        changes = [c for c in [_change(path, *main)] if c is not None]
        folder = subagents_folder(path)
        changes += [c for agent_id, child in children.items()
                    if (c := _change(folder / f"agent-{agent_id}.jsonl", *child)) is not None]
        if changes:
            if children:
                folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            commit(changes)
            for change in changes:
                os.chmod(change.path, 0o600)  # as private as the files a session writes
    finally:
        lock.release()


def _change(path: Path, data: bytes, stored: Transcript) -> FileChange | None:
    """What the local file at ``path`` needs to hold every record the store has, or None."""
    from ..fs.files import FileChange, read_with_fingerprint
    from ..transcript.reader import parse_transcript

    try:
        local, fingerprint = read_with_fingerprint(path)
    except FileNotFoundError:
        return FileChange(path, data, expected=None)
    mine = parse_transcript(local, path).uuids
    if stored.uuids <= mine:
        return None  # the file is as new or newer: the mirror sends the store what it lacks
    if mine <= stored.uuids:
        return FileChange(path, data, expected=fingerprint)  # continued elsewhere
    raise SessionStoreError(
        f"session {stored.session_id}: the local file {path} and the session store each hold "
        f"records the other lacks ({len(mine - stored.uuids)} only in the file, "
        f"{len(stored.uuids - mine)} only in the store), so resuming either would lose the "
        "other's; nothing was changed. Move the file away to resume the store's copy, or "
        "delete the session from the store (`zpi-host sessions delete ID --store STORE`) and "
        "resume again to send it the file's records")


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
    """What to pass as ``resume`` (the reconciled local file, a local session id, or None for
    a new session), and what the store has already (:class:`Resumed`), if anything."""

    resume: str | None
    resumed: Resumed | None = None

    @property
    def known(self) -> frozenset[str]:
        return self.resumed.known if self.resumed is not None else frozenset()

    @property
    def children_known(self) -> Mapping[str, frozenset[str]]:
        return self.resumed.children_known if self.resumed is not None else {}


async def resolve_resume(store: Any, project_key: str, *, resume: str | None,
                         continue_recent: bool, timeout_ms: int, agent_dir: Path,
                         cwd: Path) -> ResumeChoice:
    """``resume`` / ``continue`` with a store: the mirror first (reconciled with the local
    file), the local session of the same id when the store has none; ``continue`` with
    nothing in the store starts a new session."""
    if continue_recent:
        resume = await newest_session(store, project_key, timeout_ms)
    if resume is None:
        return ResumeChoice(None)
    found = await load_for_resume(store, project_key, resume, timeout_ms,
                                  agent_dir=agent_dir, cwd=cwd)
    if found is None:
        return ResumeChoice(resume)
    return ResumeChoice(str(found.path), found)
