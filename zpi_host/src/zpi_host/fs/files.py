"""Atomic file commits: the one path every file change of the host goes through.

A change (one or more files) is checked whole before anything is touched: targets must be
regular files or absent, their directories creatable, and what is on disk must still be what
the caller last read. Then each new content is written to a temporary file beside its target,
flushed to disk and moved into place with ``os.replace``. If any step fails, every file of the
change is put back to its exact previous bytes, mode and times, and the error names the file
and the step.

Each path is resolved once; from then on everything happens relative to a descriptor of the
target's directory, opened without following symlinks (:mod:`zpi_host.fs.nofollow`), so a symlink
swapped in during the commit cannot redirect it. Temporary files are named
``.<name>.zpi-<pid>-<hex>.tmp``: when a host is killed mid-commit, the next commit into that
directory (and resuming the session) removes them once their process is gone
(:mod:`zpi_host.fs.stale_temps`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import attrs

from ..errors import ZpiError
from ..support.attrs_methods import FieldsEq, FrozenFieldsEq
from . import nofollow
from .durable import write_all
from .stale_temps import sweep_directory, temp_name

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


@attrs.frozen(repr=False, eq=False, slots=False)
class FileFingerprint(FrozenFieldsEq):
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
        import hashlib  # file contents: OpenSSL's SHA-256, loaded when a file is first hashed

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
        return read_fd_with_fingerprint(f.fileno())


def read_fd_with_fingerprint(fd: int) -> tuple[bytes, FileFingerprint]:
    """:func:`read_with_fingerprint` of an open file descriptor (read from its start)."""
    for _ in range(5):
        before = os.fstat(fd)
        chunks: list[bytes] = []
        offset = 0
        while chunk := os.pread(fd, max(before.st_size - offset, 0) + 65536, offset):
            chunks.append(chunk)
            offset += len(chunk)
        data = b"".join(chunks)
        after = os.fstat(fd)
        if (before.st_size, before.st_mtime_ns) == (after.st_size, after.st_mtime_ns):
            break
    return data, FileFingerprint.of_bytes(data, after.st_mtime_ns)


class _AnyState:
    def __repr__(self) -> str:
        return "ANY_STATE"


#: ``FileChange.expected`` for a target whose current state is not checked (use sparingly).
ANY_STATE: Final = _AnyState()


@attrs.frozen(repr=False, eq=False, slots=False)
class FileChange(FrozenFieldsEq):
    """One file of a change. ``content`` None deletes the file. ``expected`` is the fingerprint
    the caller last read, ``None`` for a file that must not exist yet, or
    ``ANY_STATE`` to skip the stale-read check."""

    path: Path = attrs.field(converter=Path)
    content: bytes | None
    expected: FileFingerprint | _AnyState | None = None


@attrs.frozen(repr=False, eq=False, slots=False)
class CommittedFile(FrozenFieldsEq):
    """What a commit did to one file; ``fingerprint`` is the new state (None once deleted)."""

    path: Path
    created: bool
    deleted: bool
    fingerprint: FileFingerprint | None
    previous: FileFingerprint | None


@attrs.frozen(repr=False, eq=False, slots=False)
class CommitReport(FrozenFieldsEq):
    files: tuple[CommittedFile, ...]

    def get(self, path: Path | str) -> CommittedFile:
        """The entry for ``path`` (as given in the change)."""
        for f in self.files:
            if f.path == Path(path):
                return f
        raise KeyError(str(path))


@attrs.define(repr=False, eq=False, slots=False)
class _Plan(FieldsEq):
    change: FileChange
    real: Path
    dir_fd: int = -1
    missing: list[str] = attrs.Factory(list)
    prev_data: bytes | None = None
    prev_stat: os.stat_result | None = None
    prev_fp: FileFingerprint | None = None
    new_fp: FileFingerprint | None = None
    temp: str | None = None
    applied: bool = False

    @property
    def name(self) -> str:
        return self.real.name


def _no_fault(step: str, path: Path) -> None:
    return None


@attrs.define(repr=False, eq=False, slots=False)
class _Progress(FieldsEq):
    """The step being done and on which path, for error messages; calls the test fault."""

    fault: Fault
    step: str = "precheck"
    path: Path = Path()

    def __call__(self, step: str, path: Path) -> None:
        self.step, self.path = step, path
        self.fault(step, path)


@attrs.define(repr=False, eq=False, slots=False)
class _Descriptors(FieldsEq):
    """Every directory descriptor a commit holds, and the directories it made (as parent
    descriptor and name, so rollback removes exactly those); all closed at the end."""

    held: list[int] = attrs.Factory(list)
    created: list[tuple[int, str]] = attrs.Factory(list)

    def keep(self, fd: int) -> int:
        self.held.append(fd)
        return fd

    def close(self) -> None:
        for fd in self.held:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.held.clear()


def commit(changes: Sequence[FileChange], *, resolved: bool = False,
           _fault: Fault | None = None) -> CommitReport:
    """Apply ``changes`` all or nothing. Raises :class:`StaleFileError` or
    :class:`FileCommitError` (before touching anything when the pre-check fails).

    ``resolved``: the paths were already resolved (and judged, by the permission check), so
    they are used as they are, and a symlink met anywhere on them is refused as a change
    during the call; otherwise each path is resolved once here.

    ``_fault(step, path)`` is called before each step (see ``STEPS``) so tests can make any
    step fail; whatever it raises is handled exactly like a real failure of that step.
    """
    fds = _Descriptors()
    try:
        return _commit(changes, resolved, _fault or _no_fault, fds)
    finally:
        fds.close()


def _commit(changes: Sequence[FileChange], resolved: bool, fault: Fault,
            fds: _Descriptors) -> CommitReport:
    plans = _precheck(changes, resolved, fault, fds)
    at = _Progress(fault)
    try:
        for plan in plans:
            at("mkdir", plan.change.path)
            _make_parents(plan, fds)
        for plan in plans:
            if plan.change.content is not None:
                _write_temp(plan, at)
        for plan in plans:
            at("replace", plan.change.path)
            _check_unchanged(plan)
            if plan.temp is None:
                os.unlink(plan.name, dir_fd=plan.dir_fd)
            else:
                os.replace(plan.temp, plan.name, src_dir_fd=plan.dir_fd,
                           dst_dir_fd=plan.dir_fd)
                plan.temp = None
            plan.applied = True
        for plan in _one_per_directory(plans):
            at("fsync_dir", plan.real.parent)
            os.fsync(plan.dir_fd)
    except BaseException as exc:
        failures = _rollback(plans, fds)
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
    for plan in _one_per_directory(plans):
        sweep_directory(plan.dir_fd, plan.real.parent)
    return CommitReport(tuple(
        CommittedFile(p.change.path, p.prev_data is None, p.change.content is None, p.new_fp,
                      p.prev_fp)
        for p in plans
    ))


def _one_per_directory(plans: list[_Plan]) -> list[_Plan]:
    return list({p.real.parent: p for p in reversed(plans) if p.dir_fd >= 0}.values())[::-1]


def _precheck(changes: Sequence[FileChange], resolved: bool, fault: Fault,
              fds: _Descriptors) -> list[_Plan]:
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
        absolute = Path(os.path.abspath(path))
        try:
            real = absolute if resolved else nofollow.resolve(absolute)
        except nofollow.UnusablePathError as exc:
            raise _refuse(path, f"cannot write {path}: {exc}") from exc
        if real in seen:
            raise _refuse(path, f"{path} appears twice in one change (also as {seen[real]}); "
                                "merge the two changes into one")
        seen[real] = path
        plan = _Plan(change, real)
        plans.append(plan)
        _check_parent(plan, fds)
        _check_target(plan)
    return plans


def _refuse(path: Path, message: str, kind: type[FileCommitError] = FileCommitError) -> Exception:
    return kind(message, path=path, step="precheck")


def _check_parent(plan: _Plan, fds: _Descriptors) -> None:
    """Open the target's directory (or its nearest existing ancestor) without following
    symlinks; it must be a writable directory."""
    path = plan.change.path
    try:
        fd, plan.missing = nofollow.walk_existing(plan.real.parent)
    except nofollow.PathChangedError as exc:
        raise _refuse(path, f"cannot write {path}: {exc}") from exc
    except NotADirectoryError as exc:
        raise _refuse(path, f"cannot write {path}: {exc.filename} is a file, not a "
                            "directory") from exc
    except OSError as exc:
        raise _refuse(path, f"cannot write {path}: cannot open its directory: {exc}") from exc
    plan.dir_fd = fds.keep(fd)
    if not os.access(".", os.W_OK | os.X_OK, dir_fd=fd):
        ancestor = Path(plan.real.parent, *([".."] * len(plan.missing)))
        raise _refuse(path, f"cannot write {path}: no permission to write in directory "
                            f"{os.path.normpath(ancestor)}")


def _check_target(plan: _Plan) -> None:
    path, expected = plan.change.path, plan.change.expected
    st = None
    if not plan.missing:
        try:
            st = nofollow.lstat_at(plan.dir_fd, plan.name)
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
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(path, f"cannot write {path}: "
                            f"{nofollow.PathChangedError(path, 'it became a symlink')}")
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, f"{path} is not a regular file: it is {nofollow.kind_of(st.st_mode)}; "
                            "it cannot be written")
    try:
        fd, plan.prev_stat = nofollow.open_regular_at(plan.dir_fd, plan.name, path)
        try:
            plan.prev_data, plan.prev_fp = read_fd_with_fingerprint(fd)
        finally:
            os.close(fd)
    except (nofollow.PathChangedError, nofollow.SpecialFileError) as exc:
        raise _refuse(path, f"cannot write {path}: {exc}") from exc
    except OSError as exc:
        raise _refuse(path, f"cannot read {path} to back it up before writing: {exc}") from exc
    if expected is None:
        raise _refuse(path, f"{path} already exists ({plan.prev_fp.size} bytes) but the change "
                            "expected a new file; read it first, then change it", StaleFileError)
    if isinstance(expected, FileFingerprint) and not expected.same_content(plan.prev_fp):
        raise _refuse(path, f"{path} changed on disk since it was read ("
                            f"{expected.describe_change(plan.prev_fp)}); read it again before "
                            "changing it", StaleFileError)
    if not os.access(plan.name, os.W_OK, dir_fd=plan.dir_fd):
        raise _refuse(path, f"{path} is read-only; change its permissions first if it should "
                            "be written")


def _make_parents(plan: _Plan, fds: _Descriptors) -> None:
    """Create the missing directories under the held ancestor, each opened without following
    symlinks before going on; ends with ``plan.dir_fd`` on the target's directory."""
    while plan.missing:
        name = plan.missing[0]
        try:
            os.mkdir(name, dir_fd=plan.dir_fd)
        except FileExistsError:  # another file of this change made it
            pass
        else:
            fds.created.append((plan.dir_fd, name))
        try:
            plan.dir_fd = fds.keep(os.open(name, nofollow.DIR_FLAGS, dir_fd=plan.dir_fd))
        except OSError as exc:
            raise nofollow.PathChangedError(plan.real.parent, f"{exc.strerror or exc}") from exc
        plan.missing.pop(0)


