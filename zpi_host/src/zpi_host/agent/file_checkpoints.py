"""File checkpoints: what a file was before a tool first changed it during one user message,
and putting files back to what they were at a message (``rewind``).

A checkpoint is a ``custom`` transcript record (namespace ``zpi.file_checkpoint``) holding the
file's bytes (base64), or that it did not exist, written before the change. Being a record, it
lives with the session: in its JSONL file, in the memory of an unsaved session, in a session
store through the mirror; it is read back on resume, and a fork copies no checkpoint (it
starts with none). Only the first change of each file per user message is kept: that is the
state "at" the message.

What is tracked: every change made through :func:`zpi_host.tools.write.commit_one` (the
``write`` and ``edit`` tools, and so the SDK's ``Write`` and ``Edit``) of a session with
checkpoints on, and of its sub-agents. What ``bash`` (or any program) changes is not: a
command's effects on files cannot be known before it runs, as in Claude Code.

Bounds: a file over :data:`MAX_FILE_BYTES` is not kept (recorded as skipped, so a rewind says
it could not restore it), nor anything once a session holds :data:`MAX_SESSION_BYTES` of
checkpoint contents.

Recorded paths are data: a rewind restores only a path that is, resolved now, itself (no
symlink on the way) and inside the workspace roots given by the caller (the session's, or
the directory the command runs in); others are reported as not restored.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ..errors import UsageError, ZpiError
from ..support.attrs_methods import FrozenFieldsEq
from ..transcript.paths import CHECKPOINT_NAMESPACE

if TYPE_CHECKING:
    from ..permissions.paths import WorkspaceRoots
    from ..transcript import SessionManager
    from ..transcript.records import Record

__all__ = [
    "CHECKPOINT_NAMESPACE", "MAX_FILE_BYTES", "MAX_SESSION_BYTES", "REWIND_NAMESPACE",
    "FileCheckpoints", "RewindError", "RewindPoint", "RewindReport", "check_enabled",
    "read_rewind_points", "rewind_files", "rewind_points", "rewind_session",
]

REWIND_NAMESPACE = "zpi.file_rewind"
#: a file larger than this is not kept (1 MiB)
MAX_FILE_BYTES = 1024 * 1024
#: no more checkpoint content than this per session (32 MiB)
MAX_SESSION_BYTES = 32 * 1024 * 1024


class RewindError(ZpiError):
    """Files could not be rewound (the message is unknown, or writing failed: nothing was
    changed then)."""


@attrs.frozen(repr=False, eq=False, slots=False)
class RewindReport(FrozenFieldsEq):
    """What a rewind did: files restored to their content at the message, files deleted
    (created since), and files it could not restore, each with the reason."""

    message_id: str
    restored: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    not_restored: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        """One line per fact, for a terminal: ``restored a.py``, ``deleted new.txt``."""
        lines = [f"restored {p}" for p in self.restored]
        lines += [f"deleted {p} (created since)" for p in self.deleted]
        lines += [f"not restored {p}: {why}" for p, why in self.not_restored]
        return "\n".join(lines) or f"no file changed since message {self.message_id}"

    def to_json(self) -> dict[str, Any]:
        return {"message": self.message_id, "restored": list(self.restored),
                "deleted": list(self.deleted),
                "not_restored": [{"path": p, "why": w} for p, w in self.not_restored]}


class FileCheckpoints:
    """A session's checkpoints: ``before_change`` is what the file tools call (through
    ``ToolContext.before_change``) before they commit; ``current`` gives the uuid of the user
    record of the input being run ("" when none: nothing is kept)."""

    def __init__(self, store: SessionManager, current: Callable[[], str]) -> None:
        self.store = store
        self.current = current
        self._touched: set[tuple[str, str]] = set()
        self._kept_bytes: int | None = None  # counted from the records at the first change

    def before_change(self, real: Path) -> None:
        """Keep ``real`` (a resolved path) as it is now, unless it was kept already during
        this user message."""
        message = self.current()
        if not message or (message, str(real)) in self._touched:
            return
        self._touched.add((message, str(real)))
        data: dict[str, Any] = {"message": message, "path": str(real)}
        data.update(self._content(real))
        self.store.append_custom(CHECKPOINT_NAMESPACE, data)

    def _content(self, real: Path) -> dict[str, Any]:
        from ..fs import nofollow
        from ..fs.files import read_fd_with_fingerprint

        try:
            fd, st = nofollow.open_regular(real)
        except FileNotFoundError:
            return {"existed": False}
        except (OSError, ZpiError) as exc:
            return {"existed": True, "skipped": f"could not be read: {exc}"}
        try:
            if st.st_size > MAX_FILE_BYTES:
                return {"existed": True, "skipped": f"larger than {MAX_FILE_BYTES} bytes"}
            if self._kept() + st.st_size > MAX_SESSION_BYTES:
                return {"existed": True, "skipped": f"the session keeps at most "
                                                    f"{MAX_SESSION_BYTES} bytes of checkpoints"}
            content, _ = read_fd_with_fingerprint(fd)
        finally:
            os.close(fd)
        self._kept_bytes = self._kept() + len(content)
        return {"existed": True, "content": base64.b64encode(content).decode("ascii"),
                "mode": st.st_mode & 0o7777}

    def _kept(self) -> int:
        if self._kept_bytes is None:
            self._kept_bytes = sum(len(d.get("content") or "") * 3 // 4
                                   for d in checkpoint_data(self.store.records))
        return self._kept_bytes

    def rewind(self, message_id: str, roots: WorkspaceRoots) -> RewindReport:
        """Put every file changed since user message ``message_id`` back (see
        :func:`rewind_files`); later changes of the same input are kept again."""
        report = rewind_files(self.store, message_id, roots)
        self._touched.clear()
        return report


def checkpoint_data(records: Sequence[Record]) -> list[dict[str, Any]]:
    """The data of every checkpoint record, in order."""
    from ..transcript.records import CustomRecord

    return [r.data for r in records if isinstance(r, CustomRecord)
            and r.namespace == CHECKPOINT_NAMESPACE and isinstance(r.data, dict)]


def rewind_files(store: SessionManager, message_id: str, roots: WorkspaceRoots
                 ) -> RewindReport:
    """Restore the files a tool changed since user message ``message_id`` of the session
    ``store`` owns (a file created since is deleted), all at once through the file commit
    engine, and record what was done (a ``zpi.file_rewind`` record). Raises
    :class:`RewindError` for an id that is not a user message of the session, or when the
    files cannot be written (then none is changed)."""
    from ..fs.files import ANY_STATE, FileChange, FileCommitError, commit
    from ..transcript.records import UserRecord

    records = store.records
    start = next((i for i, r in enumerate(records)
                  if isinstance(r, UserRecord) and r.uuid == message_id), None)
    if start is None:
        raise RewindError(
            f"{message_id!r} is not a user message of session {store.session_id}; give the "
            "uuid of a UserMessage the session echoed (with enable_file_checkpointing) or of "
            "a user entry of get_session_messages() / 'zpi-host sessions show --json'")
    first: dict[str, dict[str, Any]] = {}
    for data in checkpoint_data(records[start:]):
        if isinstance(data.get("path"), str):
            first.setdefault(data["path"], data)
    changes: list[FileChange] = []
    restored: list[str] = []
    deleted: list[str] = []
    refused: list[tuple[str, str]] = []
    for path, data in first.items():
        problem = _unusable(path, roots)
        if problem is None and data.get("skipped"):
            problem = f"no checkpoint was kept ({data['skipped']})"
        if problem is not None:
            refused.append((path, problem))
            continue
        real = Path(path)
        now = _current_bytes(real)
        if data.get("existed") is False:
            if now is not None:
                changes.append(FileChange(real, None, ANY_STATE))
                deleted.append(path)
            continue
        try:
            content = base64.b64decode(str(data.get("content")), validate=True)
        except ValueError:
            refused.append((path, "its checkpoint record is damaged"))
            continue
        if now != content:
            changes.append(FileChange(real, content, ANY_STATE))
            restored.append(path)
    if changes:
        try:
            commit(changes, resolved=True)
        except FileCommitError as exc:
            raise RewindError(f"rewinding to message {message_id} failed, no file was "
                              f"changed: {exc}") from exc
    report = RewindReport(message_id, tuple(restored), tuple(deleted), tuple(refused))
    store.append_custom(REWIND_NAMESPACE, report.to_json())
    return report


def _unusable(path: str, roots: WorkspaceRoots) -> str | None:
    """Why a recorded path may not be written now, or None."""
    from ..fs.nofollow import UnusablePathError, resolve

    candidate = Path(path)
    if not candidate.is_absolute():
        return "the recorded path is not absolute"
    try:
        real = resolve(candidate)
    except UnusablePathError as exc:
        return str(exc)
    if real != candidate:
        return f"it leads elsewhere now ({real})"
    if roots.root_holding(real) is None:
        return f"outside the workspace roots ({roots.describe()})"
    return None


def _current_bytes(real: Path) -> bytes | None:
    """The file's bytes now (None when absent); a non-file there fails in the commit."""
    from ..fs import nofollow
    from ..fs.files import read_fd_with_fingerprint

    try:
        fd, _ = nofollow.open_regular(real)
    except FileNotFoundError:
        return None
    except (OSError, ZpiError):
        return b"\0unreadable"  # never equal to a checkpoint: the commit decides
    try:
        return read_fd_with_fingerprint(fd)[0]
    finally:
        os.close(fd)


