"""Jupyter notebooks (``.ipynb``, nbformat 4) as ``notebook_read`` shows them and
``notebook_edit`` changes them: pure functions over the decoded JSON, no files.

A cell is named by its ``id`` (nbformat 4.5 and later) or, as Claude Code names cells of
notebooks without ids, ``cell-N`` (N from 0). An edit works on a copy and returns it with a
sentence saying what changed; the caller writes it. Code cells whose source is replaced lose
their outputs and execution count (they no longer belong to that source), as in Claude Code.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping
from typing import Any

__all__ = ["NotebookError", "cell_name", "decode_notebook", "edit_notebook",
           "encode_notebook", "render_cells"]

CELL_TYPES = ("code", "markdown")
EDIT_MODES = ("replace", "insert", "delete")
#: characters of one output shown at most (the rest is cut with a note)
MAX_OUTPUT_CHARS = 10_000
_INDEX_NAME = re.compile(r"cell-(\d+)")


class NotebookError(ValueError):
    """A notebook that cannot be read as nbformat 4, or an edit that does not fit it; the
    message says which and what to do."""


def decode_notebook(data: bytes, shown: str) -> dict[str, Any]:
    try:
        notebook = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise NotebookError(f"{shown} is not a notebook (not JSON: {exc}); read it with "
                            "read") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise NotebookError(f"{shown} is not a notebook (no list of cells); read it with read")
    if not all(isinstance(c, dict) for c in notebook["cells"]):
        raise NotebookError(f"{shown}: a cell is not an object; the notebook is damaged")
    return notebook


def encode_notebook(notebook: Mapping[str, Any]) -> bytes:
    """The notebook as Jupyter writes it: one-space indentation, a final newline."""
    return (json.dumps(notebook, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return value if isinstance(value, str) else ""


def cell_name(cell: Mapping[str, Any], index: int) -> str:
    value = cell.get("id")
    return value if isinstance(value, str) and value else f"cell-{index}"


def find_cell(notebook: Mapping[str, Any], cell_id: str, shown: str) -> int:
    """The index of the cell ``cell_id`` names (its id, else ``cell-N``)."""
    cells = notebook["cells"]
    for index, cell in enumerate(cells):
        if cell.get("id") == cell_id:
            return index
    match = _INDEX_NAME.fullmatch(cell_id)
    if match and int(match.group(1)) < len(cells):
        return int(match.group(1))
    names = ", ".join(cell_name(c, i) for i, c in enumerate(cells[:20]))
    raise NotebookError(f"{shown} has no cell {cell_id!r} (cells: {names or 'none'}"
                        f"{', ...' if len(cells) > 20 else ''}); read the notebook to see them")


def _output_text(output: Mapping[str, Any]) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        text = _text(output.get("text"))
    elif kind in ("execute_result", "display_data"):
        raw = output.get("data")
        data: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        text = _text(data.get("text/plain"))
        images = [k for k in data if isinstance(k, str) and k.startswith("image/")]
        if images:
            text += ("\n" if text else "") + f"[{', '.join(images)} output not shown]"
    elif kind == "error":
        text = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
        trace = output.get("traceback")
        if isinstance(trace, list):
            text += "\n" + re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(map(str, trace)))
    else:
        return ""
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[:MAX_OUTPUT_CHARS] + f"\n[output cut at {MAX_OUTPUT_CHARS:,} characters]"
    return text


def render_cells(notebook: Mapping[str, Any], cell_id: str | None = None,
                 shown: str = "the notebook") -> str:
    """The cells (or the one ``cell_id`` names) as Claude Code shows a notebook: each in
    ``<cell id="...">`` tags, a markdown cell marked with its type, a code cell's outputs
    after its source."""
    cells = notebook["cells"]
    indexes = range(len(cells)) if cell_id is None else [find_cell(notebook, cell_id, shown)]
    parts = []
    for index in indexes:
        cell = cells[index]
        name = cell_name(cell, index)
        kind = cell.get("cell_type")
        head = f"<cell_type>{kind}</cell_type>" if kind != "code" else ""
        body = _text(cell.get("source"))
        outputs = [t for t in (_output_text(o) for o in cell.get("outputs") or ()
                               if isinstance(o, Mapping)) if t]
        shown_outputs = "".join(f"\n<output>\n{t}\n</output>" for t in outputs)
        parts.append(f'<cell id="{name}">{head}{body}{shown_outputs}</cell id="{name}">')
    if not parts:
        return "(the notebook has no cells)"
    return "\n".join(parts)


def _source(notebook: Mapping[str, Any], text: str) -> Any:
    """``text`` as this notebook keeps sources: a string, or a list of lines (Jupyter's)."""
    kept_as_text = any(isinstance(c.get("source"), str) for c in notebook["cells"])
    return text if kept_as_text else text.splitlines(keepends=True)


def _has_ids(notebook: Mapping[str, Any]) -> bool:
    major, minor = notebook.get("nbformat"), notebook.get("nbformat_minor")
    return (isinstance(major, int) and isinstance(minor, int) and (major, minor) >= (4, 5)) \
        or any("id" in c for c in notebook["cells"])


def _new_cell(notebook: Mapping[str, Any], cell_type: str, source: str) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": cell_type, "metadata": {},
                            "source": _source(notebook, source)}
    if _has_ids(notebook):
        taken = {c.get("id") for c in notebook["cells"]}
        new_id = secrets.token_hex(4)
        while new_id in taken:
            new_id = secrets.token_hex(4)
        cell["id"] = new_id
    if cell_type == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _set_type(cell: dict[str, Any], cell_type: str) -> None:
    cell["cell_type"] = cell_type
    if cell_type == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    else:
        cell.pop("execution_count", None)
        cell.pop("outputs", None)


def edit_notebook(notebook: Mapping[str, Any], *, new_source: str, cell_id: str | None,
                  cell_type: str | None, edit_mode: str, shown: str
                  ) -> tuple[dict[str, Any], str]:
    """Claude Code's NotebookEdit on a copy of ``notebook``: ``replace`` the source of the
    cell ``cell_id`` names (and its type, when given), ``insert`` a cell of ``cell_type``
    after it (at the start without ``cell_id``), or ``delete`` it. Returns the new notebook
    and what was done."""
    changed = json.loads(json.dumps(notebook))  # a deep copy of plain JSON
    cells: list[dict[str, Any]] = changed["cells"]
    if edit_mode == "insert":
        if cell_type is None:
            raise NotebookError("cell_type (code or markdown) is required to insert a cell")
        at = 0 if cell_id is None else find_cell(changed, cell_id, shown) + 1
        cell = _new_cell(changed, cell_type, new_source)
        cells.insert(at, cell)
        return changed, f"Inserted cell {cell_name(cell, at)} in {shown}"
    if cell_id is None:
        raise NotebookError(f"cell_id is required to {edit_mode} a cell; read the notebook "
                            "to see the cells' ids")
    index = find_cell(changed, cell_id, shown)
    name = cell_name(cells[index], index)
    if edit_mode == "delete":
        del cells[index]
        return changed, f"Deleted cell {name} from {shown}"
    cell = cells[index]
    if cell_type is not None and cell_type != cell.get("cell_type"):
        _set_type(cell, cell_type)
    cell["source"] = _source(changed, new_source)
    if cell.get("cell_type") == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return changed, f"Updated cell {name} of {shown}"