def _open_temp(dir_fd: int, target: str, mode: int) -> tuple[int, str]:
    """A new, exclusively created temporary file beside ``target`` (same filesystem)."""
    while True:
        temp = temp_name(target)
        try:
            flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow.FILE_FLAGS)
            return os.open(temp, flags, mode, dir_fd=dir_fd), temp
        except FileExistsError:
            continue


def _write_temp(plan: _Plan, at: _Progress) -> None:
    """Write the new content to a temporary file with the old file's mode, flushed to disk."""
    content = plan.change.content
    assert content is not None
    at("write_temp", plan.change.path)
    fd, plan.temp = _open_temp(plan.dir_fd, plan.name, 0o666)
    try:
        write_all(fd, content)
        if plan.prev_stat is not None:
            _copy_attributes(fd, plan.prev_stat, keep_times=False)
        at("fsync", plan.change.path)
        os.fsync(fd)
        plan.new_fp = FileFingerprint.of_bytes(content, os.fstat(fd).st_mtime_ns)
    finally:
        os.close(fd)


def _copy_attributes(fd: int, st: os.stat_result, *, keep_times: bool) -> None:
    """Mode bits exactly; ownership when permitted (best effort: only root may give files
    away); times when restoring a backup."""
    os.fchmod(fd, stat.S_IMODE(st.st_mode))
    own = os.fstat(fd)
    if (own.st_uid, own.st_gid) != (st.st_uid, st.st_gid):
        with contextlib.suppress(PermissionError):  # only root may give files away
            os.fchown(fd, st.st_uid, st.st_gid)
    if keep_times:
        os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))


