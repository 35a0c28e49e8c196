"""Service ``builtins:notebooks``: ``notebook_read`` and ``notebook_edit`` for Jupyter
notebooks (``.ipynb``), Claude Code's ``NotebookRead`` and ``NotebookEdit`` with their
parameters.

``notebook_read`` shows the cells (or one) with their ids and outputs (:mod:`.notebook_cells`)
and records the notebook as read, as ``read`` does. ``notebook_edit`` replaces, inserts or
deletes one cell (``edit_mode``) of a notebook read in this session and unchanged since, and
writes the whole notebook through the file commit engine (``files.commit``: temporary file,
atomic replace); it changes a file, so permission modes and rules treat it as an edit
(``acceptEdits`` allows it in the workspace, ``notebook_edit(src/**)`` rules name it). The
file is opened as ``read`` opens one: no-follow, regular files only, bounded.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zpi_host import hookimpl
from zpi_host.permissions import PATH_ARGUMENTS
from zpi_host.tools import Tool, ToolArgumentError, ToolContext, ToolMetadata, ToolResult

from .settings import enabled

__all__ = ["notebook_edit_tool", "notebook_read_tool", "zpi_register_tools"]

SERVICE = "notebooks"
READ, EDIT = "notebook_read", "notebook_edit"
#: the largest notebook read or edited (outputs make notebooks big; images most of all)
MAX_BYTES = 32 * 1024 * 1024

#: shown by ``zpi-host --list-plugins``
contributes = {"tools": [READ, EDIT]}

PATH_ARGUMENTS.update({READ: ("notebook_path",), EDIT: ("notebook_path",)})

_PATH = {"type": "string", "description": "The path of the .ipynb file (absolute, or "
                                          "relative to the working directory)."}

READ_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "notebook_path": _PATH,
        "cell_id": {"type": "string", "description": "The id of one cell to show (default: "
                                                     "all cells)."},
    },
    "required": ["notebook_path"],
    "additionalProperties": False,
}

EDIT_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "notebook_path": _PATH,
        "cell_id": {"type": "string", "description": "The id of the cell to edit. When "
                    "inserting, the new cell goes after this one, or first if not given."},
        "new_source": {"type": "string", "description": "The new source of the cell."},
        "cell_type": {"type": "string", "enum": ["code", "markdown"], "description":
                      "The cell's type; required to insert, changes the type on replace."},
        "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"],
                      "description": "replace (default), insert or delete."},
    },
    "required": ["notebook_path", "new_source"],
    "additionalProperties": False,
}

READ_DESCRIPTION = """\
Read a Jupyter notebook (.ipynb): every cell, or the one cell_id names, with its id, type, \
source and outputs. Read a notebook before you edit it with notebook_edit."""

EDIT_DESCRIPTION = """\
Change one cell of a Jupyter notebook (.ipynb) read in this session: replace its source \
(edit_mode replace, the default), insert a new cell after it (insert; cell_type required), or \
delete it (delete). cell_id is the id notebook_read shows. A replaced code cell loses its \
outputs."""


def _checked(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]
             ) -> dict[str, Any]:
    from zpi_host.tools.base import _check_object

    checked: dict[str, Any] = _check_object(tool, schema, arguments)
    if not checked["notebook_path"].strip():
        raise ToolArgumentError(tool, "notebook_path", "must not be empty")
    if not checked["notebook_path"].endswith(".ipynb"):
        raise ToolArgumentError(tool, "notebook_path", "must be a .ipynb file; use read, "
                                "edit or write for other files")
    return checked


def prepare_read(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return _checked(READ, READ_PARAMETERS, arguments)


def prepare_edit(arguments: Mapping[str, Any]) -> dict[str, Any]:
    checked = _checked(EDIT, EDIT_PARAMETERS, arguments)
    mode = checked.setdefault("edit_mode", "replace")
    if mode == "insert" and checked.get("cell_type") is None:
        raise ToolArgumentError(EDIT, "cell_type", "is required to insert a cell (code or "
                                "markdown)")
    if mode in ("replace", "delete") and not checked.get("cell_id"):
        raise ToolArgumentError(EDIT, "cell_id", f"is required to {mode} a cell")
    return checked


def _open(ctx: ToolContext, path: str, tool: str) -> Any:
    from zpi_host.tools.read import read_target

    found = read_target(ctx, path, tool, max_bytes=MAX_BYTES)
    assert found is not None
    return found


def _decode(found: Any) -> dict[str, Any]:
    from zpi_host.tools import ToolFailure

    from .notebook_cells import NotebookError, decode_notebook

    try:
        return decode_notebook(found.data, found.shown)
    except NotebookError as exc:
        raise ToolFailure(str(exc), {"path": str(found.path)}) from None


def execute_read(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    from zpi_host.tools import ToolFailure

    from .notebook_cells import NotebookError, render_cells

    found = _open(ctx, args["notebook_path"], READ)
    notebook = _decode(found)
    try:
        text = render_cells(notebook, args.get("cell_id"), found.shown)
    except NotebookError as exc:
        raise ToolFailure(str(exc), {"path": str(found.path)}) from None
    if ctx.file_state is not None:
        ctx.file_state.record(found.real, found.fingerprint)
    return ToolResult.text(text, details={"path": str(found.path),
                                          "cells": len(notebook["cells"])})


def execute_edit(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    from zpi_host.tools import ToolFailure
    from zpi_host.tools.write import commit_one

    from .notebook_cells import NotebookError, edit_notebook, encode_notebook

    found = _open(ctx, args["notebook_path"], EDIT)
    if ctx.file_state is None:
        raise ToolFailure(f"cannot edit {found.shown}: this session keeps no record of reads, "
                          "so notebook_edit cannot check that it was read")
    ctx.file_state.check_fresh(found.real, found.fingerprint)
    notebook = _decode(found)
    try:
        changed, what = edit_notebook(
            notebook, new_source=args["new_source"], cell_id=args.get("cell_id"),
            cell_type=args.get("cell_type"), edit_mode=args["edit_mode"], shown=found.shown)
    except NotebookError as exc:
        raise ToolFailure(str(exc), {"path": str(found.path)}) from None
    commit_one(found.real, found.shown, encode_notebook(changed), found.fingerprint, ctx)
    return ToolResult.text(what, details={"path": str(found.path),
                                          "edit_mode": args["edit_mode"],
                                          "cells": len(changed["cells"])})


def notebook_read_tool() -> Tool:
    return Tool(name=READ, description=READ_DESCRIPTION, parameters=READ_PARAMETERS,
                execute=execute_read, prepare=prepare_read,
                metadata=ToolMetadata(read_only=True, concurrency_safe=True,
                                      side_effects=False))


def notebook_edit_tool() -> Tool:
    return Tool(name=EDIT, description=EDIT_DESCRIPTION, parameters=EDIT_PARAMETERS,
                execute=execute_edit, prepare=prepare_edit,
                metadata=ToolMetadata(read_only=False, concurrency_safe=False,
                                      side_effects=True))


@hookimpl
def zpi_register_tools(cwd: Path, settings: Mapping[str, Any]) -> list[Tool] | None:
    if not enabled(settings, SERVICE):
        return None
    return [notebook_read_tool(), notebook_edit_tool()]
