"""Typed errors of session storage: each says what went wrong, where, and what to do."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError, ZpiError


class TranscriptError(ZpiError):
    """A transcript file (or a record for it) is invalid. Raised with the file and line so the
    user can find the damage; nothing is rewritten when reading fails."""

    def __init__(
        self, problem: str, *, path: Path | str | None = None, line: int | None = None,
        hint: str | None = None,
    ) -> None:
        where = str(path) if path is not None else "<memory>"
        if line is not None:
            where += f":{line}"
        if hint is None:
            hint = ("nothing was changed; fix or remove that line by hand, or move the file "
                    "away to start over")
        super().__init__(f"{where}: {problem} ({hint})")
        self.path = Path(path) if path is not None else None
        self.line = line
        self.problem = problem


class TranscriptVersionError(TranscriptError):
    """The file was written in a format this zpi-host does not read (usually a newer one)."""


class RecordError(ZpiError):
    """A record the caller asked to append is invalid (unknown type, bad field, not JSON);
    nothing was written."""


class TranscriptLockedError(ZpiError):
    """Another owner (in this process or another one) has the session open for writing."""

    def __init__(self, path: Path, pid: int | None, *, same_process: bool = False) -> None:
        if same_process:
            detail = (f"is already open for writing in this process (pid {pid}); close that "
                      "session first, or fork it")
        else:
            owner = f"pid {pid}" if pid is not None else "an unknown pid"
            detail = (f"is open for writing by another zpi-host process ({owner}); wait for it "
                      "to finish or stop it, or fork the session to continue separately")
        super().__init__(f"session file {path} {detail}")
        self.path = path
        self.pid = pid


class SessionBusyError(ZpiError):
    """The session is running (or open) in this process, so it cannot be changed from outside
    its owner right now."""


class SessionNotFoundError(ZpiError):
    """No session with that id (or no record with that uuid in it)."""


class SessionExistsError(UsageError):
    """A new session was asked for with the id of one that already exists."""


class InvalidSessionIdError(UsageError):
    """A session id given by a user is not a UUID (ids become file names, so nothing else is
    accepted: no path traversal)."""
