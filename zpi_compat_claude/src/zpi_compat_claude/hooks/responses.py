"""``tool_response`` as Claude Code 2.1 sends it to PostToolUse hooks, per tool.

Hook scripts read these fields (``tool_response.file.content``, ``structuredPatch``,
``originalFile``), so the shapes follow Claude Code's exactly:

- Read: ``{type: "text", file: {filePath, content, numLines, startLine, totalLines}}``, with
  the text of the lines read as the tool returned them (no line-number prefixes, no
  continuation notice; a line longer than the tool shows is cut as it was shown; the file's
  final newline kept when the read reaches the end, as Claude Code gives it); an image:
  ``{type: "image", file: {base64, type, originalSize}}``;
- Write: ``{type: "create" | "update", filePath, content, structuredPatch, originalFile,
  userModified}``;
- Edit: ``{filePath, oldString, newString, originalFile, structuredPatch, userModified,
  replaceAll}`` (several edits: ``edits`` in place of the three single-edit fields);
- Bash: ``{stdout, stderr, interrupted, isImage, noOutputExpected}``; the streams apart when
  the bash tool kept them apart (``SessionView.keep_streams_apart``, asked for each call a
  PostToolUse handler matches), else the merged output as ``stdout`` and ``stderr`` ``""``.

Any other tool's response is its result text. ``originalFile`` is the file as it was before
the call: :class:`Originals` keeps it from before the tool ran (this host's tools do not
return it).
"""

from __future__ import annotations

import difflib
import os
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .toolnames import claude_tool_input, host_tool_name

#: files larger than this are not kept for ``originalFile`` (it is then ``null``)
MAX_ORIGINAL_BYTES = 8 * 1024 * 1024
#: calls whose original file is kept while their result has not come yet
MAX_ORIGINALS = 64
#: lines of context around each change in ``structuredPatch`` (Claude Code's)
PATCH_CONTEXT = 4

#: tools whose response has ``originalFile``
EDITING_TOOLS = frozenset({"write", "edit"})


def _absolute(path: Any, cwd: Path | str) -> str | None:
    if not isinstance(path, str) or not path:
        return None
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))


def _read_text(path: str | None, limit: int = MAX_ORIGINAL_BYTES) -> str | None:
    """The file's text, or None when it is missing, unreadable or too large."""
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    return data.decode("utf-8", errors="replace")


class Originals:
    """Files as they were before a Write or Edit ran, by call id, for ``originalFile``."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, tuple[str, str | None]] = OrderedDict()

    def keep(self, call_id: str, tool: str, arguments: Mapping[str, Any],
             cwd: Path | str) -> None:
        """Read the file ``arguments`` name before the call runs (``None``: it is new)."""
        if host_tool_name(tool) not in EDITING_TOOLS or not isinstance(arguments, Mapping):
            return
        path = _absolute(arguments.get("path", arguments.get("file_path")), cwd)
        if path is None:
            return
        self._kept[call_id] = (path, _read_text(path))
        while len(self._kept) > MAX_ORIGINALS:
            self._kept.popitem(last=False)

    def take(self, call_id: str, path: str | None) -> str | None:
        """The kept text of ``path`` for ``call_id`` (None when it was not kept, the file was
        new, or the call ran on another path after a replaced input)."""
        kept = self._kept.pop(call_id, None)
        if kept is None or kept[0] != path:
            return None
        return kept[1]


def structured_patch(old: str, new: str) -> list[dict[str, Any]]:
    """The hunks turning ``old`` into ``new``, as Claude Code's ``structuredPatch``:
    ``[{oldStart, oldLines, newStart, newLines, lines: [" same", "-old", "+new"]}]``."""
    a, b = old.splitlines(), new.splitlines()
    hunks = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(
            PATCH_CONTEXT):
        first, last = group[0], group[-1]
        lines: list[str] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines.extend(" " + line for line in a[i1:i2])
                continue
            lines.extend("-" + line for line in a[i1:i2])
            lines.extend("+" + line for line in b[j1:j2])
        old_lines, new_lines = last[2] - first[1], last[4] - first[3]
        hunks.append({"oldStart": first[1] + 1 if old_lines else first[1],
                      "oldLines": old_lines,
                      "newStart": first[3] + 1 if new_lines else first[3],
                      "newLines": new_lines, "lines": lines})
    return hunks


def _read_response(path: str | None, text: str, details: Mapping[str, Any]) -> dict[str, Any]:
    """Claude Code's Read response, its ``content`` the lines the tool returned without their
    numbers: the text the model saw, even when the file changed since; the file is not
    opened again (by name: a symlink swapped in since the read would lead elsewhere)."""
    total = int(details.get("lines") or 0)
    start = int(details.get("start") or (1 if total else 0))
    end = int(details.get("end") or 0)
    content = ""
    if total:
        numbered = text.split("\n\n[showing", 1)[0]
        content = "\n".join(line.partition("\t")[2] for line in numbered.split("\n"))
        if end == total and details.get("newline_at_end"):  # the raw text, as Claude's
            content += "\n"
    return {"type": "text", "file": {"filePath": path, "content": content,
                                     "numLines": max(end - start + 1, 0) if total else 0,
                                     "startLine": start, "totalLines": total}}


def images_of(content: Sequence[Any]) -> list[Any]:
    """The image blocks of a result's content."""
    return [c for c in content if getattr(c, "type", None) == "image"]