def rewind_session(session_id: str, message_id: str, *, cwd: Path | str,
                   agent_dir: Path | str | None = None,
                   add_dirs: Sequence[Path | str] = ()) -> RewindReport:
    """Rewind a saved session's files (``zpi-host sessions rewind``, chat's ``/rewind`` for a
    session not open in this process): the session is opened as its writable owner (so a
    running session elsewhere refuses), paths restored only inside ``cwd`` and
    ``add_dirs``."""
    from ..permissions.paths import WorkspaceRoots
    from ..transcript import SessionManager

    roots = WorkspaceRoots(Path(cwd), tuple(Path(d) for d in add_dirs))
    with SessionManager.open(session_id, agent_dir=agent_dir) as store:
        return rewind_files(store, message_id, roots)


@attrs.frozen(repr=False, eq=False, slots=False)
class RewindPoint(FrozenFieldsEq):
    """A user message a session's files can be rewound to: its uuid, its prompt, and how
    many files a tool changed since (0: rewinding would change nothing)."""

    message_id: str
    prompt: str
    files: int


def rewind_points(records: Sequence[Record]) -> list[RewindPoint]:
    """Every user message of ``records`` (a session's) with the files changed since."""
    from ..transcript.records import UserRecord

    points: list[tuple[str, str, int]] = []
    paths: list[set[str]] = []
    for index, record in enumerate(records):
        if isinstance(record, UserRecord):
            points.append((record.uuid, record.message.text_content, index))
    for _, _, index in points:
        paths.append({str(d.get("path")) for d in checkpoint_data(records[index:])})
    return [RewindPoint(uuid, text, len(files))
            for (uuid, text, _), files in zip(points, paths, strict=True)]


def read_rewind_points(session_id: str, *, agent_dir: Path | str | None = None
                       ) -> list[RewindPoint]:
    """:func:`rewind_points` of a saved session, read without opening it for writing."""
    from ..transcript.errors import SessionNotFoundError
    from ..transcript.paths import locate
    from ..transcript.reader import read_transcript

    path = locate(session_id, agent_dir=agent_dir)
    if path is None:
        raise SessionNotFoundError(f"no saved session {session_id!r}; 'zpi-host sessions "
                                   "list --all' shows them")
    return rewind_points(read_transcript(path).records)


def check_enabled(checkpoints: FileCheckpoints | None) -> FileCheckpoints:
    """The session's checkpoints, or the error saying how to turn them on."""
    if checkpoints is None:
        raise UsageError("rewind_files needs file checkpoints: create the session with "
                         "enable_file_checkpointing=True (SDK) or file_checkpoints=True")
    return checkpoints
