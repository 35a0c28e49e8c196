"""The ``read`` tool: a text file as numbered lines (in pages the model can continue), or an
image as an image block. Every read is recorded in the session's file-read state so that write
and edit can tell the model has seen the file."""

from __future__ import annotations

import os
import stat
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from itertools import accumulate, chain, count, islice, repeat
from operator import add
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ..support.attrs_methods import FrozenFieldsEq
from .base import (
    ImageContent,
    TextContent,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolFailure,
    ToolMetadata,
    ToolResult,
    _check_object,
)

if TYPE_CHECKING:
    from ..fs.files import FileFingerprint

MAX_LINES = 2000
MAX_OUTPUT_BYTES = 50 * 1024
#: bytes kept for the continuation note under a session's output limit, and the least a page
#: may take however low that limit is
NOTE_RESERVE = 512
MIN_OUTPUT_BYTES = 1024
MAX_LINE_CHARS = 2000
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_IMAGE_BYTES = 5 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192
UTF8_BOM = "\ufeff"

PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "File to read, absolute or relative to the working directory.",
        },
        "offset": {
            "type": "integer",
            "minimum": 1,
            "description": "1-based line to start at (default 1).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": f"Most lines to show (default and maximum {MAX_LINES}).",
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}

DESCRIPTION = f"""Read a file from the workspace.
Text files come back as numbered lines (line number, a tab, the line), at most {MAX_LINES} lines
or {MAX_OUTPUT_BYTES // 1024} KiB per call; the output then says which offset continues it.
Lines longer than {MAX_LINE_CHARS} characters are cut. PNG, JPEG, GIF and WebP images come back
as images. Binary files and directories are refused. A file must be read before write or edit
may change it."""


def read_tool() -> Tool:
    """The kernel ``read`` tool."""
    return Tool(
        name="read",
        description=DESCRIPTION,
        parameters=PARAMETERS,
        execute=execute_read,
        metadata=ToolMetadata(read_only=True, concurrency_safe=True, side_effects=False),
        prepare=prepare_read,
    )


def prepare_read(args: Mapping[str, Any]) -> dict[str, Any]:
    """The schema check (types, and the minimums of ``offset`` and ``limit``) plus what the
    schema does not say: a path that is not empty."""
    checked: dict[str, Any] = _check_object("read", PARAMETERS, args)
    if not checked["path"]:
        raise ToolArgumentError("read", "path", "must not be empty")
    return checked


