"""claude-agent-sdk's store-backed session helpers: the session helpers over a session store
only (never the local files), with the same names and arguments (async, the store first).

``directory`` chooses the project as for the local helpers (its ``project_key``);
``project_key=`` (keyword) overrides it. A session loaded from the store is validated exactly
as a local file is (a damaged one raises :class:`~zpi_host.transcript.TranscriptError`).
Deleting and forking need the store's ``delete`` and ``list_subkeys``: without them they raise
:class:`SessionStoreError` saying so, never a silent no-op.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from ..stores.session_store import (
    SUBAGENT_PREFIX,
    SessionKey,
    SessionStoreError,
    checked_listing,
    entries_jsonl,
    fold_session_summary,
    project_key_for_directory,
    subagent_key,
    supports,
)
from ..stores.store_resume import parse_stored
from ..transcript.errors import SessionNotFoundError
from ..transcript.paths import is_agent_id
from .sessions import (
    ForkSessionResult,
    SDKSessionInfo,
    SessionMessage,
    _api_message,
    _count,
    _millis,
    subagent_messages,
)

__all__ = [
    "delete_session_via_store", "fork_session_via_store", "get_session_info_from_store",
    "get_session_messages_from_store", "get_subagent_messages_from_store",
    "list_sessions_from_store", "list_subagents_from_store", "rename_session_via_store",
    "import_session_to_store", "tag_session_via_store",
]


def _key(session_id: str, directory: str | None, project_key: str | None) -> SessionKey:
    from ..transcript.paths import check_session_id

    project = project_key if project_key is not None else project_key_for_directory(directory)
    return {"project_key": project, "session_id": check_session_id(session_id)}


def _read_lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _owner(entries: list[Any], key: SessionKey) -> Any:
    """The loaded session as an in-memory SessionManager (validated like a file)."""
    from ..transcript.store import SessionManager

    return SessionManager(parse_stored(entries_jsonl(entries), key))


async def _load(session_store: Any, key: SessionKey) -> list[Any] | None:
    return await session_store.load(key)  # type: ignore[no-any-return]


def _info(session_id: str, mtime: int, data: dict[str, Any]) -> SDKSessionInfo:
    tags = data.get("tags") or []
    title = data.get("title")
    return SDKSessionInfo(
        session_id=session_id, summary=title or data.get("first_prompt") or "",
        last_modified=mtime, custom_title=title, first_prompt=data.get("first_prompt"),
        cwd=data.get("cwd"), tag=tags[-1] if tags else None,
        created_at=_millis(data.get("created_at")))


async def list_sessions_from_store(session_store: Any, directory: str | None = None,
                                   limit: int | None = None, offset: int = 0, *,
                                   project_key: str | None = None) -> list[SDKSessionInfo]:
    """The project's sessions in the store, newest first: from its summaries when it keeps
    them, else ``list_sessions`` and one ``load`` per session."""
    _count(limit, "limit", optional=True)
    _count(offset, "offset", optional=False)
    project = project_key if project_key is not None else project_key_for_directory(directory)
    if supports(session_store, "list_session_summaries"):
        infos = [_info(s["session_id"], s["mtime"], s["data"])
                 for s in checked_listing(await session_store.list_session_summaries(project),
                                          session_store,
                                          "list_session_summaries")]
    elif supports(session_store, "list_sessions"):
        infos = []
        for listed in checked_listing(await session_store.list_sessions(project), session_store,
                                      "list_sessions"):
            key: SessionKey = {"project_key": project, "session_id": listed["session_id"]}
            entries = await _load(session_store, key)
            if entries:
                infos.append(_info(listed["session_id"], listed["mtime"],
                                   fold_session_summary(None, key, entries)["data"]))
    else:
        raise SessionStoreError("listing sessions needs the store's list_sessions() or "
                                "list_session_summaries(); this store has neither")
    infos.sort(key=lambda i: (i.last_modified, i.session_id), reverse=True)
    return infos[offset:] if limit is None else infos[offset:offset + limit]


async def get_session_info_from_store(session_store: Any, session_id: str,
                                      directory: str | None = None, *,
                                      project_key: str | None = None) -> SDKSessionInfo | None:
    """One session's listing entry, or None when the store does not have it."""
    key = _key(session_id, directory, project_key)
    entries = await _load(session_store, key)
    if entries is None:
        return None
    mtime = 0
    if supports(session_store, "list_sessions"):
        listed = checked_listing(await session_store.list_sessions(key["project_key"]),
                                 session_store,
                                 "list_sessions")
        mtime = next((s["mtime"] for s in listed if s["session_id"] == key["session_id"]), 0)
    return _info(key["session_id"], mtime, fold_session_summary(None, key, entries)["data"])