def _image_response(details: Mapping[str, Any], images: Sequence[Any]) -> dict[str, Any]:
    """Claude Code's Read response for an image (its optional ``dimensions`` left out: the
    image is sent as it is, never resized)."""
    return {"type": "image", "file": {"base64": images[0].data,
                                      "type": str(details.get("image") or images[0].mime_type),
                                      "originalSize": int(details.get("bytes") or 0)}}


def claude_tool_response(name: str, arguments: Mapping[str, Any], text: str,
                         details: Mapping[str, Any] | None, cwd: Path | str,
                         original: str | None = None, images: Sequence[Any] = ()) -> Any:
    """What PostToolUse hooks read as ``tool_response`` for a successful call of ``name``
    (this host's or Claude's name) with ``arguments`` (as it ran), whose result was ``text``
    and ``details`` (and ``images``, its image blocks); ``original`` is the file before a
    Write or Edit (see :class:`Originals`)."""
    name = host_tool_name(name)
    details = details or {}
    if not isinstance(arguments, Mapping):
        arguments = {}
    # the path as tool_input gives it (absolute, normalized), the tool's own when it has one
    path = _absolute(details.get("path") or arguments.get("path", arguments.get("file_path")),
                     cwd)
    if name == "bash":
        if isinstance(details.get("stderr"), str):  # the streams were kept apart
            stdout, stderr = str(details.get("stdout") or ""), details["stderr"]
        else:  # one merged output, as the model reads it
            empty = text == "(no output)" and not details.get("total_bytes")
            stdout, stderr = "" if empty else text, ""
        return {"stdout": stdout, "stderr": stderr,
                "interrupted": bool(details.get("timed_out")), "isImage": False,
                "noOutputExpected": False}
    if name == "read":
        if details.get("image") and images:
            return _image_response(details, images)
        return _read_response(path, text, details)
    if name == "write":
        content = arguments.get("content")
        created = bool(details.get("created"))
        patch = [] if created or not isinstance(content, str) or original is None else (
            structured_patch(original, content))
        return {"type": "create" if created else "update", "filePath": path,
                "content": content, "structuredPatch": patch,
                "originalFile": None if created else original, "userModified": False}
    if name == "edit":
        shaped = claude_tool_input(name, arguments, cwd)
        response: dict[str, Any] = {"filePath": path}
        if "edits" in shaped:
            response["edits"] = shaped["edits"]
        else:
            response.update(oldString=shaped.get("old_string"),
                            newString=shaped.get("new_string"))
        new = _read_text(path) if original is not None else None
        response.update(originalFile=original,
                        structuredPatch=structured_patch(original, new)
                        if original is not None and new is not None else [],
                        userModified=False)
        if "edits" not in shaped:
            response["replaceAll"] = bool(shaped.get("replace_all", False))
        return response
    return text