def sniff_image(data: bytes) -> str | None:
    """The MIME type of an image the models accept, from its magic bytes (not its name)."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def display_path(path: Path, cwd: Path) -> str:
    """``path`` relative to the working directory when inside it, else absolute."""
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def read_target(ctx: ToolContext, raw: str, tool: str, *, missing_ok: bool = False,
                max_bytes: int | None = None) -> TargetFile | None:
    """Open the file a path argument leads to, as the permission check judged it, and read it
    (shared by read, write and edit). Opened without following symlinks and without blocking;
    refuses missing paths (``missing_ok``: returns None instead), directories, FIFOs, sockets
    and devices, a path that changed during the call, and a file to change that gained hard
    links since it was judged to be inside the workspace. Failures are ToolFailures that say
    what to do."""
    from ..fs import nofollow
    from ..fs.files import read_fd_with_fingerprint  # lazily: listing tools must stay cheap

    path = ctx.resolve_path(raw)
    shown = display_path(path, ctx.cwd)
    details = {"path": str(path)}
    try:
        target = ctx.target(raw)
        fd, st = nofollow.open_regular(target.real)
    except nofollow.UnusablePathError as exc:
        raise ToolFailure(str(exc), details) from None
    except (FileNotFoundError, NotADirectoryError) as exc:
        if missing_ok:
            return None
        if isinstance(exc, NotADirectoryError):
            raise ToolFailure(f"cannot open {shown}: {exc.filename} is a file, not a "
                              "directory", details) from None
        raise ToolFailure(_missing_message(path, shown, tool), details) from None
    except nofollow.SpecialFileError as exc:
        raise ToolFailure(_not_a_file_message(shown, tool, exc.mode), details) from None
    except OSError as exc:
        raise ToolFailure(f"cannot access {shown}: {exc.strerror or exc}", details) from exc
    try:
        if target.confined and st.st_nlink > 1:
            raise ToolFailure(
                f"{shown} now has {st.st_nlink} hard links, and had one when the call was "
                "allowed: it changed during the call; changing a file with several links "
                "counts as outside the workspace, so it needs approval; try again", details)
        if max_bytes is not None and st.st_size > max_bytes:
            raise ToolFailure(
                f"{shown} is {st.st_size} bytes, more than {tool} handles ({max_bytes} bytes); "
                f"use bash (e.g. `head -n 100 {shown}` or `grep -n PATTERN {shown}`) to look "
                "at parts", details)
        try:
            data, fingerprint = read_fd_with_fingerprint(fd)
        except OSError as exc:
            raise ToolFailure(f"cannot read {shown}: {exc.strerror or exc}", details) from exc
    finally:
        os.close(fd)
    return TargetFile(path, shown, target.real, data, fingerprint)


@attrs.frozen(repr=False, eq=False, slots=False)
class TargetFile(FrozenFieldsEq):
    """A file a tool read: the path as given (absolute), how it is shown, where it really is
    (what the file-read state records), its bytes and their fingerprint."""

    path: Path
    shown: str
    real: Path
    data: bytes
    fingerprint: FileFingerprint


def _not_a_file_message(shown: str, tool: str, mode: int) -> str:
    from ..fs.nofollow import kind_of

    if stat.S_ISDIR(mode):
        if tool == "write":
            return f"{shown} is a directory; give the path of a file inside it"
        return f"{shown} is a directory, not a file; use bash `ls -la {shown}` to list it"
    return (f"{shown} is not a regular file: it is {kind_of(mode)}; {tool} works on regular files "
            "only and refuses it without opening it")


def _missing_message(path: Path, shown: str, tool: str) -> str:
    parent = path.parent
    if not parent.is_dir():
        return f"file not found: {shown} (directory {parent} does not exist)"
    message = f"file not found: {shown}"
    try:
        names = os.listdir(parent)
    except OSError:
        names = []
    import difflib  # only for this message (not at start-up)

    similar = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    if similar:
        message += "; did you mean " + " or ".join(str(parent / n) for n in similar) + "?"
    if tool == "edit":
        message += "; use write to create a new file"
    return message


def decode_text(data: bytes, shown: str) -> str:
    """UTF-8 text of ``data`` (BOM kept), or a ToolFailure explaining it is binary."""
    hint = f"use bash to inspect it (e.g. `file {shown}` or `xxd {shown} | head`)"
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise ToolFailure(
            f"{shown} is a binary file ({len(data)} bytes); {hint}", {"binary": True}
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolFailure(
            f"{shown} is a binary file ({len(data)} bytes; not valid UTF-8 at byte "
            f"{exc.start}); {hint}", {"binary": True},
        ) from None


def split_lines(text: str) -> list[str]:
    """Lines split on LF only (as editors and ``sed -n`` count them), CR of CRLF dropped."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if "\r" not in text:
        return lines
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def execute_read(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    found = read_target(ctx, args["path"], "read", max_bytes=MAX_FILE_BYTES)
    assert found is not None
    path, shown, data = found.path, found.shown, found.data
    mime = sniff_image(data)
    if mime is not None:
        result = _image_result(path, shown, data, mime)
    else:
        text = decode_text(data, shown)
        result = _text_result(path, shown, text.removeprefix(UTF8_BOM), args,
                              output_budget(ctx))
    if ctx.file_state is not None:  # only a read that succeeded counts as seen
        ctx.file_state.record(found.real, found.fingerprint)
    return result


def _image_result(path: Path, shown: str, data: bytes, mime: str) -> ToolResult:
    if len(data) > MAX_IMAGE_BYTES:
        raise ToolFailure(
            f"{shown} is an image ({mime}, {len(data)} bytes), larger than the "
            f"{MAX_IMAGE_BYTES // (1024 * 1024)} MiB a model accepts; make a smaller copy "
            "with bash first", {"path": str(path)},
        )
    details = {"path": str(path), "image": mime, "bytes": len(data)}
    return ToolResult(
        (ImageContent.from_bytes(data, mime),
         TextContent(f"Image {shown} ({mime}, {len(data)} bytes)")),
        details=details,
    )


def _cut(line: str) -> str:
    """A line longer than the model should see, cut, saying how long it was."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line)} characters in all]"


def _fitting(lines: list[str], extra: int, limit: int,
             sizes: Sequence[int] | None = None) -> int:
    """How many of ``lines``, each shown with ``extra`` more ASCII bytes, fit in ``limit``
    bytes of UTF-8 (at least one). ``sizes``: their lengths, when they are all ASCII."""
    if sizes is None:
        sizes = list(map(len, lines) if all(map(str.isascii, lines)) else
                     map(len, map(str.encode, lines)))
    if sum(sizes) + len(sizes) * extra <= limit:
        return len(sizes)
    used = list(accumulate(sizes))
    fits = bisect_right(range(len(used)), limit, key=lambda i: used[i] + (i + 1) * extra)
    return max(1, fits)


#: line numbers come in blocks of this many, each formatted once per process (see _numbers)
NUMBER_BLOCK = 1000


@lru_cache(maxsize=32)
def _number_block(width: int, block: int) -> tuple[str, ...]:
    """The prefixes (number right-aligned in ``width``, then a tab) of lines
    ``block * NUMBER_BLOCK + 1`` to ``(block + 1) * NUMBER_BLOCK``."""
    first = block * NUMBER_BLOCK + 1
    return tuple(f"{n:>{width}}\t" for n in range(first, first + NUMBER_BLOCK))


def _numbers(width: int, start: int) -> Iterator[str]:
    """The prefixes of lines ``start``, ``start + 1``, ... (as many as are taken). Numbering
    is most of what a read costs in Python, and reads of the same files run in parallel
    tools under one GIL: formatting each number once per process halves a read's time."""
    block, offset = divmod(start - 1, NUMBER_BLOCK)
    blocks = chain.from_iterable(map(_number_block, repeat(width), count(block)))
    return islice(blocks, offset, None)


def output_budget(ctx: ToolContext) -> int:
    """The bytes a page of numbered lines may take: :data:`MAX_OUTPUT_BYTES`, or less when
    the session's output limit is lower (keeping room for the continuation note), so that a
    page is never cut by the output protection into a head and a tail with a gap."""
    if ctx.output_limit is None:
        return MAX_OUTPUT_BYTES
    return max(MIN_OUTPUT_BYTES, min(MAX_OUTPUT_BYTES, ctx.output_limit - NOTE_RESERVE))


def _text_result(path: Path, shown: str, text: str, args: Mapping[str, Any],
                 budget: int = MAX_OUTPUT_BYTES) -> ToolResult:
    lines = split_lines(text)
    total = len(lines)
    start = args.get("offset") or 1
    limit = min(args.get("limit") or MAX_LINES, MAX_LINES)
    if total == 0:
        if start > 1:
            raise ToolFailure(
                f"offset {start} is past the end of {shown}, which is empty", {"lines": 0}
            )
        details = {"path": str(path), "lines": 0, "start": 0, "end": 0, "truncated": False}
        return ToolResult.text(f"[{shown} is empty]", details=details)
    if start > total:
        raise ToolFailure(
            f"offset {start} is past the end of {shown}, which has {total} lines; use an "
            f"offset from 1 to {total}", {"path": str(path), "lines": total},
        )
    raw = lines[start - 1:min(total, start - 1 + limit)]
    sizes = list(map(len, raw))
    window = raw if max(sizes) <= MAX_LINE_CHARS else list(map(_cut, raw))
    width = max(6, len(str(total)))
    # number, tab and newline: ASCII; a text that is ASCII is measured by its lengths
    fit = _fitting(window, width + 2, budget,
                   sizes if window is raw and text.isascii() else None)
    byte_limited = fit < len(window)
    cut_lines = 0 if window is raw else sum(len(line) > MAX_LINE_CHARS for line in raw[:fit])
    end = start + fit - 1
    body = "\n".join(map(add, _numbers(width, start), window[:fit]))
    if end < total:
        why = f" (output limit of {budget // 1024} KiB reached)" if byte_limited else ""
        body += (
            f"\n\n[showing lines {start}-{end} of {total}{why}; call read with "
            f"offset={end + 1} to continue]"
        )
    details = {
        "path": str(path), "lines": total, "start": start, "end": end,
        "truncated": end < total, "lines_cut": cut_lines,
        # whether the file's last line ends with a newline: what the numbered lines cannot
        # show, and what a Claude hook's raw ``file.content`` keeps
        "newline_at_end": text.endswith("\n"),
    }
    return ToolResult.text(body, details=details)
