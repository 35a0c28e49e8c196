"""``batch_edit`` of ``builtins:files``: many replacements in one file, each on its own.

Unlike the kernel's ``edit`` (all or none), each edit that matches (exactly once, or every
time with ``replace_all``) is applied, in order, and the result names only the edits that did
not apply and why. The file is written once, atomically (``tools.write.commit_one``), against
the fingerprint it was read with, so a change on disk meanwhile fails the whole call rather
than being overwritten. Line endings and a BOM are kept as ``edit`` keeps them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zpi_host.tools import ToolArgumentError, ToolContext, ToolFailure, ToolResult

NAME = "batch_edit"


def _checked(edits: Any) -> list[tuple[str, str, bool]]:
    if not isinstance(edits, list) or not edits:
        raise ToolArgumentError(NAME, "edits", "must be a non-empty list of edits")
    out = []
    for i, edit in enumerate(edits):
        where = f"edits[{i}]"
        if not isinstance(edit, Mapping):
            raise ToolArgumentError(NAME, where, "expected an object with old_text and "
                                    "new_text")
        old, new = edit.get("old_text"), edit.get("new_text")
        if not isinstance(old, str) or not isinstance(new, str):
            raise ToolArgumentError(NAME, where, "old_text and new_text must be strings")
        if not old:
            raise ToolArgumentError(NAME, f"{where}.old_text", "must not be empty")
        out.append((old, new, edit.get("replace_all") is True))
    return out


def apply_matching(text: str, edits: list[tuple[str, str, bool]]
                   ) -> tuple[str, list[int], list[tuple[int, str]]]:
    """The text with every edit that matches applied, in order; the numbers (from 1) of the
    applied edits and the unmatched ones with the reason."""
    applied: list[int] = []
    unmatched: list[tuple[int, str]] = []
    for number, (old, new, every) in enumerate(edits, 1):
        count = text.count(old)
        if count == 0:
            unmatched.append((number, "old_text not found"
                              + (" (an earlier edit may have changed it)" if applied else "")))
        elif count > 1 and not every:
            unmatched.append((number, f"old_text found {count} times; give more context or "
                                      "set replace_all"))
        elif old == new:
            unmatched.append((number, "old_text and new_text are identical"))
        else:
            text = text.replace(old, new) if every else text.replace(old, new, 1)
            applied.append(number)
    return text, applied, unmatched


def batch_edit(args: Mapping[str, Any], ctx: ToolContext, config: Any) -> ToolResult:
    from zpi_host.tools.read import decode_text, read_target
    from zpi_host.tools.write import TextFormat, commit_one

    edits = _checked(args["edits"])
    found = read_target(ctx, args["path"], NAME)
    assert found is not None
    decode_text(found.data, found.shown)
    fmt = TextFormat.of(found.data)
    before = fmt.to_model(found.data)
    if fmt.crlf:
        edits = [(o.replace("\r\n", "\n"), n.replace("\r\n", "\n"), e) for o, n, e in edits]
    after, applied, unmatched = apply_matching(before, edits)
    details: dict[str, Any] = {"path": str(found.path), "applied": applied,
                               "unmatched": [{"edit": n, "reason": r} for n, r in unmatched]}
    report = [f"edit {n}: {reason}" for n, reason in unmatched]
    if not applied:
        raise ToolFailure(f"no edit applied to {found.shown}; nothing was written:\n"
                          + "\n".join(report), details)
    commit_one(found.real, found.shown, fmt.to_disk(after), found.fingerprint, ctx)
    text = f"Applied {len(applied)} of {len(edits)} edits to {found.shown}"
    if report:
        text += "; these did not apply:\n" + "\n".join(report)
    return ToolResult.text(text, details=details)
