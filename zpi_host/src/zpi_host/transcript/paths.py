"""Where sessions live: ``<agent dir>/sessions/<project key>/<session id>.jsonl``.

Cheap to import (stdlib only): the CLI lists sessions without loading cattrs.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TypeGuard

from ..settings.manager import agent_dir
from ..support.digests import sha256
from .errors import InvalidSessionIdError, SessionNotFoundError

SUFFIX = ".jsonl"
#: Longer project keys are cut to a prefix plus a hash of the whole path.
MAX_KEY_LENGTH = 100
_HASH_LENGTH = 16
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def sessions_root(agent: Path) -> Path:
    return Path(agent) / "sessions"


def project_key(cwd: Path | str) -> str:
    """A directory name for a project: its absolute path with every character outside
    ``[A-Za-z0-9._-]`` replaced by ``-``. Keys longer than 100 characters become a prefix, ``-``
    and the first 16 hex digits of the sha256 of the full path, so they stay stable and
    distinct. Different paths may share a short key (``/a/b`` and ``/a-b``): the header's cwd
    decides which sessions belong to a project."""
    full = os.path.abspath(os.fspath(cwd))
    key = _UNSAFE.sub("-", full)
    if len(key) <= MAX_KEY_LENGTH:
        return key
    digest = sha256(full.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_LENGTH]
    return f"{key[: MAX_KEY_LENGTH - _HASH_LENGTH - 1]}-{digest}"


def project_dir(cwd: Path | str, agent: Path) -> Path:
    return sessions_root(agent) / project_key(cwd)


def new_session_id() -> str:
    return str(uuid.uuid4())


def check_session_id(session_id: object) -> str:
    """A user-given id, checked to be a UUID and normalised to lower case (it becomes a file
    name, so ``../x`` and friends are refused)."""
    if not isinstance(session_id, str) or not _UUID.fullmatch(session_id):
        raise InvalidSessionIdError(
            f"invalid session id {session_id!r}: session ids are UUIDs such as "
            "'0b6b1c1e-5d0a-4f55-9d1e-3f5a2f1d6c2b' (see `zpi-host sessions list`)")
    return session_id.lower()


def session_path(session_id: str, cwd: Path | str, agent: Path) -> Path:
    return project_dir(cwd, agent) / f"{check_session_id(session_id)}{SUFFIX}"


#: a session's sub-agent transcripts: ``<id>/subagents/agent-<agent id>.jsonl`` beside its file
SUBAGENTS_FOLDER = "subagents"
#: the namespace of the ``custom`` records that link a session and its sub-agents
SUBAGENT_NAMESPACE = "zpi.subagent"
#: the namespace of the ``custom`` records that keep a file as it was before a tool changed
#: it (``agent/file_checkpoints.py``); a fork copies none
CHECKPOINT_NAMESPACE = "zpi.file_checkpoint"


_AGENT_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")


def is_agent_id(value: object) -> TypeGuard[str]:
    """Whether ``value`` can name a sub-agent's file (``agent-<id>.jsonl``): this host's ids
    are UUIDs; anything with a path separator or a leading dot is refused."""
    return isinstance(value, str) and _AGENT_ID.fullmatch(value) is not None


def subagents_folder(session_file: Path) -> Path:
    """Where the sub-agents of the session saved in ``session_file`` are saved."""
    return session_file.parent / session_file.stem / SUBAGENTS_FOLDER


def iter_session_files(agent: Path, cwd: Path | str | None = None) -> Iterator[Path]:
    """Every ``*.jsonl`` of one project (``cwd``) or of all projects (``None``)."""
    root = sessions_root(agent)
    dirs = [project_dir(cwd, agent)] if cwd is not None else _subdirs(root)
    for folder in dirs:
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if entry.name.endswith(SUFFIX) and _UUID.fullmatch(entry.name[: -len(SUFFIX)]):
                yield Path(entry.path)


def find_session(session_id: str, agent: Path, cwd: Path | str | None = None) -> Path | None:
    """The file of a session: looked for in ``cwd``'s project folder first (when given), then
    in every project (ids are UUIDs, so there is at most one)."""
    name = f"{check_session_id(session_id)}{SUFFIX}"
    dirs = _subdirs(sessions_root(agent))
    if cwd is not None:
        dirs.insert(0, project_dir(cwd, agent))
    for folder in dirs:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def _subdirs(root: Path) -> list[Path]:
    try:
        return sorted(Path(e.path) for e in os.scandir(root) if e.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return []


def locate(session: str | Path, *, agent_dir: Path | str | None = None,
           cwd: Path | str | None = None) -> Path | None:
    """A session's file from its id, or from a path to it (what ``--resume`` may be given);
    None if there is no such file."""
    if isinstance(session, str) and not _looks_like_path(session):
        return find_session(check_session_id(session), _agent(agent_dir), cwd)
    path = Path(session).expanduser()
    return path if path.is_file() else None


def not_found(session: str | Path, agent_dir: Path | str | None) -> SessionNotFoundError:
    if isinstance(session, Path) or _looks_like_path(session):
        return SessionNotFoundError(f"no session file {session}")
    return SessionNotFoundError(f"no session {session!r} under {_agent(agent_dir) / 'sessions'}"
                                " (see `zpi-host sessions list --all`)")


def _looks_like_path(text: str) -> bool:
    return os.sep in text or text.endswith(SUFFIX) or (os.altsep or os.sep) in text


def _agent(explicit: Path | str | None) -> Path:
    return Path(explicit) if explicit is not None else agent_dir()
