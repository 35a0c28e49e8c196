"""Cleaning up after sessions that ended or crashed, when a session is assembled: spill
folders nobody needs any more, temporary files a killed host left in the folders a resumed
session's file tools touched, and the calls its killed sub-agents left open."""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..fs.spill import (
    SPILL_FOLDER_NAME,
    SPILL_KEEP_DAYS,
    open_spill_root,
    remove_spill_entry,
    spill_root,
)
from ..permissions import paths
from ..support.process_groups import process_alive
from ..transcript.paths import iter_session_files

__all__ = ["close_cut_off_subagents", "prune_spill", "sweep_touched_folders"]


def prune_spill(agent_dir: Path, *, keep: str | None = None,
                max_age_days: float = SPILL_KEEP_DAYS) -> list[str]:
    """Remove the spill folders nobody needs any more (rules in the module doc); ``keep`` is
    the folder name of the session being assembled. Returns the names removed; problems are
    ignored (the next session tries again)."""
    root_fd = open_spill_root(spill_root(agent_dir))
    if root_fd is None:
        return []
    try:
        return _prune(root_fd, Path(agent_dir), keep, max_age_days)
    finally:
        os.close(root_fd)


def _prune(root_fd: int, agent_dir: Path, keep: str | None, max_age_days: float) -> list[str]:
    saved: set[str] | None = None
    removed = []
    now = time.time()
    for name in os.listdir(root_fd):
        match = SPILL_FOLDER_NAME.fullmatch(name)
        if name == keep or match is None:
            continue
        try:
            info = os.stat(name, dir_fd=root_fd, follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode):
            gone = True  # a symlink or a file where a folder should be
        elif match["pid"] is not None:
            gone = not process_alive(int(match["pid"]))
        else:
            if saved is None:
                saved = {p.stem for p in iter_session_files(agent_dir)}
            gone = match["id"] not in saved or now - info.st_mtime > max_age_days * 86_400
        if gone:
            remove_spill_entry(name, root_fd)
            removed.append(name)
    return removed


def sweep_touched_folders(records: Iterable[Any], cwd: Path) -> list[Path]:
    """On resume: sweep the stale temporary files from the directory of every path a file
    tool call of the transcript named (``tool_use`` records of the tools in
    ``PATH_ARGUMENTS``: write and edit, and read, whose folders are swept too at the cost of
    one directory listing each), inside the working directory only: a record (perhaps from a
    shared store) is data and never chooses a folder elsewhere to clean. Returns the paths
    removed."""
    named: dict[str, None] = {}  # each path once: a session names the same files again
    for record in records:
        if getattr(record, "TYPE", None) != "tool_use":
            continue
        named.update(dict.fromkeys(paths.paths_of(getattr(record, "name", ""),
                                            getattr(record, "arguments", {}))))
    folders: dict[Path, None] = {}
    for raw in named:
        with contextlib.suppress(ValueError, OSError):
            folder = paths.absolute(raw, cwd).parent
            if folder == cwd or cwd in folder.parents:
                folders[folder] = None
    from ..fs.stale_temps import sweep_stale_temps  # start-up: only a resume sweeps

    return [path for folder in folders for path in sweep_stale_temps(folder)]


def close_cut_off_subagents(session_file: Path | None) -> list[str]:
    """On resume: close, as interrupted, the tool calls a killed host left open in the
    session's sub-agent transcripts (the files beside ``session_file``, found on disk, never
    named by a record), as the session's own are closed. Returns a warning per transcript
    changed or left as it was because it cannot be opened."""
    from ..transcript import SessionManager
    from ..transcript.errors import TranscriptError
    from ..transcript.paths import subagents_folder

    if session_file is None:
        return []
    warnings = []
    for path in sorted(subagents_folder(session_file).glob("agent-*.jsonl")):
        try:
            child = SessionManager.open(path)  # recovers: closes what was left open
        except (OSError, TranscriptError) as exc:
            warnings.append(f"sub-agent transcript {path} left as it is: {exc}")
            continue
        warnings += [str(w) for w in child.warnings]
        child.close()
    return warnings