async def get_session_messages_from_store(
    session_store: Any, session_id: str, directory: str | None = None, limit: int | None = None,
    offset: int = 0, *, project_key: str | None = None,
) -> list[SessionMessage]:
    """The conversation of a session in the store (``[]`` when it has none)."""
    _count(limit, "limit", optional=True)
    _count(offset, "offset", optional=False)
    key = _key(session_id, directory, project_key)
    entries = await _load(session_store, key)
    if entries is None:
        return []
    pairs = _owner(entries, key).history_entries()
    pairs = pairs[offset:] if limit is None else pairs[offset:offset + limit]
    out = []
    for uuid, message in pairs:
        kind, data = _api_message(message)
        out.append(SessionMessage(kind, uuid, key["session_id"], data))
    return out


async def list_subagents_from_store(session_store: Any, session_id: str,
                                    directory: str | None = None, *,
                                    project_key: str | None = None) -> list[str]:
    """The ids of a session's sub-agents in the store, sorted (needs ``list_subkeys``)."""
    _need(session_store, "listing sub-agents", "list_subkeys")
    key = _key(session_id, directory, project_key)
    subkeys = checked_listing(await session_store.list_subkeys(key), session_store, "list_subkeys")
    return sorted(sub[len(SUBAGENT_PREFIX):] for sub in subkeys
                  if sub.startswith(SUBAGENT_PREFIX) and is_agent_id(sub[len(SUBAGENT_PREFIX):]))


async def get_subagent_messages_from_store(
    session_store: Any, session_id: str, agent_id: str, directory: str | None = None,
    limit: int | None = None, offset: int = 0, *, project_key: str | None = None,
) -> list[SessionMessage]:
    """A sub-agent's conversation in the store (``[]`` when it has none), validated as a
    local file is."""
    _count(limit, "limit", optional=True)
    _count(offset, "offset", optional=False)
    key = _key(session_id, directory, project_key)
    if not is_agent_id(agent_id):
        return []
    child = subagent_key(key, agent_id)
    entries = await _load(session_store, child)
    if entries is None:
        return []
    return subagent_messages(_owner(entries, child), key["session_id"], limit, offset)


async def _append_change(session_store: Any, key: SessionKey, change: str, value: Any) -> None:
    from ..transcript.codec import encode_record

    entries = await _load(session_store, key)
    if entries is None:
        raise SessionNotFoundError(f"no session {key['session_id']!r} in the session store "
                                   f"(project {key['project_key']!r})")
    owner = _owner(entries, key)
    record = owner.set_title(value) if change == "title" else owner.set_tags(value)
    await session_store.append(key, [encode_record(record)])


async def rename_session_via_store(session_store: Any, session_id: str, title: str,
                                   directory: str | None = None, *,
                                   project_key: str | None = None) -> None:
    """Append a title record to the session in the store."""
    await _append_change(session_store, _key(session_id, directory, project_key), "title", title)


async def tag_session_via_store(session_store: Any, session_id: str, tag: str | None,
                                directory: str | None = None, *,
                                project_key: str | None = None) -> None:
    """Set the session's tag in the store; None clears it."""
    await _append_change(session_store, _key(session_id, directory, project_key), "tags",
                         [] if tag is None else [tag])


def _need(session_store: Any, what: str, *methods: str) -> None:
    missing = [m for m in methods if not supports(session_store, m)]
    if missing:
        raise SessionStoreError(f"{what} through a session store is unsupported by "
                                f"{type(session_store).__name__}: it lacks {', '.join(missing)}()")


async def delete_session_via_store(session_store: Any, session_id: str,
                                   directory: str | None = None, *,
                                   project_key: str | None = None) -> None:
    """Delete the session and its sub-transcripts from the store; deleting twice is fine."""
    _need(session_store, "deleting a session", "delete", "list_subkeys")
    await session_store.delete(_key(session_id, directory, project_key))


