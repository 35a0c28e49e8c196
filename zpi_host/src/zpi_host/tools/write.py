"""The ``write`` tool: create a file, or replace one the model has read and that has not
changed since. Goes through :func:`zpi_host.fs.files.commit`, so the write is atomic.

Without a session file-read state (``ctx.file_state`` None) write can only create new files:
overwriting needs proof that the model saw what it replaces.

When an existing file is replaced, its UTF-8 BOM and CRLF line endings are kept: read shows
neither, so the model cannot be expected to reproduce them. The result's details carry the
diff of the change (as edit's do) for files up to :data:`DIFF_CHARS`, for a terminal to show.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ..support.attrs_methods import FrozenFieldsEq

if TYPE_CHECKING:
    from ..fs.files import FileFingerprint

from ..fs.nofollow import UnusablePathError
from ..support.diffs import unified_diff
from .base import (
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolFailure,
    ToolMetadata,
    ToolResult,
    _check_object,
)
from .read import display_path, read_target

UTF8_BOM = b"\xef\xbb\xbf"
#: files up to this many characters (before and after) get a diff in the result's details
DIFF_CHARS = 256 * 1024

PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "File to write, absolute or relative to the working directory.",
        },
        "content": {"type": "string", "description": "The complete new content of the file."},
    },
    "required": ["path", "content"],
    "additionalProperties": False,
}

DESCRIPTION = """Write a whole file: creates it (and missing parent directories) or replaces it.
An existing file must have been read with read in this session and be unchanged since; for
changing part of a file prefer edit. An existing file's BOM and CRLF line endings are kept."""


@attrs.frozen(repr=False, eq=False, slots=False)
class TextFormat(FrozenFieldsEq):
    """How a file's text is stored: a UTF-8 BOM or not, CRLF or LF line endings."""

    bom: bool = False
    crlf: bool = False

    @classmethod
    def of(cls, data: bytes) -> TextFormat:
        """CRLF only when every line ending is CRLF; a mixed file is left as it is."""
        crlf = b"\r\n" in data and data.count(b"\n") == data.count(b"\r\n")
        return cls(data.startswith(UTF8_BOM), crlf)

    def to_model(self, data: bytes) -> str:
        """Decoded text as the model works with it: no BOM, LF line endings."""
        text = data.removeprefix(UTF8_BOM).decode("utf-8") if self.bom else data.decode("utf-8")
        return text.replace("\r\n", "\n") if self.crlf else text

    def to_disk(self, text: str) -> bytes:
        """Model text encoded in this format (CRLF the model did write is not doubled)."""
        if self.crlf:
            text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        data = text.encode("utf-8")
        return UTF8_BOM + data if self.bom and not data.startswith(UTF8_BOM) else data

    def describe(self) -> str:
        return " and ".join(
            n for n, on in (("UTF-8 BOM", self.bom), ("CRLF line endings", self.crlf)) if on
        )


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def write_tool() -> Tool:
    """The kernel ``write`` tool."""
    return Tool(
        name="write",
        description=DESCRIPTION,
        parameters=PARAMETERS,
        execute=execute_write,
        metadata=ToolMetadata(read_only=False, concurrency_safe=False, side_effects=True),
        prepare=prepare_write,
        preview=write_preview,
    )


def write_preview(arguments: Mapping[str, Any], path: Path) -> str:
    """The diff a ``write`` call would make (a new file: every line added), for the person
    asked to approve it; the file's BOM and CRLF are kept by the write, so not shown."""
    from .previews import NoDiff, change_preview, current_content

    content, shown = arguments.get("content"), str(arguments.get("path", path))
    if not isinstance(content, str):
        return ""
    data = current_content(path, shown)
    if isinstance(data, NoDiff):
        return data.why
    before = "" if data is None else TextFormat.of(data).to_model(data)
    return change_preview(before, content, path, shown, created=data is None)


def prepare_write(args: Mapping[str, Any]) -> dict[str, Any]:
    checked: dict[str, Any] = _check_object("write", PARAMETERS, args)
    if not checked["path"]:
        raise ToolArgumentError("write", "path", "must not be empty")
    if checked["content"] is None:
        raise ToolArgumentError("write", "content", "must be a string (use \"\" for empty)")
    return checked


def commit_one(
    real: Path, shown: str, data: bytes, expected: FileFingerprint | None, ctx: ToolContext
) -> FileFingerprint:
    """Commit one file at its resolved path ``real`` (as judged: never resolved again, no
    symlink followed) and record its new fingerprint as read; commit errors become tool
    failures (shared by write and edit)."""
    from ..fs.files import FileChange, FileCommitError, commit  # lazily: keeps listing cheap

    if ctx.before_change is not None:
        ctx.before_change(real)
    try:
        report = commit([FileChange(real, data, expected)], resolved=True)
    except FileCommitError as exc:
        raise ToolFailure(str(exc), {"path": str(real), "step": exc.step}) from exc
    fingerprint = report.files[0].fingerprint
    assert fingerprint is not None
    if ctx.file_state is not None:
        ctx.file_state.record(real, fingerprint)
    return fingerprint


def execute_write(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    content: str = args["content"]
    found = read_target(ctx, args["path"], "write", missing_ok=True)
    expected: FileFingerprint | None = None
    fmt = TextFormat()
    if found is None:  # nothing there yet (commit refuses what is in the way)
        path = ctx.resolve_path(args["path"])
        shown = display_path(path, ctx.cwd)
        try:
            real = ctx.target(args["path"]).real
        except UnusablePathError as exc:
            raise ToolFailure(str(exc), {"path": str(path)}) from None
    else:
        path, shown, real = found.path, found.shown, found.real
        if ctx.file_state is None:
            raise ToolFailure(
                f"{shown} already exists and this session keeps no record of reads, so write "
                "may only create new files; change it with edit or bash instead",
                {"path": str(path)},
            )
        ctx.file_state.check_fresh(real, found.fingerprint)
        expected, fmt = found.fingerprint, TextFormat.of(found.data)
    data = fmt.to_disk(content)
    commit_one(real, shown, data, expected, ctx)
    size, lines = plural(len(data), "byte"), plural(count_lines(content), "line")
    kept = f" (kept its {fmt.describe()})" if fmt.describe() else ""
    if expected is None:
        text = f"Created {shown} ({size}, {lines})"
    else:
        text = f"Wrote {size} ({lines}) to {shown}{kept}"
    details: dict[str, Any] = {"path": str(path), "bytes": len(data),
                               "created": expected is None}
    before = "" if found is None else fmt.to_model(found.data)
    if max(len(before), len(content)) <= DIFF_CHARS:  # what a terminal shows of the change
        details["diff"] = unified_diff(before, content, shown)[0]
    return ToolResult.text(text, details=details)
