"""What a ``write`` or an ``edit`` call would change, shown before it runs: the diff of the
file's current text and the text the call would leave (the approval question shows it).

The file is read the way the tools read it (no symlink followed, regular files only) and only
up to :data:`PREVIEW_BYTES`: a bigger, binary or unreadable file gets a sentence instead of a
diff. A preview never raises: it is a courtesy to the person asked, not a check.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..support.diffs import fold_diff, unified_diff

__all__ = ["PREVIEW_BYTES", "edit_preview", "write_preview"]

#: the largest file a preview reads to show its diff
PREVIEW_BYTES = 1024 * 1024


def write_preview(arguments: Mapping[str, Any], path: Path) -> str:
    """The diff a ``write`` call would make: all lines added for a new file."""
    content = arguments.get("content")
    if not isinstance(content, str):
        return ""
    current = _current_text(path, str(arguments.get("path", path)))
    if isinstance(current, _NoDiff):
        return current.why
    before = "" if current is None else current[0]
    return _diff(before, content, arguments, path, created=current is None)


def edit_preview(arguments: Mapping[str, Any], path: Path) -> str:
    """The diff an ``edit`` call would make; or why it would fail (it then changes nothing)."""
    from .base import ToolFailure
    from .edit import apply_edits

    edits = arguments.get("edits")
    shown = str(arguments.get("path", path))
    if not isinstance(edits, list):
        return ""
    current = _current_text(path, shown)
    if isinstance(current, _NoDiff):
        return current.why
    if current is None:
        return f"{shown} does not exist: the edit would fail and change nothing"
    before, crlf = current
    try:
        after, _ = apply_edits(before, edits, shown, crlf=crlf)
    except ToolFailure as exc:
        return f"the edit would fail and change nothing: {exc}"
    return _diff(before, after, arguments, path, created=False)


class _NoDiff:
    """A file there is no diff for, and the sentence that says why."""

    def __init__(self, why: str) -> None:
        self.why = why


def _current_text(path: Path, shown: str) -> tuple[str, bool] | None | _NoDiff:
    """The file's text as the tools work with it (no BOM, LF line endings) and whether it
    has CRLF line endings; None when there is no file yet; or why there is no diff."""
    from ..errors import ZpiError
    from ..fs.nofollow import open_regular
    from .write import TextFormat

    try:
        fd, st = open_regular(path)
    except FileNotFoundError:
        return None
    except (OSError, ZpiError) as exc:  # a special file, a symlink, no permission
        return _NoDiff(f"no diff shown: {shown} cannot be read ({exc})")
    try:
        if st.st_size > PREVIEW_BYTES:
            return _NoDiff(f"no diff shown: {shown} is {st.st_size} bytes (a preview reads at "
                           f"most {PREVIEW_BYTES})")
        data = os.read(fd, PREVIEW_BYTES + 1)
    except OSError as exc:
        return _NoDiff(f"no diff shown: {shown} cannot be read ({exc})")
    finally:
        os.close(fd)
    if len(data) > PREVIEW_BYTES:
        return _NoDiff(f"no diff shown: {shown} is more than {PREVIEW_BYTES} bytes")
    if b"\0" in data:
        return _NoDiff(f"no diff shown: {shown} is a binary file ({len(data)} bytes)")
    fmt = TextFormat.of(data)
    try:
        return fmt.to_model(data), fmt.crlf
    except UnicodeDecodeError:
        return _NoDiff(f"no diff shown: {shown} is not UTF-8 text ({len(data)} bytes)")


def _diff(before: str, after: str, arguments: Mapping[str, Any], path: Path, *,
          created: bool) -> str:
    shown = str(arguments.get("path", path))
    if before == after:
        return f"{shown}: no change"
    diff, added, removed = unified_diff(before, after, shown)
    what = "new file" if created else f"+{added} -{removed} lines"
    return f"{what} ({path})\n{fold_diff(diff)}"  # the file as resolved: what is written