async def fork_session_via_store(session_store: Any, session_id: str,
                                 directory: str | None = None,
                                 up_to_message_id: str | None = None,
                                 title: str | None = None, *,
                                 project_key: str | None = None,
                                 new_id: str | None = None) -> ForkSessionResult:
    """Copy a session in the store (up to and including record ``up_to_message_id``) to a
    new session in the store, as the local ``fork_session`` does (titled the same way;
    ``new_id``, if given, must be free in the store; the sub-agents started in the copied part
    are copied and linked to the fork; subkeys no record of the session names are copied as
    they are). The whole source (with its sub-transcripts) is read and validated first; the
    new sub-transcripts are written before the main one, and on failure what was written of
    the fork is deleted."""
    from ..transcript.errors import SessionExistsError
    from ..transcript.helpers import fork_session as kernel_fork
    from ..transcript.paths import SUBAGENT_NAMESPACE, subagents_folder
    from .sessions import fork_title

    _need(session_store, "forking a session", "list_subkeys", "delete")
    key = _key(session_id, directory, project_key)
    entries = await _load(session_store, key)
    if entries is None:
        raise SessionNotFoundError(f"no session {key['session_id']!r} in the session store "
                                   f"(project {key['project_key']!r})")
    started = {r.data.get("agent_id") for r in _owner(entries, key).records  # validates it
               if getattr(r, "namespace", None) == SUBAGENT_NAMESPACE
               and isinstance(r.data, dict) and r.data.get("event") == "start"}
    if new_id is not None and new_id.lower() != key["session_id"] and \
            await _load(session_store, _key(new_id, directory, project_key)) is not None:
        raise SessionExistsError(f"cannot fork into session id {new_id}: the session store "
                                 f"has a session with that id (project "
                                 f"{key['project_key']!r}); give another id, or none")
    if title is None or not title.strip():
        data = fold_session_summary(None, key, entries)["data"]
        title = fork_title(data.get("title"), data.get("first_prompt"))
    agents, others = {}, {}
    for subpath in checked_listing(await session_store.list_subkeys(key), session_store,
                                   "list_subkeys"):
        child_key: SessionKey = {**key, "subpath": subpath}
        child = await _load(session_store, child_key)
        if child is None:
            continue
        _owner(child, child_key)  # validates the sub-transcript before anything is written
        agent_id = subpath[len(SUBAGENT_PREFIX):]
        if subpath.startswith(SUBAGENT_PREFIX) and agent_id in started and \
                is_agent_id(agent_id):
            agents[agent_id] = child  # forked with the session
        else:
            others[subpath] = child
    with tempfile.TemporaryDirectory(prefix="zpi-store-fork-") as folder:
        agent = Path(folder)
        source = agent / "sessions" / "fork" / f"{key['session_id']}.jsonl"
        subagents_folder(source).mkdir(parents=True)
        source.write_bytes(entries_jsonl(entries))
        for agent_id, child in agents.items():
            (subagents_folder(source) / f"agent-{agent_id}.jsonl").write_bytes(
                entries_jsonl(child))
        new_id = kernel_fork(key["session_id"], up_to_message_id, agent_dir=agent,
                             new_id=new_id)
        from ..transcript.helpers import rename_session

        rename_session(new_id, title.strip(), agent_dir=agent)
        new_path = source.parent / f"{new_id}.jsonl"
        forked = _read_lines(new_path)
        for path in sorted(subagents_folder(new_path).glob("agent-*.jsonl")):
            others[SUBAGENT_PREFIX + path.name[len("agent-"):-len(".jsonl")]] = \
                _read_lines(path)
    target: SessionKey = {"project_key": key["project_key"], "session_id": new_id}
    try:
        for subpath, child in others.items():
            await session_store.append({**target, "subpath": subpath}, child)
        await session_store.append(target, forked)
    except Exception:
        await session_store.delete(target)
        raise
    return ForkSessionResult(new_id)


async def import_session_to_store(session_id: str, store: Any, *,
                                  directory: str | None = None, include_subagents: bool = True,
                                  batch_size: int = 500, agent_dir: str | Path | None = None
                                  ) -> None:
    """Copy a local session (and, unless ``include_subagents`` is False, its sub-agents'
    transcripts) into ``store``, ``batch_size`` records per ``append``, under the key
    a live mirror of it would use: the project key of ``directory``, else of the session's
    own working directory. Every file is read and validated first; the sub-agents are written
    before the main transcript, so a resume from the store never finds the main one without
    them. Records are appended with their ``uuid``, so importing again adds nothing."""
    from ..transcript.paths import agent_dir as default_agent_dir
    from ..transcript.paths import check_session_id, find_session
    from ..transcript.reader import parse_transcript
    from .sessions import _subagent_files

    if type(batch_size) is not int or batch_size < 1:
        raise SessionStoreError(f"import_session_to_store: batch_size must be a whole number "
                                f">= 1, got {batch_size!r}")
    agent = Path(agent_dir) if agent_dir is not None else default_agent_dir()
    path = find_session(check_session_id(session_id), agent, directory)
    if path is None:
        raise SessionNotFoundError(f"import_session_to_store: no local session {session_id}"
                                   f"{f' for {directory}' if directory else ''} under {agent}")

    def records(file: Path) -> tuple[list[Any], Any]:
        data = file.read_bytes()
        transcript = parse_transcript(data, file)  # a damaged file raises, naming the line
        complete = data[:transcript.valid_size]  # without a torn last line, as the reader
        return [json.loads(line) for line in complete.splitlines() if line.strip()], transcript

    main, transcript = records(path)
    project = project_key_for_directory(directory if directory is not None
                                        else transcript.header.cwd)
    key: SessionKey = {"project_key": project, "session_id": session_id}
    children = ({agent_id: records(file)[0] for agent_id, file in
                 _subagent_files(session_id, directory, agent).items()}
                if include_subagents else {})
    for agent_id, entries in children.items():
        await _append_batches(store, subagent_key(key, agent_id), entries, batch_size)
    await _append_batches(store, key, main, batch_size)


async def _append_batches(session_store: Any, key: SessionKey, entries: list[Any],
                          batch_size: int) -> None:
    for start in range(0, len(entries), batch_size):
        await session_store.append(key, entries[start:start + batch_size])
