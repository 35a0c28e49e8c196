"""Unified diffs of a file's text: what an edit changed (the edit tool's result) and what a
write or an edit would change (the approval question). One place, so that a terminal renderer
(colours) has one format to read."""

from __future__ import annotations

__all__ = ["fold_diff", "unified_diff"]

#: lines of a diff an approval question shows before folding the rest into a count
SHOWN_DIFF_LINES = 60


def unified_diff(before: str, after: str, shown: str, *, context: int = 3
                 ) -> tuple[str, int, int]:
    """A unified diff with a/ b/ headers and ``context`` lines around each change, and the
    counts of added and removed lines."""
    import difflib  # only once a diff is made

    diff = list(difflib.unified_diff(
        _keepends(before), _keepends(after),
        fromfile=f"a/{shown.lstrip('/')}", tofile=f"b/{shown.lstrip('/')}", n=context,
    ))
    added = sum(1 for line in diff[2:] if line.startswith("+"))
    removed = sum(1 for line in diff[2:] if line.startswith("-"))
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in diff)
    return text, added, removed


def fold_diff(diff: str, most: int = SHOWN_DIFF_LINES) -> str:
    """``diff`` cut after ``most`` lines, with a last line that counts the lines not shown."""
    lines = diff.removesuffix("\n").split("\n")
    if len(lines) <= most:
        return diff
    hidden = len(lines) - most
    return "\n".join([*lines[:most], f"… {hidden} more line{'s' * (hidden != 1)} of the diff "
                                     "not shown"]) + "\n"


def _keepends(text: str) -> list[str]:
    """Lines with their LF, split on LF only (``splitlines`` also splits on form feeds...)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
