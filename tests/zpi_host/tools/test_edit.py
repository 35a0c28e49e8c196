"""The edit tool: exact replacements, all or none, line endings and BOM kept, stale refusal."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from zpi_host.fs.files import FileFingerprint
from zpi_host.tools.base import ToolArgumentError, ToolContext, ToolFailure
from zpi_host.tools.edit import edit_tool
from zpi_host.tools.file_state import FileChangedError, FileNotReadError, FileReadState
from zpi_host.tools.read import read_tool
from zpi_host.tools.write import write_tool


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, file_state=FileReadState())


def run(ctx: ToolContext, path: str, *edits: dict[str, Any]):
    tool = edit_tool()
    return tool.execute(tool.prepare_arguments({"path": path, "edits": list(edits)}), ctx)


def e(old: str, new: str, **kw: Any) -> dict[str, Any]:
    return {"old_text": old, "new_text": new, **kw}


def read(ctx: ToolContext, path: str) -> None:
    tool = read_tool()
    tool.execute(tool.prepare_arguments({"path": path}), ctx)


def make(ctx: ToolContext, tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    read(ctx, name)
    return p


def test_metadata_and_schema() -> None:
    tool = edit_tool()
    assert not tool.metadata.read_only and tool.metadata.side_effects
    assert not tool.metadata.concurrency_safe
    items = tool.parameters["properties"]["edits"]["items"]
    assert items["required"] == ["old_text", "new_text"]
    assert items["additionalProperties"] is False


def test_single_edit_with_diff(ctx: ToolContext, tmp_path: Path) -> None:
    p = make(ctx, tmp_path, "m.py", b"def f():\n    return 1\n")
    result = run(ctx, "m.py", e("    return 1\n", "    x = 1\n    return x\n"))
    assert p.read_bytes() == b"def f():\n    x = 1\n    return x\n"
    assert result.text_content == "Edited m.py: 1 edit, +2 -1 lines"
    assert result.details is not None
    assert result.details["replacements"] == 1
    assert result.details["path"] == str(p)
    assert result.details["diff"] == (
        "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,3 @@\n def f():\n-    return 1\n"
        "+    x = 1\n+    return x\n"
    )


def test_several_edits_apply_in_order(ctx: ToolContext, tmp_path: Path) -> None:
    p = make(ctx, tmp_path, "a.txt", b"alpha\nbeta\ngamma\n")
    result = run(ctx, "a.txt", e("alpha", "ALPHA"), e("ALPHA\nbeta", "AB"), e("gamma", "G"))
    assert p.read_text() == "AB\nG\n"
    assert result.text_content == "Edited a.txt: 3 edits, +2 -3 lines"


def test_all_or_nothing(ctx: ToolContext, tmp_path: Path) -> None:
    p = make(ctx, tmp_path, "a.txt", b"one\ntwo\nthree\n")
    with pytest.raises(ToolFailure, match=r"^edit 2 of 3: old_text not found in a\.txt"):
        run(ctx, "a.txt", e("one", "1"), e("four", "4"), e("three", "3"))
    assert p.read_bytes() == b"one\ntwo\nthree\n"


def test_not_found_hints(ctx: ToolContext, tmp_path: Path) -> None:
    make(ctx, tmp_path, "a.py", b"pass\nif x:\n    call()\n")
    with pytest.raises(ToolFailure, match="except for whitespace/indentation starts at line 2"):
        run(ctx, "a.py", e("if x:\n  call()", "go()"))
    with pytest.raises(ToolFailure, match="edits apply in order"):
        run(ctx, "a.py", e("call()", "go()"), e("call()", "again()"))


def test_ambiguous_match(ctx: ToolContext, tmp_path: Path) -> None:
    p = make(ctx, tmp_path, "a.txt", b"x = 1\ny = 2\nx = 1\nx = 1\n")
    with pytest.raises(ToolFailure, match=r"^edit: old_text found 3 times in a\.txt \(at lines "
                                          r"1, 3, 4\); add more surrounding context"):
        run(ctx, "a.txt", e("x = 1", "x = 9"))
    result = run(ctx, "a.txt", e("x = 1", "x = 9", replace_all=True))
    assert p.read_text() == "x = 9\ny = 2\nx = 9\nx = 9\n"
    assert result.details is not None and result.details["replacements"] == 3


def test_crlf_preserved(ctx: ToolContext, tmp_path: Path) -> None:
    p = make(ctx, tmp_path, "w.txt", b"one\r\ntwo\r\nthree\r\n")
    result = run(ctx, "w.txt", e("one\ntwo\n", "uno\ndos\nextra\n"))
    assert p.read_bytes() == b"uno\r\ndos\r\nextra\r\nthree\r\n"
    assert result.text_content == "Edited w.txt: 1 edit, +3 -2 lines"
    # the model may also send CRLF itself; it is not doubled
    run(ctx, "w.txt", e("extra\r\n", "more\r\n"))
    assert p.read_bytes() == b"uno\r\ndos\r\nmore\r\nthree\r\n"


def test_bom_preserved(ctx: ToolContext, tmp_path: Path) -> None:
    p = make(ctx, tmp_path, "b.cs", b"\xef\xbb\xbfclass A {}\r\n")
    run(ctx, "b.cs", e("class A {}", "class B {}"))
    assert p.read_bytes() == b"\xef\xbb\xbfclass B {}\r\n"


def test_mixed_line_endings_left_alone(ctx: ToolContext, tmp_path: Path) -> None:
    p = make(ctx, tmp_path, "m.txt", b"a\r\nb\nc\r\nd\n")
    run(ctx, "m.txt", e("b\n", "B\n"))
    assert p.read_bytes() == b"a\r\nB\nc\r\nd\n"
    run(ctx, "m.txt", e("c\nd", "C\nD"))  # CRLF spelling found although the model wrote LF
    assert p.read_bytes() == b"a\r\nB\nC\r\nD\n"


def test_mode_and_fingerprint_updated(ctx: ToolContext, tmp_path: Path) -> None:
    p = make(ctx, tmp_path, "run.sh", b"echo a\n")
    p.chmod(0o755)
    # chmod changes no content: the read still counts
    run(ctx, "run.sh", e("a", "b"))
    assert stat.S_IMODE(p.stat().st_mode) == 0o755
    assert ctx.file_state is not None and ctx.file_state.get(p) == FileFingerprint.of(p)
    run(ctx, "run.sh", e("b", "c"))  # no re-read needed after our own edit
    assert p.read_text() == "echo c\n"


def test_requires_read(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    with pytest.raises(FileNotReadError, match="has not been read in this session; read it first"):
        run(ctx, "a.txt", e("x", "y"))


def test_refused_when_changed_since_read(ctx: ToolContext, tmp_path: Path) -> None:
    p = make(ctx, tmp_path, "a.txt", b"x\n")
    p.write_text("x\nadded by someone\n")
    with pytest.raises(FileChangedError, match=r"changed on disk since it was read.*read it again"):
        run(ctx, "a.txt", e("x", "y"))
    assert p.read_text() == "x\nadded by someone\n"


def test_refused_when_written_after_read_by_write_elsewhere(
    ctx: ToolContext, tmp_path: Path
) -> None:
    p = make(ctx, tmp_path, "a.txt", b"x\n")
    other = ToolContext(cwd=tmp_path, file_state=FileReadState())
    read(other, "a.txt")
    tool = write_tool()
    tool.execute(tool.prepare_arguments({"path": "a.txt", "content": "other\n"}), other)
    with pytest.raises(FileChangedError):
        run(ctx, "a.txt", e("x", "y"))
    assert p.read_text() == "other\n"


def test_missing_file_suggests_write(ctx: ToolContext) -> None:
    with pytest.raises(ToolFailure, match=r"file not found: nope\.txt; use write to create"):
        run(ctx, "nope.txt", e("a", "b"))


def test_directory_and_binary_refused(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolFailure, match="d is a directory"):
        run(ctx, "d", e("a", "b"))
    p = tmp_path / "bin.dat"
    p.write_bytes(b"a\x00b")
    with pytest.raises(ToolFailure, match="binary file"):
        read(ctx, "bin.dat")
    # a refused read is no read: edit may not change what the model never saw
    with pytest.raises(FileNotReadError):
        run(ctx, "bin.dat", e("a", "b"))
    assert ctx.file_state is not None
    ctx.file_state.record(p, FileFingerprint.of(p))  # seen some other way: still binary
    with pytest.raises(ToolFailure, match=r"bin\.dat is a binary file \(3 bytes\)"):
        run(ctx, "bin.dat", e("a", "b"))
    assert p.read_bytes() == b"a\x00b"


def test_without_file_state(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(ToolFailure, match="keeps no record of reads"):
        run(ToolContext(cwd=tmp_path), "a.txt", e("x", "y"))


def test_edits_that_cancel_out(ctx: ToolContext, tmp_path: Path) -> None:
    p = make(ctx, tmp_path, "a.txt", b"x\n")
    mtime = p.stat().st_mtime_ns
    with pytest.raises(ToolFailure, match=r"leave a\.txt unchanged; nothing was written"):
        run(ctx, "a.txt", e("x", "y"), e("y", "x"))
    assert p.stat().st_mtime_ns == mtime


@pytest.mark.parametrize(
    ("edits", "field", "problem"),
    [
        ([], "edits", "non-empty list"),
        (["x"], "edits[0]", "expected an object"),
        ([{"new_text": "b"}], "edits[0].old_text", "is required"),
        ([e("a", "b"), {"old_text": "a"}], "edits[1].new_text", "is required"),
        ([e("a", 3)], "edits[0].new_text", "expected string, got int"),
        ([e("", "b")], "edits[0].old_text", "must not be empty"),
        ([e("a", "b"), e("same", "same")], "edits[1]", "identical \\(no change\\)"),
        ([e("a", "b", replace_all="yes")], "edits[0].replace_all", "expected boolean"),
        ([e("a", "b", count=2)], "edits[0].count", "is not a field of an edit"),
    ],
)
def test_argument_errors(edits: list[Any], field: str, problem: str) -> None:
    with pytest.raises(ToolArgumentError, match=problem) as info:
        edit_tool().prepare_arguments({"path": "a.txt", "edits": edits})
    assert info.value.field == field


def test_edits_must_be_a_list() -> None:
    with pytest.raises(ToolArgumentError, match="expected array") as info:
        edit_tool().prepare_arguments({"path": "a.txt", "edits": {"old_text": "a"}})
    assert info.value.field == "edits"
