"""Atomic file commits: the one path every file change of the host goes through.

A change (one or more files) is checked whole before anything is touched: targets must be
regular files or absent, their directories creatable, and what is on disk must still be what
the caller last read. Then each new content is written to a temporary file beside its target,
flushed to disk and moved into place with ``os.replace``. If any step fails, every file of the
change is put back to its exact previous bytes, mode and times, and the error names the file
and the step.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import attrs

from .errors import ZpiError

#: Steps at which ``commit``'s ``_fault`` callback is called, in order.
STEPS: Final = ("precheck", "mkdir", "write_temp", "fsync", "replace", "fsync_dir")

Fault = Callable[[str, Path], None]


class FileCommitError(ZpiError):
    """A file change could not be made; nothing of it stays (see ``rollback_failures``)."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | None = None,
        step: str | None = None,
        rollback_failures: Sequence[str] = (),
    ) -> None:
        if rollback_failures:
            message += (
                "; ROLLBACK INCOMPLETE, check these files by hand: " + "; ".join(rollback_failures)
            )
        super().__init__(message)
        self.path, self.step = path, step
        self.rollback_failures = tuple(rollback_failures)


class StaleFileError(FileCommitError):
    """The file on disk is not what the caller last read, so writing would lose a change."""


@attrs.frozen
class FileFingerprint:
    """What a file looked like when it was read: compared before writing to detect stale reads."""

    size: int
    mtime_ns: int
    sha256: str

    @classmethod
    def of(cls, path: Path | str) -> FileFingerprint:
        """Fingerprint of the file at ``path`` (raises ``OSError`` if it cannot be read)."""
        return read_with_fingerprint(path)[1]

    @classmethod
    def of_bytes(cls, data: bytes, mtime_ns: int) -> FileFingerprint:
        return cls(len(data), mtime_ns, hashlib.sha256(data).hexdigest())

    def same_content(self, other: FileFingerprint) -> bool:
        """Equal size and hash; a changed mtime alone (``touch``) does not change content."""
        return self.size == other.size and self.sha256 == other.sha256

    def describe_change(self, now: FileFingerprint) -> str:
        """How ``now`` differs from this earlier fingerprint, for error messages."""
        parts = []
        if now.size != self.size:
            parts.append(f"size {self.size} -> {now.size} bytes")
        if now.mtime_ns != self.mtime_ns:
            parts.append(f"mtime moved by {(now.mtime_ns - self.mtime_ns) / 1e9:+.3f} s")
        if now.sha256 != self.sha256:
            parts.append("content hash differs")
        return ", ".join(parts) or "unchanged"


def read_with_fingerprint(path: Path | str) -> tuple[bytes, FileFingerprint]:
    """The bytes of a file and their fingerprint, taken from one consistent read (retried if
    the file changes while being read)."""
    with open(path, "rb") as f:
        for _ in range(5):
            before = os.fstat(f.fileno())
            f.seek(0)
            data = f.read()
            after = os.fstat(f.fileno())
            if (before.st_size, before.st_mtime_ns) == (after.st_size, after.st_mtime_ns):
                break
        return data, FileFingerprint.of_bytes(data, after.st_mtime_ns)


class _AnyState:
    def __repr__(self) -> str:
        return "ANY_STATE"


#: ``FileChange.expected`` for a target whose current state is not checked (use sparingly).
ANY_STATE: Final = _AnyState()


@attrs.frozen
class FileChange:
    """One file of a change. ``content`` None deletes the file. ``expected`` is the fingerprint
    the caller last read, ``None`` for a file that must not exist yet, or
    ``ANY_STATE`` to skip the stale-read check."""

    path: Path = attrs.field(converter=Path)
    content: bytes | None
    expected: FileFingerprint | _AnyState | None = None


@attrs.frozen
class CommittedFile:
    """What a commit did to one file; ``fingerprint`` is the new state (None once deleted)."""

    path: Path
    created: bool
    deleted: bool
    fingerprint: FileFingerprint | None
    previous: FileFingerprint | None


@attrs.frozen
class CommitReport:
    files: tuple[CommittedFile, ...]

    def get(self, path: Path | str) -> CommittedFile:
        """The entry for ``path`` (as given in the change)."""
        for f in self.files:
            if f.path == Path(path):
                return f
        raise KeyError(str(path))


@attrs.define
class _Plan:
    change: FileChange
    real: Path
    prev_data: bytes | None = None
    prev_stat: os.stat_result | None = None
    prev_fp: FileFingerprint | None = None
    new_fp: FileFingerprint | None = None
    temp: Path | None = None
    applied: bool = False


def _no_fault(step: str, path: Path) -> None:
    return None


@attrs.define
class _Progress:
    """The step being done and on which path, for error messages; calls the test fault."""

    fault: Fault
    step: str = "precheck"
    path: Path = Path()

    def __call__(self, step: str, path: Path) -> None:
        self.step, self.path = step, path
        self.fault(step, path)


