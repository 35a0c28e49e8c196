"""files.commit: pre-check, atomic replace, and byte-exact rollback at every step."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from zpi_host.errors import ZpiError
from zpi_host.fs.files import (
    ANY_STATE,
    STEPS,
    FileChange,
    FileCommitError,
    FileFingerprint,
    StaleFileError,
    commit,
)


class Boom(Exception):
    pass


def snapshot(root: Path) -> dict[str, tuple[bytes | None, int, int]]:
    """Every file and directory under root: bytes (None for dirs), mode, mtime."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = p.stat()
            data = p.read_bytes() if stat.S_ISREG(st.st_mode) else None
            mtime = 0 if p.is_dir() else st.st_mtime_ns
            out[str(p.relative_to(root))] = (data, stat.S_IMODE(st.st_mode), mtime)
    return out


def test_fingerprint_of_file(tmp_path: Path) -> None:
    p = tmp_path / "a.txt"
    p.write_bytes(b"hello")
    fp = FileFingerprint.of(p)
    assert fp.size == 5
    assert fp.mtime_ns == p.stat().st_mtime_ns
    assert fp.sha256 == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    os.utime(p, ns=(1, 2))
    touched = FileFingerprint.of(p)
    assert touched.same_content(fp) and touched != fp
    p.write_bytes(b"hello!")
    changed = FileFingerprint.of(p)
    assert not changed.same_content(fp)
    assert "size 5 -> 6 bytes" in fp.describe_change(changed)
    assert "content hash differs" in fp.describe_change(changed)


