"""What a file call would change, shown before it runs (the approval question shows it): the
file's current content, read as the tools read it, and the diff against the text the call
would leave. ``write`` and ``edit`` build their previews from these two.

The file is opened without following a symlink, regular files only, and read only up to
:data:`PREVIEW_BYTES`: a bigger, binary or unreadable file gets a sentence instead of a diff.
A preview never raises: it is a courtesy to the person asked, not a check.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..support.diffs import fold_diff, unified_diff

__all__ = ["PREVIEW_BYTES", "NoDiff", "change_preview", "current_content"]

#: the largest file a preview reads to show its diff
PREVIEW_BYTES = 1024 * 1024


class NoDiff:
    """A file there is no diff for, and the sentence that says why."""

    def __init__(self, why: str) -> None:
        self.why = why


def current_content(path: Path, shown: str) -> bytes | NoDiff | None:
    """The bytes of the file at the resolved ``path`` when they are UTF-8 text; None when
    there is no file yet; else why there is no diff (``shown``: the path as the call gave it)."""
    from ..errors import ZpiError
    from ..fs.nofollow import open_regular

    try:
        fd, st = open_regular(path)
    except FileNotFoundError:
        return None
    except (OSError, ZpiError) as exc:  # a special file, a symlink, no permission
        return NoDiff(f"no diff shown: {shown} cannot be read ({exc})")
    try:
        if st.st_size > PREVIEW_BYTES:
            return NoDiff(f"no diff shown: {shown} is {st.st_size} bytes (a preview reads at "
                          f"most {PREVIEW_BYTES})")
        data = os.read(fd, PREVIEW_BYTES + 1)
    except OSError as exc:
        return NoDiff(f"no diff shown: {shown} cannot be read ({exc})")
    finally:
        os.close(fd)
    if len(data) > PREVIEW_BYTES:
        return NoDiff(f"no diff shown: {shown} is more than {PREVIEW_BYTES} bytes")
    if b"\0" in data:
        return NoDiff(f"no diff shown: {shown} is a binary file ({len(data)} bytes)")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return NoDiff(f"no diff shown: {shown} is not UTF-8 text ({len(data)} bytes)")
    return data


def change_preview(before: str, after: str, path: Path, shown: str, *, created: bool) -> str:
    """The first line (new file, or the counts of lines added and removed, and the file as
    resolved: what is written), then the diff, folded when long."""
    if before == after:
        return f"{shown}: no change"
    diff, added, removed = unified_diff(before, after, shown)
    what = "new file" if created else f"+{added} -{removed} lines"
    return f"{what} ({path})\n{fold_diff(diff)}"
