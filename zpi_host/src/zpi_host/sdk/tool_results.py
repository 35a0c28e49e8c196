"""``UserMessage.tool_use_result``: a tool's structured result in Claude Code's shape.

claude-agent-sdk passes on what Claude Code's tools report (their output schemas); programs
read ``tool_use_result["stdout"]`` of a Bash call, say. The standard tools' results are given
in that shape where this host knows the values: ``Bash`` (``stdout``, ``stderr``,
``interrupted``, ``isImage``), ``Write`` (``type`` create/update, ``filePath``, ``content``),
``Edit`` (``filePath``, ``oldString``, ``newString``, ``replaceAll``, ``userModified``).
Other tools (``Read`` too: its text here is numbered lines, not Claude's ``file.content``)
keep this host's ``details``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["claude_tool_result"]


def claude_tool_result(tool: str, details: Mapping[str, Any] | None, text: str,
                       arguments: Mapping[str, Any], is_error: bool) -> dict[str, Any] | None:
    """The ``tool_use_result`` of one call of ``tool``: Claude Code's shape for the standard
    tools (not for a failed call other than Bash's, which Claude reports as an error text),
    this host's ``details`` otherwise (None: none)."""
    shape = SHAPES.get(tool)
    if shape is not None and (tool == "Bash" or not is_error):
        return shape(details or {}, text, arguments)
    return dict(details) if details else None


def _bash(details: Mapping[str, Any], text: str, arguments: Mapping[str, Any]
          ) -> dict[str, Any]:
    """The streams apart (the SDK's Bash asks the kernel tool to keep them apart); a bash
    that does not report them (an override) gives its whole output as ``stdout``."""
    stdout = details.get("stdout")
    out: dict[str, Any] = {
        "stdout": stdout if isinstance(stdout, str) else text,
        "stderr": details.get("stderr") if isinstance(details.get("stderr"), str) else "",
        "interrupted": bool(details.get("timed_out") or details.get("interrupted")),
        "isImage": False,
    }
    task = details.get("task_id")
    if isinstance(task, str):
        out["backgroundTaskId"] = task
    return out


def _write(details: Mapping[str, Any], text: str, arguments: Mapping[str, Any]
           ) -> dict[str, Any]:
    return {"type": "create" if details.get("created") else "update",
            "filePath": str(details.get("path") or arguments.get("file_path", "")),
            "content": str(arguments.get("content", ""))}


def _edit(details: Mapping[str, Any], text: str, arguments: Mapping[str, Any]
          ) -> dict[str, Any]:
    return {"filePath": str(details.get("path") or arguments.get("file_path", "")),
            "oldString": str(arguments.get("old_string", "")),
            "newString": str(arguments.get("new_string", "")),
            "replaceAll": bool(arguments.get("replace_all", False)),
            "userModified": False}


SHAPES: Mapping[str, Callable[[Mapping[str, Any], str, Mapping[str, Any]], dict[str, Any]]] = {
    "Bash": _bash, "Write": _write, "Edit": _edit,
}