def _check_unchanged(plan: _Plan) -> None:
    """Re-check right before replacing: someone may have written since the pre-check, or
    moved the directory away."""
    if not nofollow.same_directory(plan.dir_fd, plan.real.parent):
        raise StaleFileError(
            f"the directory of {plan.change.path} was moved or replaced during the write; "
            "check what happened and try again", path=plan.change.path, step="replace",
        )
    st = nofollow.lstat_at(plan.dir_fd, plan.name)
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


def _rollback(plans: list[_Plan], fds: _Descriptors) -> list[str]:
    """Undo every applied file, remove temporaries and the directories made; returns what
    could not be undone."""
    failures: list[str] = []
    for plan in plans:
        if plan.temp is not None:
            try:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(plan.temp, dir_fd=plan.dir_fd)
            except OSError as exc:
                failures.append(f"temporary file {plan.real.parent / plan.temp} not removed: "
                                f"{exc}")
            plan.temp = None
        if not plan.applied:
            continue
        try:
            if plan.prev_data is None:
                os.unlink(plan.name, dir_fd=plan.dir_fd)
            else:
                assert plan.prev_stat is not None
                _restore(plan.dir_fd, plan.name, plan.prev_data, plan.prev_stat)
        except OSError as exc:
            failures.append(f"{plan.change.path} not restored: {exc}")
    for parent_fd, name in reversed(fds.created):
        with contextlib.suppress(OSError):  # not empty (someone else's file): harmless
            os.rmdir(name, dir_fd=parent_fd)
    for plan in _one_per_directory([p for p in plans if p.applied]):
        try:
            os.fsync(plan.dir_fd)
        except OSError as exc:
            failures.append(f"directory {plan.real.parent} not flushed: {exc}")
    return failures


def _restore(dir_fd: int, target: str, data: bytes, st: os.stat_result) -> None:
    """Put back a file's previous bytes, mode and times, atomically."""
    fd, temp = _open_temp(dir_fd, target, 0o600)
    try:
        try:
            write_all(fd, data)
            _copy_attributes(fd, st, keep_times=True)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
