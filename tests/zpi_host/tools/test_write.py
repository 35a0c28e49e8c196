"""The write tool and FileReadState: create, overwrite only after a fresh read, atomic."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from zpi_host.fs.files import FileFingerprint
from zpi_host.tools.base import ToolArgumentError, ToolContext, ToolFailure
from zpi_host.tools.file_state import FileChangedError, FileNotReadError, FileReadState
from zpi_host.tools.read import read_tool
from zpi_host.tools.write import write_tool


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, file_state=FileReadState())


def run(ctx: ToolContext, **args: Any):
    tool = write_tool()
    return tool.execute(tool.prepare_arguments(args), ctx)


def read(ctx: ToolContext, path: str) -> None:
    tool = read_tool()
    tool.execute(tool.prepare_arguments({"path": path}), ctx)


def test_metadata() -> None:
    meta = write_tool().metadata
    assert not meta.read_only and not meta.concurrency_safe and meta.side_effects


def test_creates_file_and_parents(ctx: ToolContext, tmp_path: Path) -> None:
    result = run(ctx, path="pkg/sub/mod.py", content="a = 1\nb = 2\n")
    target = tmp_path / "pkg" / "sub" / "mod.py"
    assert target.read_bytes() == b"a = 1\nb = 2\n"
    assert result.text_content == "Created pkg/sub/mod.py (12 bytes, 2 lines)"
    assert result.details == {"path": str(target), "bytes": 12, "created": True,
                              "diff": "--- a/pkg/sub/mod.py\n+++ b/pkg/sub/mod.py\n"
                                      "@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n"}
    assert ctx.file_state is not None
    assert ctx.file_state.get(target) == FileFingerprint.of(target)


def test_unicode_and_empty_content(ctx: ToolContext, tmp_path: Path) -> None:
    run(ctx, path="u.txt", content="héllo → 世界")
    assert (tmp_path / "u.txt").read_text(encoding="utf-8") == "héllo → 世界"
    result = run(ctx, path="empty.txt", content="")
    assert (tmp_path / "empty.txt").read_bytes() == b""
    assert result.text_content == "Created empty.txt (0 bytes, 0 lines)"


def test_overwrite_requires_read(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("original\n")
    with pytest.raises(FileNotReadError, match="has not been read in this session; read it first"):
        run(ctx, path="a.txt", content="new\n")
    assert (tmp_path / "a.txt").read_text() == "original\n"
    read(ctx, "a.txt")
    result = run(ctx, path="a.txt", content="new\ncontent\n")
    assert (tmp_path / "a.txt").read_text() == "new\ncontent\n"
    assert result.text_content == "Wrote 12 bytes (2 lines) to a.txt"
    assert result.details["created"] is False


def test_overwrite_refused_when_changed_since_read(ctx: ToolContext, tmp_path: Path) -> None:
    p = tmp_path / "a.txt"
    p.write_text("one\n")
    read(ctx, "a.txt")
    p.write_text("someone else's change\n")
    with pytest.raises(FileChangedError, match=r"changed on disk since it was read \(size 4 -> 22"):
        run(ctx, path="a.txt", content="mine\n")
    assert p.read_text() == "someone else's change\n"


def test_second_write_needs_no_reread(ctx: ToolContext, tmp_path: Path) -> None:
    run(ctx, path="a.txt", content="v1\n")
    run(ctx, path="a.txt", content="v2\n")
    assert (tmp_path / "a.txt").read_text() == "v2\n"


def test_preserves_mode_crlf_and_bom(ctx: ToolContext, tmp_path: Path) -> None:
    p = tmp_path / "w.bat"
    p.write_bytes(b"\xef\xbb\xbf@echo off\r\necho hi\r\n")
    p.chmod(0o750)
    read(ctx, "w.bat")
    result = run(ctx, path="w.bat", content="@echo off\necho bye\n")
    assert p.read_bytes() == b"\xef\xbb\xbf@echo off\r\necho bye\r\n"
    assert stat.S_IMODE(p.stat().st_mode) == 0o750
    assert result.text_content.endswith("(kept its UTF-8 BOM and CRLF line endings)")


def test_without_file_state_only_creates(tmp_path: Path) -> None:
    ctx = ToolContext(cwd=tmp_path)
    run(ctx, path="new.txt", content="x")
    assert (tmp_path / "new.txt").read_text() == "x"
    with pytest.raises(ToolFailure, match="keeps no record of reads, so write may only create"):
        run(ctx, path="new.txt", content="y")
    assert (tmp_path / "new.txt").read_text() == "x"


def test_directory_refused(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolFailure, match="d is a directory; give the path of a file"):
        run(ctx, path="d", content="x")


def test_parent_is_a_file(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(ToolFailure, match="is a file, not a directory") as info:
        run(ctx, path="f/g.txt", content="x")
    assert info.value.details is not None and info.value.details["step"] == "precheck"


def test_absolute_path_outside_cwd(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    try:
        result = run(ctx, path=str(outside), content="x")
        assert result.text_content == f"Created {outside} (1 byte, 1 line)"
    finally:
        outside.unlink()


def test_no_temp_files_left(ctx: ToolContext, tmp_path: Path) -> None:
    run(ctx, path="a.txt", content="x")
    run(ctx, path="a.txt", content="y")
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]


@pytest.mark.parametrize(
    ("args", "field", "problem"),
    [
        ({"path": "a"}, "content", "is required"),
        ({"path": "", "content": ""}, "path", "must not be empty"),
        ({"path": "a", "content": 3}, "content", "expected string"),
        ({"path": "a", "content": None}, "content", "must be a string"),
        ({"path": "a", "content": "", "mode": 1}, "mode", "is not a parameter"),
    ],
)
def test_argument_errors(args: dict[str, Any], field: str, problem: str) -> None:
    with pytest.raises(ToolArgumentError, match=problem) as info:
        write_tool().prepare_arguments(args)
    assert info.value.field == field


def test_file_state_messages(tmp_path: Path) -> None:
    state = FileReadState()
    p = tmp_path / "x.txt"
    p.write_text("a")
    with pytest.raises(FileNotReadError, match=f"file {p} has not been read"):
        state.check_fresh(p)
    state.record(p, FileFingerprint.of(p))
    assert state.check_fresh(p) == FileFingerprint.of(p)
    p.unlink()
    with pytest.raises(FileChangedError, match="was deleted since it was read"):
        state.check_fresh(p)
    state.forget(p)
    assert state.get(p) is None
