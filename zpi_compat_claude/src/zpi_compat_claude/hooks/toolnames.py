"""The one table between this host's tool names and inputs and Claude Code's spelling.

Claude hooks match tool names as Claude spells them (``Bash``, ``Edit``) and read
``tool_input`` with Claude's field names (``file_path``, ``old_string``, ``timeout`` in
milliseconds). Everything that converts in either direction lives here, so that
``docs/claude-hooks.md`` can show a single table. A tool that is not in the table keeps its
name and its input unchanged (a plugin's own tools, MCP-style names).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zpi_host.permissions.toolnames import CLAUDE_SPELLINGS

#: this host's tool name -> the name Claude hooks see: Claude Code's current one from the
#: kernel's table of spellings (the one permission rules match by), except ``task``, which
#: hooks see as ``Task`` (the name Claude Code's hook matchers were written for).
CLAUDE_NAMES: Mapping[str, str] = {
    **{host: claude[0] for host, claude in CLAUDE_SPELLINGS.items()}, "task": "Task"}

#: Claude Code's name -> this host's (every spelling of the table, ``Agent`` and ``Task``
#: included; ``MultiEdit`` input has the same shape this host's ``edit`` takes).
HOST_NAMES: Mapping[str, str] = {
    **{name: host for host, claude in CLAUDE_SPELLINGS.items() for name in claude},
    "MultiEdit": "edit",
}


def claude_tool_name(name: str) -> str:
    """``bash`` -> ``Bash``; a name outside the table is returned unchanged."""
    return CLAUDE_NAMES.get(name, name)


def host_tool_name(name: str) -> str:
    """``Bash`` -> ``bash``; a name outside the table is returned unchanged."""
    return HOST_NAMES.get(name, name)


def _absolute(path: Any, cwd: Path | str) -> Any:
    """Claude gives hooks absolute file paths; a relative path is resolved against the session's
    working directory (lexically: nothing is read from the disk)."""
    if not isinstance(path, str) or not path:
        return path
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))


#: this host's tool -> the fields of Claude's input for it that hold a path (made absolute)
CLAUDE_PATH_FIELDS: Mapping[str, tuple[str, ...]] = {
    "read": ("file_path",), "write": ("file_path",), "edit": ("file_path",),
    "glob": ("path",), "grep": ("path",), "ls": ("path",), "notebook_edit": ("notebook_path",),
}

_EDIT_TO_CLAUDE: Mapping[str, str] = {"old_text": "old_string", "new_text": "new_string"}
_EDIT_TO_HOST: Mapping[str, str] = {"old_string": "old_text", "new_string": "new_text"}


def _edit_to_claude(edit: Any) -> Any:
    if not isinstance(edit, Mapping):
        return edit
    out: dict[str, Any] = {}
    for key, value in edit.items():
        out[_EDIT_TO_CLAUDE.get(str(key), str(key))] = value
    out.setdefault("replace_all", False)
    return out


def _edit_to_host(edit: Any) -> Any:
    if not isinstance(edit, Mapping):
        return edit
    out: dict[str, Any] = {}
    for key, value in edit.items():
        out[_EDIT_TO_HOST.get(str(key), str(key))] = value
    return out


def claude_tool_input(name: str, arguments: Mapping[str, Any], cwd: Path | str) -> dict[str, Any]:
    """This host's arguments for tool ``name`` in the shape Claude's hooks expect.

    A tool under Claude's name (the SDK's standard ``Read``, ``Edit`` ...) has Claude's input
    already: only its path fields become absolute (:data:`CLAUDE_PATH_FIELDS`).
    ``read``/``write``: ``path`` -> absolute ``file_path``. ``edit``: one edit becomes
    ``{file_path, old_string, new_string, replace_all}`` (Claude's Edit); several become
    ``{file_path, edits: [{old_string, new_string, replace_all}, ...]}`` (Claude's MultiEdit
    shape, still under the name ``Edit``). ``bash``: ``timeout`` seconds -> milliseconds.
    """
    args = dict(arguments) if isinstance(arguments, Mapping) else {}
    host = host_tool_name(name)
    if host != name:  # a tool under Claude's name (the SDK's Read, Edit ...): Claude's input
        for field in CLAUDE_PATH_FIELDS.get(host, ()):
            if field in args:
                args[field] = _absolute(args[field], cwd)
        return args
    if name in ("read", "write", "edit") and "path" in args:
        args["file_path"] = _absolute(args.pop("path"), cwd)
    if name == "edit" and isinstance(args.get("edits"), list):
        edits = [_edit_to_claude(e) for e in args.pop("edits")]
        if len(edits) == 1 and isinstance(edits[0], Mapping):
            args.update(edits[0])
        else:
            args["edits"] = edits
    elif name == "bash" and isinstance(args.get("timeout"), int | float) and not isinstance(
            args.get("timeout"), bool):
        args["timeout"] = int(args["timeout"] * 1000)
    elif name in ("glob", "grep", "ls") and "path" in args:
        args["path"] = _absolute(args["path"], cwd)
    return args


#: Claude input fields this host's kernel tools do not have; dropped from ``updatedInput``.
DROPPED_FIELDS: Mapping[str, frozenset[str]] = {
    "bash": frozenset({"description", "run_in_background", "dangerouslyDisableSandbox"}),
}


def host_tool_input(name: str, updated: Mapping[str, Any]) -> dict[str, Any]:
    """A hook's ``updatedInput`` (Claude's shape, the whole input) as arguments for this host's
    tool ``name``; the tool validates the result again before it runs."""
    args = dict(updated)
    if name in ("read", "write", "edit") and "file_path" in args and "path" not in args:
        args["path"] = args.pop("file_path")
    if name == "edit":
        if isinstance(args.get("edits"), list):
            args["edits"] = [_edit_to_host(e) for e in args["edits"]]
        elif "old_string" in args or "new_string" in args:
            single = {"old_text": args.pop("old_string", None),
                      "new_text": args.pop("new_string", None)}
            if "replace_all" in args:
                single["replace_all"] = args.pop("replace_all")
            args["edits"] = [{k: v for k, v in single.items() if v is not None}]
    elif name == "bash":
        timeout = args.get("timeout")
        if isinstance(timeout, int | float) and not isinstance(timeout, bool):
            args["timeout"] = max(1, math.ceil(timeout / 1000))
        for field in DROPPED_FIELDS["bash"]:
            args.pop(field, None)
    return args