def test_commit_creates_replaces_and_deletes(tmp_path: Path) -> None:
    old = tmp_path / "old.txt"
    old.write_bytes(b"old\n")
    old.chmod(0o751)
    gone = tmp_path / "gone.txt"
    gone.write_bytes(b"bye")
    new = tmp_path / "deep" / "er" / "new.txt"
    report = commit([
        FileChange(old, b"replaced\n", FileFingerprint.of(old)),
        FileChange(new, b"fresh", None),
        FileChange(gone, None, FileFingerprint.of(gone)),
    ])
    assert old.read_bytes() == b"replaced\n"
    assert stat.S_IMODE(old.stat().st_mode) == 0o751
    assert new.read_bytes() == b"fresh"
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~_umask()
    assert not gone.exists()
    assert report.get(new).created and not report.get(old).created
    assert report.get(gone).deleted and report.get(gone).fingerprint is None
    assert report.get(old).fingerprint == FileFingerprint.of(old)
    assert report.get(new).fingerprint == FileFingerprint.of(new)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["deep", "er", "new.txt", "old.txt"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_commit_through_symlink_writes_the_target(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_bytes(b"a")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    commit([FileChange(link, b"b", FileFingerprint.of(link))])
    assert link.is_symlink()
    assert real.read_bytes() == b"b"


def test_stale_read_refused_before_anything_changes(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(b"a1")
    b.write_bytes(b"b1")
    seen_b = FileFingerprint.of(b)
    b.write_bytes(b"b2 changed")
    before = snapshot(tmp_path)
    with pytest.raises(StaleFileError, match=r"b\.txt changed on disk since it was read") as info:
        commit([FileChange(a, b"A", ANY_STATE), FileChange(b, b"B", seen_b)])
    assert isinstance(info.value, ZpiError)
    assert "size 2 -> 10 bytes" in str(info.value)
    assert snapshot(tmp_path) == before


def test_new_file_expected_but_exists(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"x")
    with pytest.raises(StaleFileError, match="already exists"):
        commit([FileChange(tmp_path / "a.txt", b"y", None)])
    assert (tmp_path / "a.txt").read_bytes() == b"x"


def test_deleted_since_read(tmp_path: Path) -> None:
    p = tmp_path / "a.txt"
    p.write_bytes(b"x")
    fp = FileFingerprint.of(p)
    p.unlink()
    with pytest.raises(StaleFileError, match="deleted since it was read"):
        commit([FileChange(p, b"y", fp)])
    assert not p.exists()


def test_touch_alone_is_not_stale(tmp_path: Path) -> None:
    p = tmp_path / "a.txt"
    p.write_bytes(b"x")
    fp = FileFingerprint.of(p)
    os.utime(p, ns=(10**9, 10**9))
    commit([FileChange(p, b"y", fp)])
    assert p.read_bytes() == b"y"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("dir", "is a directory"),
        ("parent_file", "is a file, not a directory"),
        ("duplicate", "appears twice in one change"),
        ("fifo", "not a regular file"),
        ("delete_missing", "cannot delete"),
    ],
)
def test_precheck_errors_touch_nothing(tmp_path: Path, setup: str, message: str) -> None:
    ok = tmp_path / "ok.txt"
    ok.write_bytes(b"keep")
    bad = tmp_path / "bad"
    content: bytes | None = b"data"
    extra: list[FileChange] = []
    if setup == "dir":
        bad.mkdir()
    elif setup == "parent_file":
        bad.write_bytes(b"")
        bad = bad / "child.txt"
    elif setup == "duplicate":
        extra = [FileChange(tmp_path / "." / "ok.txt", b"again", ANY_STATE)]
        bad = tmp_path / "new.txt"
    elif setup == "fifo":
        os.mkfifo(bad)
    else:
        content = None
    before = snapshot(tmp_path)
    with pytest.raises(FileCommitError, match=message) as info:
        commit([FileChange(ok, b"changed", ANY_STATE), *extra, FileChange(bad, content, None)])
    assert info.value.step == "precheck"
    assert snapshot(tmp_path) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_read_only_directory_refused(tmp_path: Path) -> None:  # pragma: no cover - non-root
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(FileCommitError, match="no permission to write in directory"):
            commit([FileChange(locked / "x.txt", b"x", None)])
    finally:
        locked.chmod(0o700)


def _three_file_change(root: Path) -> list[FileChange]:
    a = root / "a.txt"
    a.write_bytes(b"alpha\r\nline two\r\n")
    a.chmod(0o640)
    os.utime(a, ns=(1_000_000_000, 1_500_000_000))
    b = root / "bin" / "run.sh"
    b.parent.mkdir()
    b.write_bytes(b"#!/bin/sh\necho hi\n")
    b.chmod(0o755)
    c = root / "new" / "dir" / "c.txt"
    return [
        FileChange(a, b"ALPHA\r\n", FileFingerprint.of(a)),
        FileChange(b, b"#!/bin/sh\necho bye\n", FileFingerprint.of(b)),
        FileChange(c, b"brand new", None),
    ]


def _fault_cases() -> list[tuple[str, int]]:
    """Each step, each of the 3 times it is reached (see test_every_step_is_reached)."""
    return [(step, n) for step in STEPS for n in range(3)]


@pytest.mark.parametrize(("step", "nth"), _fault_cases())
@pytest.mark.parametrize("exc_type", [Boom, KeyboardInterrupt])
def test_failure_at_every_step_rolls_back_exactly(
    tmp_path: Path, step: str, nth: int, exc_type: type[BaseException]
) -> None:
    changes = _three_file_change(tmp_path)
    before = snapshot(tmp_path)
    calls: list[tuple[str, Path]] = []

    def fault(at: str, path: Path) -> None:
        calls.append((at, path))
        if at == step and sum(1 for s, _ in calls if s == step) == nth + 1:
            raise exc_type(f"injected at {at}")

    if exc_type is KeyboardInterrupt:
        with pytest.raises(KeyboardInterrupt):
            commit(changes, _fault=fault)
    else:
        with pytest.raises(FileCommitError) as info:
            commit(changes, _fault=fault)
        failed_path = calls[-1][1]
        assert info.value.step == step
        assert info.value.path == failed_path
        assert f"step {step!r} failed for {failed_path}" in str(info.value) or step == "precheck"
        assert "injected at" in str(info.value)
        assert info.value.rollback_failures == ()
        assert isinstance(info.value.__cause__, Boom)
    assert snapshot(tmp_path) == before, f"not restored after failure at {step} #{nth}"


def test_every_step_is_reached(tmp_path: Path) -> None:
    seen: list[str] = []
    commit(_three_file_change(tmp_path), _fault=lambda step, path: seen.append(step))
    assert seen == [
        *["precheck"] * 3, *["mkdir"] * 3, *["write_temp", "fsync"] * 3,
        *["replace"] * 3, *["fsync_dir"] * 3,
    ]


def test_real_os_failure_mid_replace_rolls_back(tmp_path: Path) -> None:
    """No injection of errors: the third file's new directory is moved away after its
    temporary file was written, so the real ``os.replace`` fails and the first two files must
    be put back."""
    changes = _three_file_change(tmp_path)
    before = snapshot(tmp_path)

    def sabotage(step: str, path: Path) -> None:
        if step == "replace" and path == changes[2].path:
            (tmp_path / "new").rename(tmp_path / "moved")

    with pytest.raises(FileCommitError, match="step 'replace' failed") as info:
        commit(changes, _fault=sabotage)
    assert isinstance(info.value.__cause__, OSError)
    after = snapshot(tmp_path)
    for name in ("a.txt", "bin/run.sh"):
        assert after[name] == before[name]
    assert not list((tmp_path / "bin").glob(".*.zpi-*.tmp"))
    assert not (tmp_path / "new").exists()


def test_change_during_commit_is_detected(tmp_path: Path) -> None:
    a = tmp_path / "a.txt"
    a.write_bytes(b"original")
    changes = [FileChange(a, b"mine", FileFingerprint.of(a))]

    def race(step: str, path: Path) -> None:
        if step == "replace":
            a.write_bytes(b"raced in")

    with pytest.raises(StaleFileError, match="changed on disk during the write"):
        commit(changes, _fault=race)
    assert a.read_bytes() == b"raced in"
    assert not list(tmp_path.rglob(".*.zpi-*.tmp"))
