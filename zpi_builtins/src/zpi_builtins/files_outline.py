"""``inspect_file`` of ``builtins:files``: a file's outline, read as a stream.

The file is read in pieces of :data:`CHUNK` bytes and never held whole: memory is bounded by
the piece, the longest line kept (:data:`LINE_KEEP` bytes; the rest of a longer line is
counted, not kept) and the outline entries (``max_items``; past it they are counted). The
outline is Markdown headings (``#`` lines outside code fences) and definitions: lines that
start a class, function, type or similar in the common languages, by indentation-insensitive
patterns (:data:`DEFINITIONS`). A binary file gets its size and no outline.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

from zpi_host.tools import ToolContext, ToolFailure, ToolResult

CHUNK = 64 * 1024
LINE_KEEP = 512
SHOWN_CHARS = 160
DEFAULT_ITEMS = 300

#: a line that starts a definition, by the words the common languages start them with
DEFINITIONS = re.compile(
    rb"^\s*(?:"
    rb"(?:async\s+)?def\s+\w+|class\s+\w+"  # Python, Ruby, many
    rb"|(?:export\s+)?(?:default\s+)?(?:async\s+)?function\*?\s+\w+"  # JavaScript
    rb"|(?:export\s+)?(?:abstract\s+)?(?:class|interface|enum|type)\s+\w+"  # TypeScript
    rb"|(?:export\s+)?const\s+\w+\s*=\s*(?:async\s*)?\("  # arrow functions
    rb"|func\s+(?:\([^)]*\)\s*)?\w+|type\s+\w+\s+(?:struct|interface)"  # Go
    rb"|(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?(?:fn|struct|enum|trait|impl|mod)\b"  # Rust
    rb"|(?:(?:public|private|protected|internal|static|final|abstract|sealed)\s+)+"
    rb"(?:[\w<>\[\],.?]+\s+)?\w+\s*\("  # Java, C#, Kotlin methods
    rb"|(?:module|defmodule|defp?)\s+\w+"  # Ruby, Elixir
    rb")")
HEADING = re.compile(rb"^#{1,6}\s+\S")
FENCE = re.compile(rb"^\s*(```|~~~)")


def _lines(fd: int) -> Iterator[tuple[bytes, int]]:
    """Each line's first :data:`LINE_KEEP` bytes and its whole length, in bounded memory."""
    kept = bytearray()
    length = 0
    while True:
        chunk = os.read(fd, CHUNK)
        if not chunk:
            break
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end == -1 else chunk[start:end]
            if len(kept) < LINE_KEEP:
                kept += piece[:LINE_KEEP - len(kept)]
            length += len(piece)
            if end == -1:
                break
            yield bytes(kept), length
            kept, length = bytearray(), 0
            start = end + 1
    if length or kept:
        yield bytes(kept), length


def _shown(line: bytes) -> str:
    text = line.decode("utf-8", errors="replace").rstrip()
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


def inspect_file(args: Mapping[str, Any], ctx: ToolContext, config: Any) -> ToolResult:
    from zpi_host.fs import nofollow

    raw = args["path"]
    most = args.get("max_items") or DEFAULT_ITEMS
    try:
        fd, st = nofollow.open_regular(ctx.target(raw).real)
    except nofollow.UnusablePathError as exc:
        raise ToolFailure(str(exc), {"path": raw}) from None
    except FileNotFoundError:
        raise ToolFailure(f"{raw} does not exist", {"path": raw}) from None
    except nofollow.SpecialFileError as exc:
        raise ToolFailure(f"{raw} is {nofollow.kind_of(exc.mode)}, not a regular file; "
                          "inspect_file reads only files", {"path": raw}) from None
    except OSError as exc:
        raise ToolFailure(f"cannot open {raw}: {exc.strerror or exc}", {"path": raw}) from None
    try:
        head = os.pread(fd, 8192, 0)
        if b"\0" in head:
            return ToolResult.text(f"{raw}: a binary file of {st.st_size} bytes (no outline)",
                                   details={"path": raw, "bytes": st.st_size, "binary": True})
        items: list[str] = []
        found = lines = longest = 0
        fenced = False
        for number, (line, length) in enumerate(_lines(fd), 1):
            lines = number
            longest = max(longest, length)
            if FENCE.match(line):
                fenced = not fenced
                continue
            if (not fenced and HEADING.match(line)) or DEFINITIONS.match(line):
                found += 1
                if len(items) < most:
                    items.append(f"{number:>7}: {_shown(line)}")
    finally:
        os.close(fd)
    size = st.st_size
    text = [f"{raw}: {lines} lines, {size} bytes (longest line {longest} bytes)"]
    text += items if items else ["(no headings or definitions found)"]
    if found > len(items):
        text.append(f"[{found - len(items)} more entries not shown; raise max_items, or read "
                    "the file in parts]")
    details = {"path": raw, "lines": lines, "bytes": size, "entries": found,
               "longest_line": longest}
    return ToolResult.text("\n".join(text), details=details)
