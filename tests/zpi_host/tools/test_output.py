"""HeadTailBuffer and protect_result: bounded capture, complete spill files, previews."""

from __future__ import annotations

import random
import stat
from pathlib import Path

import pytest

from zpi_host.tools.base import ImageContent, TextContent, ToolResult
from zpi_host.tools.output import HeadTailBuffer, protect_result


def _data(size: int, seed: int = 1) -> bytes:
    """``size`` bytes of numbered lines of varying length; the last line may be cut."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "δέλτα", "ε", "zeta", ""]
    lines = []
    total = 0
    while total < size:
        line = f"{total:09d} " + " ".join(rng.choices(words, k=rng.randint(0, 12)))
        lines.append(line)
        total += len(line.encode()) + 1
    return ("\n".join(lines) + "\n").encode()[:size]


def test_small_output_stays_in_memory(tmp_path: Path) -> None:
    buf = HeadTailBuffer(1024, tmp_path)
    buf.feed(b"one\ntwo\n")
    buf.feed(b"three")
    out = buf.finish()
    assert out.text == "one\ntwo\nthree"
    assert (out.total_bytes, out.total_lines, out.truncated, out.spill_path) == (13, 3, False, None)
    assert list(tmp_path.iterdir()) == []


def test_exactly_at_limit_does_not_spill_one_more_does(tmp_path: Path) -> None:
    buf = HeadTailBuffer(100, tmp_path)
    buf.feed(b"x" * 100)
    assert buf.finish().truncated is False

    buf = HeadTailBuffer(100, tmp_path)
    buf.feed(b"x" * 60)
    buf.feed(b"y" * 41)
    out = buf.finish()
    assert out.truncated and out.spill_path is not None
    assert out.spill_path.read_bytes() == b"x" * 60 + b"y" * 41
    assert out.spill_path.name.startswith("zpi-bash-") and out.spill_path.suffix == ".log"


def test_spill_file_holds_every_byte_and_memory_stays_bounded(tmp_path: Path) -> None:
    data = _data(3_000_000)
    limit = 50 * 1024
    buf = HeadTailBuffer(limit, tmp_path / "spill")
    rng = random.Random(7)
    pos = 0
    while pos < len(data):
        step = rng.randint(1, 70_000)
        buf.feed(data[pos : pos + step])
        pos += step
        # head kept as is; tail never grows beyond twice its share
        assert len(buf._buf) <= limit and len(buf._tail) <= limit
    out = buf.finish()
    assert out.truncated and out.total_bytes == len(data)
    assert out.total_lines == data.count(b"\n") + (not data.endswith(b"\n"))
    assert out.spill_path is not None and out.spill_path.parent == tmp_path / "spill"
    assert out.spill_path.read_bytes() == data
    half = limit // 2
    head = data[:half].decode(errors="ignore")
    tail = data[-half:].decode(errors="ignore")
    assert out.text.startswith(head) and out.text.endswith(tail)
    assert "\ufffd" not in out.text
    omitted = len(data) - len(head.encode()) - len(tail.encode())
    assert f"[... {omitted} bytes omitted; full output in {out.spill_path} ...]" in out.text
    assert len(out.text.encode()) < limit + 300


def test_cut_does_not_split_utf8_characters(tmp_path: Path) -> None:
    buf = HeadTailBuffer(101, tmp_path)
    buf.feed("é".encode() * 1000)  # two bytes each: the cuts fall mid-character
    out = buf.finish()
    assert "\ufffd" not in out.text
    assert out.spill_path is not None and out.spill_path.read_bytes() == "é".encode() * 1000


def test_discard_removes_the_spill_file(tmp_path: Path) -> None:
    buf = HeadTailBuffer(10, tmp_path / "spill", name_prefix="zpi-test")
    buf.feed(b"0123456789abc")
    path = buf.spill_path
    assert path is not None and path.name.startswith("zpi-test-")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    buf.discard()
    assert not path.exists()
    with pytest.raises(RuntimeError):
        buf.feed(b"more")


def test_without_a_spill_dir_nothing_is_saved_anywhere(tmp_path: Path) -> None:
    buf = HeadTailBuffer(10, None)
    buf.feed(b"0123456789abc")
    out = buf.finish()
    assert out.truncated and out.spill_path is None
    assert "full output could not be saved: no spill folder was given" in out.text
    result = protect_result(ToolResult.text("x" * 5000), limit_bytes=1024, spill_dir=None)
    assert result.details["full_output_path"] is None


def test_unwritable_spill_dir_is_reported_not_hidden(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    buf = HeadTailBuffer(10, blocker / "spill")
    buf.feed(b"a" * 50)
    out = buf.finish()
    assert out.truncated and out.spill_path is None and out.spill_error
    assert "full output could not be saved" in out.text
    assert out.total_bytes == 50


def test_recent_returns_latest_output(tmp_path: Path) -> None:
    buf = HeadTailBuffer(100, tmp_path)
    buf.feed(b"a" * 500 + b"END")
    assert buf.recent(10) == "a" * 7 + "END"
    buf.discard()


def test_protect_result_small_is_unchanged(tmp_path: Path) -> None:
    result = ToolResult.text("short")
    assert protect_result(result, spill_dir=tmp_path) is result


def test_protect_result_keeps_head_and_tail_and_writes_file(tmp_path: Path) -> None:
    text = _data(200_000).decode()
    image = ImageContent.from_bytes(b"\x89PNG", "image/png")
    result = ToolResult(
        (TextContent(text[:1000]), image, TextContent(text[1000:])), True, {"k": 1}
    )
    joined = result.text_content
    out = protect_result(result, limit_bytes=8 * 1024, spill_dir=tmp_path)
    assert out.is_error
    assert [type(c) for c in out.content] == [TextContent, ImageContent]
    assert out.content[1] is image
    preview = out.text_content
    assert len(preview.encode()) <= 8 * 1024
    assert preview.startswith(joined[:3000]) and preview.endswith(joined[-3000:])
    path = Path(out.details["full_output_path"])
    assert out.details["k"] == 1
    assert path.parent == tmp_path and str(path) in preview
    assert path.read_text() == joined


def test_protect_result_reuses_existing_full_output_file(tmp_path: Path) -> None:
    full = tmp_path / "zpi-bash-x.log"
    full.write_text("everything")
    result = ToolResult.error("y" * 100_000, details={"full_output_path": str(full)})
    out = protect_result(result, limit_bytes=4096, spill_dir=tmp_path / "new")
    assert out.details["full_output_path"] == str(full)
    assert str(full) in out.text_content
    assert not (tmp_path / "new").exists()