def commit(changes: Sequence[FileChange], *, _fault: Fault | None = None) -> CommitReport:
    """Apply ``changes`` all or nothing. Raises :class:`StaleFileError` or
    :class:`FileCommitError` (before touching anything when the pre-check fails).

    ``_fault(step, path)`` is called before each step (see ``STEPS``) so tests can make any
    step fail; whatever it raises is handled exactly like a real failure of that step.
    """
    plans = _precheck(changes, _fault or _no_fault)
    at = _Progress(_fault or _no_fault)
    created_dirs: list[Path] = []
    try:
        for plan in plans:
            at("mkdir", plan.change.path)
            _make_parents(plan.real.parent, created_dirs)
        for plan in plans:
            if plan.change.content is not None:
                _write_temp(plan, at)
        for plan in plans:
            at("replace", plan.change.path)
            _check_unchanged(plan)
            if plan.temp is None:
                os.unlink(plan.real)
            else:
                os.replace(plan.temp, plan.real)
                plan.temp = None
            plan.applied = True
        for directory in dict.fromkeys(p.real.parent for p in plans):
            at("fsync_dir", directory)
            _fsync_dir(directory)
    except BaseException as exc:
        failures = _rollback(plans, created_dirs)
        if not isinstance(exc, Exception):
            raise
        outcome = (
            "rollback was attempted" if failures
            else "every file of the change was restored to its previous state"
        )
        if isinstance(exc, StaleFileError):
            raise StaleFileError(
                f"{exc}; {outcome}", path=exc.path, step=at.step, rollback_failures=failures
            ) from exc
        total = len(plans)
        raise FileCommitError(
            f"could not commit the change to {total} file{'s' * (total != 1)}: step "
            f"{at.step!r} failed for {at.path}: {type(exc).__name__}: {exc}; {outcome}",
            path=at.path, step=at.step, rollback_failures=failures,
        ) from exc
    return CommitReport(tuple(
        CommittedFile(p.change.path, p.prev_data is None, p.change.content is None, p.new_fp,
                      p.prev_fp)
        for p in plans
    ))


def _precheck(changes: Sequence[FileChange], fault: Fault) -> list[_Plan]:
    """Check the whole change; touches nothing. Reads each existing target to back it up."""
    plans: list[_Plan] = []
    seen: dict[Path, Path] = {}
    for change in changes:
        path = change.path
        try:
            fault("precheck", path)
        except Exception as exc:
            raise _refuse(path, f"cannot write {path}: pre-check failed: {type(exc).__name__}: "
                                f"{exc}; nothing was changed") from exc
        if change.content is not None and not isinstance(change.content, bytes):
            raise TypeError(f"FileChange.content for {path} must be bytes or None")
        real = Path(os.path.realpath(os.path.abspath(path)))
        if real in seen:
            raise _refuse(path, f"{path} appears twice in one change (also as {seen[real]}); "
                                "merge the two changes into one")
        seen[real] = path
        plan = _Plan(change, real)
        _check_parent(plan)
        _check_target(plan)
        plans.append(plan)
    return plans


def _refuse(path: Path, message: str, kind: type[FileCommitError] = FileCommitError) -> Exception:
    return kind(message, path=path, step="precheck")


def _check_target(plan: _Plan) -> None:
    path, expected = plan.change.path, plan.change.expected
    try:
        st = os.stat(plan.real)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as exc:
        raise _refuse(path, f"cannot inspect {path}: {exc}") from exc
    if st is None:
        if isinstance(expected, FileFingerprint):
            raise _refuse(path, f"{path} was deleted since it was read; read it again (or "
                                "create it anew)", StaleFileError)
        if plan.change.content is None:
            raise _refuse(path, f"cannot delete {path}: it does not exist")
        return
    if stat.S_ISDIR(st.st_mode):
        raise _refuse(path, f"{path} is a directory; a file change cannot replace a directory")
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, f"{path} is not a regular file (a device, socket or pipe); it "
                            "cannot be written")
    try:
        plan.prev_data, plan.prev_fp = read_with_fingerprint(plan.real)
        plan.prev_stat = os.stat(plan.real)
    except OSError as exc:
        raise _refuse(path, f"cannot read {path} to back it up before writing: {exc}") from exc
    if expected is None:
        raise _refuse(path, f"{path} already exists ({plan.prev_fp.size} bytes) but the change "
                            "expected a new file; read it first, then change it", StaleFileError)
    if isinstance(expected, FileFingerprint) and not expected.same_content(plan.prev_fp):
        raise _refuse(path, f"{path} changed on disk since it was read ("
                            f"{expected.describe_change(plan.prev_fp)}); read it again before "
                            "changing it", StaleFileError)
    if not os.access(plan.real, os.W_OK):
        raise _refuse(path, f"{path} is read-only; change its permissions first if it should "
                            "be written")


