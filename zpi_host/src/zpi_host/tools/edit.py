"""The ``edit`` tool: exact text replacements in a file the model has read, all or none.

Edits apply in order to the text in memory; nothing is written unless every edit applies. A
file whose line endings are all CRLF is matched and edited as LF text and written back with
CRLF; a UTF-8 BOM is kept. Like write, edit needs the session's file-read state.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

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
from .read import decode_text, read_target
from .write import TextFormat, commit_one, plural

EDIT_FIELDS = {
    "old_text": {"type": "string", "description": "Exact text to replace (with its indentation)."},
    "new_text": {"type": "string", "description": "Text to put in its place."},
    "replace_all": {
        "type": "boolean",
        "description": "Replace every occurrence instead of requiring exactly one (default false).",
    },
}

PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "File to edit, absolute or relative to the working directory.",
        },
        "edits": {
            "type": "array",
            "minItems": 1,
            "description": "Replacements, applied in order; all succeed or none is written.",
            "items": {
                "type": "object",
                "properties": EDIT_FIELDS,
                "required": ["old_text", "new_text"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["path", "edits"],
    "additionalProperties": False,
}

#: what the schema check covers: the top level; each edit is checked by ``prepare_edit`` (with
#: more than a schema says: no empty ``old_text``, no edit that changes nothing)
_TOP_LEVEL: Mapping[str, Any] = {
    **PARAMETERS, "properties": {**PARAMETERS["properties"], "edits": {"type": "array"}}}

DESCRIPTION = """Edit a file by exact text replacement. The file must have been read with read
in this session and be unchanged since. Each old_text must match the file exactly (copy it from
read's output without the line-number prefix) and exactly once, unless replace_all is set; give
more surrounding lines to make it unique. Edits apply in order, and either all apply or none."""


def edit_tool() -> Tool:
    """The kernel ``edit`` tool."""
    return Tool(
        name="edit",
        description=DESCRIPTION,
        parameters=PARAMETERS,
        execute=execute_edit,
        metadata=ToolMetadata(read_only=False, concurrency_safe=False, side_effects=True),
        prepare=prepare_edit,
        preview=edit_preview,
    )


def edit_preview(arguments: Mapping[str, Any], path: Path) -> str:
    """The diff an ``edit`` call would make, or why it would fail (then it changes nothing),
    for the person asked to approve it."""
    from .previews import NoDiff, change_preview, current_content

    edits, shown = arguments.get("edits"), str(arguments.get("path", path))
    if not isinstance(edits, list):
        return ""
    data = current_content(path, shown)
    if isinstance(data, NoDiff):
        return data.why
    if data is None:
        return f"{shown} does not exist: the edit would fail and change nothing"
    fmt = TextFormat.of(data)
    before = fmt.to_model(data)
    try:
        after, _ = apply_edits(before, edits, shown, crlf=fmt.crlf)
    except ToolFailure as exc:
        return f"the edit would fail and change nothing: {exc}"
    return change_preview(before, after, path, shown, created=False)


def prepare_edit(args: Mapping[str, Any]) -> dict[str, Any]:
    """The schema check, then each edit's fields, so that a hook's replaced input is held to
    the same rules as the model's."""
    checked: dict[str, Any] = _check_object("edit", _TOP_LEVEL, args)
    if not checked["path"]:
        raise ToolArgumentError("edit", "path", "must not be empty")
    edits = checked["edits"]
    if not isinstance(edits, list) or not edits:
        raise ToolArgumentError("edit", "edits", "must be a non-empty list of edits")
    clean = []
    for i, edit in enumerate(edits):
        where = f"edits[{i}]"
        if not isinstance(edit, Mapping):
            raise ToolArgumentError(
                "edit", where, f"expected an object with old_text and new_text, got "
                f"{type(edit).__name__}",
            )
        for name in edit:
            if name not in EDIT_FIELDS:
                raise ToolArgumentError(
                    "edit", f"{where}.{name}",
                    f"is not a field of an edit (known: {', '.join(EDIT_FIELDS)})",
                )
        for name in ("old_text", "new_text"):
            if name not in edit:
                raise ToolArgumentError("edit", f"{where}.{name}", "is required")
            if not isinstance(edit[name], str):
                raise ToolArgumentError(
                    "edit", f"{where}.{name}", f"expected string, got {type(edit[name]).__name__}"
                )
        replace_all = edit.get("replace_all", False)
        if replace_all is None:
            replace_all = False
        if not isinstance(replace_all, bool):
            raise ToolArgumentError(
                "edit", f"{where}.replace_all",
                f"expected boolean, got {type(replace_all).__name__}",
            )
        if edit["old_text"] == "":
            raise ToolArgumentError(
                "edit", f"{where}.old_text",
                "must not be empty; to add text, include a nearby line in old_text and new_text",
            )
        if edit["old_text"] == edit["new_text"]:
            raise ToolArgumentError(
                "edit", where, "old_text and new_text are identical (no change)"
            )
        clean.append({"old_text": edit["old_text"], "new_text": edit["new_text"],
                      "replace_all": replace_all})
    checked["edits"] = clean
    return checked


def execute_edit(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    found = read_target(ctx, args["path"], "edit")
    assert found is not None
    path, shown, data, current = found.path, found.shown, found.data, found.fingerprint
    if ctx.file_state is None:
        raise ToolFailure(
            f"cannot edit {shown}: this session keeps no record of reads, so edit cannot check "
            "that the file was read; use bash to change it", {"path": str(path)},
        )
    ctx.file_state.check_fresh(found.real, current)
    decode_text(data, shown)
    fmt = TextFormat.of(data)
    before = fmt.to_model(data)
    after, replacements = apply_edits(before, args["edits"], shown, crlf=fmt.crlf)
    if after == before:
        raise ToolFailure(
            f"the edits leave {shown} unchanged; nothing was written", {"path": str(path)}
        )
    commit_one(found.real, shown, fmt.to_disk(after), current, ctx)
    diff, added, removed = unified_diff(before, after, shown)
    text = f"Edited {shown}: {plural(len(args['edits']), 'edit')}, +{added} -{removed} lines"
    details = {"path": str(path), "diff": diff, "replacements": replacements}
    return ToolResult.text(text, details=details)


def apply_edits(
    text: str, edits: list[Mapping[str, Any]], shown: str, *, crlf: bool = False
) -> tuple[str, int]:
    """Apply ``edits`` in order; returns the new text and the number of replacements, or
    raises a ToolFailure naming the edit that does not apply."""
    replacements = 0
    for i, edit in enumerate(edits, 1):
        label = f"edit {i} of {len(edits)}" if len(edits) > 1 else "edit"
        old, new = edit["old_text"], edit["new_text"]
        if crlf:
            old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
        if old == new:
            raise ToolFailure(f"{label}: old_text and new_text are identical (no change)")
        found = text.count(old)
        if found == 0 and "\r\n" in text and "\r" not in old:
            # mixed line endings: the model cannot see CRs, so try the CRLF spelling too
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
            found = text.count(old)
        if found == 0:
            raise ToolFailure(
                f"{label}: old_text not found in {shown}" + _hint(text, edit["old_text"], i),
                {"edit": i},
            )
        if found > 1 and not edit.get("replace_all"):
            raise ToolFailure(
                f"{label}: old_text found {found} times in {shown} (at lines "
                f"{_match_lines(text, old)}); add more surrounding context to make it unique, "
                "or set replace_all to change every one", {"edit": i},
            )
        text = text.replace(old, new) if edit.get("replace_all") else text.replace(old, new, 1)
        replacements += found if edit.get("replace_all") else 1
    return text, replacements


def _match_lines(text: str, old: str, most: int = 10) -> str:
    lines: list[str] = []
    start = text.find(old)
    while start != -1 and len(lines) < most:
        lines.append(str(text.count("\n", 0, start) + 1))
        start = text.find(old, start + len(old))
    return ", ".join(lines)


def _hint(text: str, old: str, index: int) -> str:
    """Why a search may have failed: whitespace differences, or an earlier edit's change."""
    wanted = [line.strip() for line in old.strip("\n").split("\n")]
    lines = [line.strip() for line in text.split("\n")]
    for n in range(len(lines) - len(wanted) + 1 if any(wanted) else 0):
        if lines[n:n + len(wanted)] == wanted:
            return (
                f"; text matching it except for whitespace/indentation starts at line {n + 1}: "
                "copy the exact text from read's output"
            )
    if index > 1:
        return "; edits apply in order, so it must match the text as the earlier edits left it"
    return "; read the file again and copy old_text exactly"
