"""The read tool on real files: numbering, paging limits, images, refusals, read state."""

from __future__ import annotations

import base64
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from zpi_host.fs.files import FileFingerprint
from zpi_host.tools.base import ImageContent, ToolArgumentError, ToolContext, ToolFailure
from zpi_host.tools.file_state import FileReadState
from zpi_host.tools.read import MAX_LINE_CHARS, MAX_LINES, MAX_OUTPUT_BYTES, read_tool

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa75\x81\x84"
    b"\x00\x00\x00\x00IEND\xaeB`\x82"
)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, file_state=FileReadState())


def run(ctx: ToolContext, **args: Any):
    tool = read_tool()
    return tool.execute(tool.prepare_arguments(args), ctx)


def test_metadata_and_schema() -> None:
    tool = read_tool()
    assert tool.name == "read"
    assert tool.metadata.read_only and tool.metadata.concurrency_safe
    assert not tool.metadata.side_effects
    assert tool.parameters["required"] == ["path"]
    assert tool.parameters["additionalProperties"] is False


def test_numbered_lines_like_cat_n(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("first\n\tindented\n\nlast")
    result = run(ctx, path="a.py")
    assert not result.is_error
    assert result.text_content == "     1\tfirst\n     2\t\tindented\n     3\t\n     4\tlast"
    assert result.details == {
        "path": str(tmp_path / "a.py"), "lines": 4, "start": 1, "end": 4,
        "truncated": False, "lines_cut": 0, "newline_at_end": False,
    }


def test_crlf_and_bom_hidden_from_display(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    assert run(ctx, path="w.txt").text_content == "     1\tone\n     2\ttwo"


def test_offset_and_limit(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = run(ctx, path="n.txt", offset=4, limit=3)
    assert result.text_content == (
        "     4\tline 4\n     5\tline 5\n     6\tline 6\n\n"
        "[showing lines 4-6 of 10; call read with offset=7 to continue]"
    )
    assert result.details["start"] == 4 and result.details["end"] == 6
    assert result.details["truncated"] is True
    tail = run(ctx, path="n.txt", offset=10)
    assert tail.text_content == "    10\tline 10"
    assert tail.details["truncated"] is False


def test_line_limit_with_continuation(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"{i}\n" for i in range(1, 5124)))
    result = run(ctx, path="big.txt")
    text = result.text_content
    assert text.endswith("[showing lines 1-2000 of 5123; call read with offset=2001 to continue]")
    assert text.count("\n") == MAX_LINES + 1  # 2000 lines, a blank line, the notice
    assert result.details["end"] == 2000
    # a limit above the maximum is capped, and the continuation works
    nxt = run(ctx, path="big.txt", offset=2001, limit=10_000)
    assert nxt.text_content.startswith("  2001\t2001\n")
    assert "[showing lines 2001-4000 of 5123; call read with offset=4001" in nxt.text_content
    last = run(ctx, path="big.txt", offset=4001)
    assert last.details == {
        "path": str(tmp_path / "big.txt"), "lines": 5123, "start": 4001, "end": 5123,
        "truncated": False, "lines_cut": 0, "newline_at_end": True,
    }


def test_byte_limit_with_continuation(ctx: ToolContext, tmp_path: Path) -> None:
    line = "x" * 199
    (tmp_path / "wide.txt").write_text((line + "\n") * 1000)
    result = run(ctx, path="wide.txt")
    body, _, notice = result.text_content.rpartition("\n\n")
    assert len(body.encode()) <= MAX_OUTPUT_BYTES
    per_line = len(f"{1:>6}\t{line}\n")
    shown = MAX_OUTPUT_BYTES // per_line
    assert result.details["end"] == shown
    assert notice == (
        f"[showing lines 1-{shown} of 1000 (output limit of 50 KiB reached); "
        f"call read with offset={shown + 1} to continue]"
    )


def test_long_line_is_cut_with_marker(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("a" * 5000 + "\nshort\n")
    result = run(ctx, path="min.js")
    first, second = result.text_content.split("\n")
    assert first == f"     1\t{'a' * MAX_LINE_CHARS}… [line cut: 5000 characters in all]"
    assert second == "     2\tshort"
    assert result.details["lines_cut"] == 1


def test_byte_limit_counts_utf8_bytes_and_cut_lines_only_shown(ctx: ToolContext,
                                                                 tmp_path: Path) -> None:
    wide = "\u00e9\u20ac" * 100  # 200 characters, 500 bytes
    shown = MAX_OUTPUT_BYTES // len(f"{1:>6}\t{wide}\n".encode())
    lines = [wide] * shown + ["b" * (MAX_LINE_CHARS + 1)] * 5  # the first cut one won't fit
    (tmp_path / "wide.txt").write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    result = run(ctx, path="wide.txt")
    body, _, notice = result.text_content.rpartition("\n\n")
    assert result.details["end"] == shown
    assert body == "".join(f"{n:>6}\t{wide}\n" for n in range(1, shown + 1)).rstrip("\n")
    assert "(output limit of 50 KiB reached)" in notice
    assert result.details["lines_cut"] == 0  # the cut lines were not reached
    rest = run(ctx, path="wide.txt", offset=shown)
    assert rest.details["lines_cut"] == 5 and rest.details["end"] == shown + 5
    assert rest.text_content.split("\n")[1].endswith(
        f"\u2026 [line cut: {MAX_LINE_CHARS + 1} characters in all]")


def test_empty_file(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "e.txt").write_bytes(b"")
    result = run(ctx, path="e.txt")
    assert result.text_content == "[e.txt is empty]"
    assert result.details["lines"] == 0
    with pytest.raises(ToolFailure, match=r"offset 2 is past the end of e\.txt, which is empty"):
        run(ctx, path="e.txt", offset=2)


def test_offset_past_end(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "s.txt").write_text("a\nb\nc\n")
    with pytest.raises(ToolFailure, match=r"offset 4 is past the end of s\.txt, which has 3 lines"):
        run(ctx, path="s.txt", offset=4)


@pytest.mark.parametrize(
    ("args", "field", "problem"),
    [
        ({}, "path", "is required"),
        ({"path": ""}, "path", "must not be empty"),
        ({"path": "a", "offset": 0}, "offset", "at least 1"),
        ({"path": "a", "limit": -5}, "limit", "at least 1"),
        ({"path": "a", "offset": "3"}, "offset", "expected integer"),
        ({"path": "a", "lines": 3}, "lines", "is not a parameter"),
    ],
)
def test_argument_errors(args: dict[str, Any], field: str, problem: str) -> None:
    with pytest.raises(ToolArgumentError, match=problem) as info:
        read_tool().prepare_arguments(args)
    assert info.value.field == field


def test_missing_file_suggests_similar_names(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("x")
    with pytest.raises(ToolFailure, match=r"file not found: config\.yml; did you mean .*config"
                                          r"\.yaml\?"):
        run(ctx, path="config.yml")
    with pytest.raises(ToolFailure, match=r"file not found: nope/x\.txt \(directory .* does"):
        run(ctx, path="nope/x.txt")


def test_directory_refused(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    with pytest.raises(ToolFailure, match=r"src is a directory, not a file; use bash `ls -la src`"):
        run(ctx, path="src")


@pytest.mark.parametrize(
    ("data", "why"),
    [(b"ELF\x00\x01\x02" + b"x" * 100, "binary file (106 bytes)"),
     (b"caf\xe9 latin-1\n", "not valid UTF-8 at byte 3")],
)
def test_binary_refused(ctx: ToolContext, tmp_path: Path, data: bytes, why: str) -> None:
    (tmp_path / "blob.dat").write_bytes(data)
    with pytest.raises(ToolFailure, match=r"blob\.dat is a binary file") as info:
        run(ctx, path="blob.dat")
    assert why in str(info.value)


@pytest.mark.parametrize(
    ("name", "data", "mime"),
    [
        ("pic.dat", PNG, "image/png"),  # by content, not the name
        ("photo.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 20, "image/jpeg"),
        ("anim.gif", b"GIF89a\x01\x00\x01\x00\x00\x00\x00;", "image/gif"),
        ("w.webp", b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00" + b"\x00" * 13, "image/webp"),
    ],
)
def test_images(ctx: ToolContext, tmp_path: Path, name: str, data: bytes, mime: str) -> None:
    (tmp_path / name).write_bytes(data)
    result = run(ctx, path=name)
    image = result.content[0]
    assert isinstance(image, ImageContent)
    assert image.mime_type == mime
    assert base64.b64decode(image.data) == data
    assert result.text_content == f"Image {name} ({mime}, {len(data)} bytes)"
    assert ctx.file_state is not None and ctx.file_state.get(tmp_path / name) is not None


def test_image_extension_without_image_bytes_is_binary(
    ctx: ToolContext, tmp_path: Path
) -> None:
    (tmp_path / "not-really.png").write_bytes(b"\x00\x01 just bytes")
    with pytest.raises(ToolFailure, match="binary file"):
        run(ctx, path="not-really.png")


def test_records_fingerprint_even_for_partial_read(ctx: ToolContext, tmp_path: Path) -> None:
    p = tmp_path / "big.txt"
    p.write_text("x\n" * 3000)
    run(ctx, path=str(p), limit=1)
    assert ctx.file_state is not None
    assert ctx.file_state.get(p) == FileFingerprint.of(p)
    assert ctx.file_state.check_fresh(p) == FileFingerprint.of(p)


def test_works_without_file_state(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hi\n")
    result = run(ToolContext(cwd=tmp_path), path="a.txt")
    assert result.text_content == "     1\thi"


def test_parallel_reads_share_one_state(ctx: ToolContext, tmp_path: Path) -> None:
    for i in range(40):
        (tmp_path / f"f{i}.txt").write_text(f"file {i}\n")
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            run(ctx, path=f"f{i}.txt")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert ctx.file_state is not None and len(ctx.file_state) == 40


def test_symlink_and_relative_spellings_are_one_file(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("x\n")
    os.symlink(tmp_path / "real.txt", tmp_path / "link.txt")
    run(ctx, path="link.txt")
    assert ctx.file_state is not None
    assert ctx.file_state.get(tmp_path / "real.txt") is not None
    assert ctx.file_state.get(tmp_path / "sub" / ".." / "real.txt") is not None


def test_too_large_image_refused(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "huge.png").write_bytes(PNG + b"\x00" * (5 * 1024 * 1024))
    with pytest.raises(ToolFailure, match=r"huge\.png is an image \(image/png, \d+ bytes\), larger "
                                          r"than the 5 MiB a model accepts"):
        run(ctx, path="huge.png")


def test_too_large_file_refused_without_reading(ctx: ToolContext, tmp_path: Path) -> None:
    with open(tmp_path / "sparse.log", "wb") as f:
        f.truncate(300 * 1024 * 1024)  # sparse: no real disk use
    with pytest.raises(ToolFailure, match=r"sparse\.log is 314572800 bytes, more than read "
                                          r"handles .*`head -n 100 sparse\.log`"):
        run(ctx, path="sparse.log")
    assert ctx.file_state is not None and ctx.file_state.get(tmp_path / "sparse.log") is None


def test_fifo_refused(ctx: ToolContext, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(ToolFailure, match="pipe is not a regular file"):
        run(ctx, path="pipe")


# ------------------------------------------- the fast numbering against a plain reference

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from zpi_host.tools.read import NUMBER_BLOCK, _text_result  # noqa: E402


def _reference(text: str, offset: int | None, limit: int | None) -> str:
    """What a read shows, written the plain way (one formatted line at a time)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    lines = [line.removesuffix("\r") for line in lines]
    start = offset or 1
    window = lines[start - 1:start - 1 + min(limit or MAX_LINES, MAX_LINES)]
    width = max(6, len(str(len(lines))))
    shown, used = [], 0
    for number, line in enumerate(window, start):
        if len(line) > MAX_LINE_CHARS:
            line = f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line)} characters in all]"
        row = f"{number:>{width}}\t{line}\n"
        used += len(row.encode())
        if used > MAX_OUTPUT_BYTES and shown:
            break
        shown.append(row)
    return "".join(shown).rstrip("\n")


_LINE = st.one_of(st.text(st.sampled_from("ab \té\r"), max_size=8),
                  st.integers(0, 2 * MAX_LINE_CHARS + 5).map("x".__mul__),
                  st.integers(0, 60).map("é".__mul__))


@settings(max_examples=60, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=40), st.integers(0, 3), st.integers(1, 60),
       st.one_of(st.none(), st.integers(1, 45)), st.one_of(st.none(), st.integers(1, 50)),
       st.booleans())
def test_numbered_lines_match_the_plain_reference(lines: list[str], repeat_: int,
                                                  stretch: int, offset: int | None,
                                                  limit: int | None, final_newline: bool
                                                  ) -> None:
    """Numbering from cached blocks, lengths reused for the byte limit: the same output as
    formatting line by line (also across the blocks of numbers, and with cut lines)."""
    text = "\n".join(lines * (1 + repeat_ * stretch)) + ("\n" if final_newline else "")
    if not text:
        return  # covered by test_empty_file
    try:
        result = _text_result(Path("f"), "f", text, {"offset": offset, "limit": limit})
    except ToolFailure:
        return  # offset past the end: covered by test_offset_past_end
    body = result.content[0].text.split("\n\n[showing lines", 1)[0]  # type: ignore[union-attr]
    assert body == _reference(text, offset, limit)


def test_numbers_across_a_block_boundary() -> None:
    text = "".join(f"l{n}\n" for n in range(1, NUMBER_BLOCK + 20))
    result = _text_result(Path("f"), "f", text, {"offset": NUMBER_BLOCK - 2, "limit": 5})
    assert result.content[0].text.splitlines()[:5] == [  # type: ignore[union-attr]
        f"{n:>6}\tl{n}" for n in range(NUMBER_BLOCK - 2, NUMBER_BLOCK + 3)]


def test_a_page_stays_within_the_sessions_output_limit(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text(("x" * 199 + "\n") * 1000)
    result = run(ToolContext(cwd=tmp_path, output_limit=8192), path="wide.txt")
    assert len(result.text_content.encode()) <= 8192
    assert result.text_content.endswith(
        f"(output limit of 7 KiB reached); call read with offset={result.details['end'] + 1} "
        "to continue]")


@pytest.mark.anyio
async def test_a_large_read_reaches_the_model_whole_under_the_default_limit(
        zpi_env: Any, tmp_path: Path) -> None:
    """The session's output protection (32 KiB by default) must not cut a hole in a page of
    read (up to 50 KiB): the page is sized to the limit, so no preview and no spill file."""
    from zpi_host.providers.messages import ToolResultMessage
    from zpi_host.session.assembly import create_session
    from zpi_host.testing import ScriptedModel

    (tmp_path / "wide.txt").write_text("".join(f"line {n} " + "y" * 90 + "\n"
                                               for n in range(1, 2001)))
    model = ScriptedModel([{"tool_calls": [{"name": "read", "arguments": {"path": "wide.txt"}}]},
                           "ok"])
    session = await create_session(model="t:m", provider=model, cwd=tmp_path,
                                   permission_mode="bypass")
    await session.run("read it")
    await session.dispose()
    (result,) = [m for m in model.requests[-1].messages if isinstance(m, ToolResultMessage)]
    text = "".join(block.text for block in result.content)
    assert "full_output_path" not in (result.details or {}) or \
        result.details["full_output_path"] is None
    shown = [line.split("\t", 1)[1] for line in text.split("\n\n")[0].splitlines()]
    end = result.details["end"]
    assert shown == [f"line {n} " + "y" * 90 for n in range(1, end + 1)]  # no gap
    assert text.endswith(f"call read with offset={end + 1} to continue]")