def _check_parent(plan: _Plan) -> None:
    """The nearest existing ancestor must be a writable directory."""
    path, ancestor = plan.change.path, plan.real.parent
    while not os.path.lexists(ancestor):
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise _refuse(path, f"cannot write {path}: {ancestor} is a file, not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise _refuse(path, f"cannot write {path}: no permission to write in directory "
                            f"{ancestor}")


def _make_parents(directory: Path, created: list[Path]) -> None:
    missing: list[Path] = []
    while not directory.is_dir():
        missing.append(directory)
        directory = directory.parent
    for d in reversed(missing):
        os.mkdir(d)
        created.append(d)


def _open_temp(target: Path, mode: int) -> tuple[int, Path]:
    """A new, exclusively created temporary file beside ``target`` (same filesystem)."""
    while True:
        temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.zpi-tmp")
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
            return os.open(temp, flags, mode), temp
        except FileExistsError:
            continue


def _write_temp(plan: _Plan, at: _Progress) -> None:
    """Write the new content to a temporary file with the old file's mode, flushed to disk."""
    content = plan.change.content
    assert content is not None
    at("write_temp", plan.change.path)
    fd, plan.temp = _open_temp(plan.real, 0o666)
    try:
        _write_all(fd, content)
        if plan.prev_stat is not None:
            _copy_attributes(fd, plan.temp, plan.prev_stat, keep_times=False)
        at("fsync", plan.change.path)
        os.fsync(fd)
        plan.new_fp = FileFingerprint.of_bytes(content, os.fstat(fd).st_mtime_ns)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _copy_attributes(fd: int, path: Path, st: os.stat_result, *, keep_times: bool) -> None:
    """Mode bits exactly; ownership when permitted (best effort: only root may give files
    away); times when restoring a backup."""
    if hasattr(os, "fchmod"):
        os.fchmod(fd, stat.S_IMODE(st.st_mode))
    else:  # pragma: no cover - Windows
        os.chmod(path, stat.S_IMODE(st.st_mode))
    if hasattr(os, "fchown"):
        own = os.fstat(fd)
        if (own.st_uid, own.st_gid) != (st.st_uid, st.st_gid):
            with contextlib.suppress(PermissionError):  # only root may give files away
                os.fchown(fd, st.st_uid, st.st_gid)
    if keep_times:
        os.utime(fd if os.utime in os.supports_fd else path,
                 ns=(st.st_atime_ns, st.st_mtime_ns))


def _check_unchanged(plan: _Plan) -> None:
    """Re-check right before replacing: someone may have written since the pre-check."""
    try:
        st = os.stat(plan.real)
    except FileNotFoundError:
        st = None
    if plan.prev_stat is None:
        if st is not None:
            raise StaleFileError(
                f"{plan.change.path} was created by someone else during the write; read it "
                "and try again", path=plan.change.path, step="replace",
            )
        return
    old = plan.prev_stat
    if st is None or (st.st_size, st.st_mtime_ns, st.st_ino) != (old.st_size, old.st_mtime_ns,
                                                                  old.st_ino):
        raise StaleFileError(
            f"{plan.change.path} changed on disk during the write; read it again and retry",
            path=plan.change.path, step="replace",
        )


def _fsync_dir(directory: Path) -> None:
    if os.name == "nt":  # pragma: no cover - directories cannot be opened there
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _rollback(plans: list[_Plan], created_dirs: list[Path]) -> list[str]:
    """Undo every applied file, remove temporaries and the directories made; returns what
    could not be undone."""
    failures: list[str] = []
    for plan in plans:
        if plan.temp is not None:
            try:
                plan.temp.unlink(missing_ok=True)
            except OSError as exc:
                failures.append(f"temporary file {plan.temp} not removed: {exc}")
            plan.temp = None
        if not plan.applied:
            continue
        try:
            if plan.prev_data is None:
                os.unlink(plan.real)
            else:
                assert plan.prev_stat is not None
                _restore(plan.real, plan.prev_data, plan.prev_stat)
        except OSError as exc:
            failures.append(f"{plan.change.path} not restored: {exc}")
    for directory in reversed(created_dirs):
        with contextlib.suppress(OSError):  # not empty (someone else's file): harmless
            os.rmdir(directory)
    for directory in dict.fromkeys(p.real.parent for p in plans if p.applied):
        try:
            if directory.is_dir():
                _fsync_dir(directory)
        except OSError as exc:
            failures.append(f"directory {directory} not flushed: {exc}")
    return failures


def _restore(target: Path, data: bytes, st: os.stat_result) -> None:
    """Put back a file's previous bytes, mode and times, atomically."""
    fd, temp = _open_temp(target, 0o600)
    try:
        try:
            _write_all(fd, data)
            _copy_attributes(fd, temp, st, keep_times=True)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
