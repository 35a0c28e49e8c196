"""The agent directory set up and kept current: ``zpi-host init-agent-dir``, and the same
at a command's first run.

What ships: ``settings.json`` with the service presets (endpoints), the default agent
definitions (``agents/default.md``, ``agents/explore.md``) and whatever a distribution adds
through the entry point group ``zpi.agent_dir_files`` (``zpi-builtins``: the hand-off skill,
``skills/handoff/SKILL.md``). Each is written only when absent. ``<agent dir>/.shipped.json``
records, per file, the host version and the SHA-256 of the text written, so a change by the
user is told by content, never by a timestamp. When the host's version changes, a shipped
file whose content still has the recorded digest and no ``metadata.custom`` is replaced by the
new text; a file changed by the user, one the record does not know (it was there first), a
symlink or anything but a regular file is never touched. Writes go through
:func:`zpi_host.fs.files.commit` (temporary file, fsync, atomic rename, no symlink followed,
the stale-read check against the content just judged).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import ZpiError

__all__ = ["ENTRY_POINT_GROUP", "MANIFEST", "BootstrapError", "Outcome", "ensure_agent_dir",
           "init_agent_dir", "is_customised", "shipped_files"]

#: the record of what was shipped, beside the files
MANIFEST = ".shipped.json"
MANIFEST_FORMAT = 1
MANIFEST_LIMIT = 1024 * 1024
#: entry points naming a function that returns ``{relative path: text}`` to ship
ENTRY_POINT_GROUP = "zpi.agent_dir_files"
_KERNEL_FILES = ("agents/default.md", "agents/explore.md")


class BootstrapError(ZpiError):
    """The agent directory could not be set up; says which file and what to do."""


class Outcome(NamedTuple):
    """What happened to one shipped file: ``action`` is ``written`` (it was absent),
    ``updated`` (unchanged since shipped, new version), ``current``, ``kept`` (left alone,
    ``reason`` says why) or ``failed`` (it could not be checked or written: a symlinked
    folder on its way, a permission; ``reason`` says what)."""

    path: str
    action: str
    reason: str = ""


def shipped_files() -> dict[str, str]:
    """Relative path -> text, the kernel's files first, then each distribution's (a broken
    entry point raises BootstrapError naming it: shipping half a directory is worse)."""
    from importlib.resources import files

    here = files(__package__).joinpath("agent_dir")
    shipped = {"settings.json": default_settings_text()}
    for name in _KERNEL_FILES:
        shipped[name] = here.joinpath(name).read_text(encoding="utf-8")
    from importlib.metadata import entry_points

    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            given = ep.load()()
            items = dict(given.items())
        except Exception as exc:
            raise BootstrapError(f"the {ENTRY_POINT_GROUP} entry point {ep.name!r} "
                                 f"({ep.value}) failed: {type(exc).__name__}: {exc}; "
                                 f"reinstall or update its distribution") from exc
        for path, text in items.items():
            _check_relative(str(path), ep.name)
            shipped.setdefault(str(path), str(text))
    return shipped


def default_settings_text() -> str:
    """The default ``settings.json``: the built-in service presets, spelled out to edit."""
    from ..providers.builtin_catalog import builtin_services

    services = {name: dict(entry) for name, entry in builtin_services().items()}
    return json.dumps({"services": services}, indent=2) + "\n"


def is_customised(path: str, text: str) -> bool:
    """True when the file says ``metadata.custom`` (true or any value but false/null):
    a JSON file's top-level ``metadata`` object, a Markdown file's frontmatter."""
    metadata: Any = None
    if path.endswith(".json"):
        try:
            metadata = json.loads(text).get("metadata")
        except (ValueError, AttributeError):
            return False
    elif path.endswith(".md"):
        from ..resources.frontmatter import FrontmatterError, parse_frontmatter

        try:
            metadata = parse_frontmatter(text, path)[0].get("metadata")
        except FrontmatterError:
            return False
    return isinstance(metadata, Mapping) and metadata.get("custom") not in (None, False)


def init_agent_dir(directory: Path, *, version: str | None = None,
                   files: Mapping[str, str] | None = None) -> list[Outcome]:
    """Write what is absent, update what is ours and unchanged when ``version`` (the host's)
    differs from the recorded one, record it; idempotent. Returns one Outcome per file."""
    from ..fs import nofollow
    from ..support.distinfo import kernel_version

    version = version or kernel_version() or "unknown"
    files = shipped_files() if files is None else files
    directory.mkdir(parents=True, exist_ok=True)
    root = nofollow.resolve(directory)
    record = _read_manifest(root)
    entries: dict[str, Any] = dict(record.get("files", {}))
    outcomes = []
    for path, text in files.items():
        try:
            outcome, entry = _settle(root, path, text, version, entries.get(path))
        except (OSError, ZpiError) as exc:  # this file only: the others still go ahead
            outcome, entry = Outcome(path, "failed", str(exc)), None
        outcomes.append(outcome)
        if entry is not None:
            entries[path] = entry
    if record.get("version") != version or entries != record.get("files"):
        _write(root / MANIFEST, json.dumps({"format": MANIFEST_FORMAT, "version": version,
                                            "files": entries}, indent=2, sort_keys=True) + "\n",
               _fingerprint_or_none(root / MANIFEST))
    return outcomes


def ensure_agent_dir(directory: Path, warn: Callable[[str], None]) -> list[Outcome]:
    """A command's first run (no record yet) or its first run after an upgrade (the record
    names another version): :func:`init_agent_dir`. Otherwise one small read. A failure is
    a warning through ``warn``: a command never fails because of it."""
    from ..support.distinfo import kernel_version

    version = kernel_version() or "unknown"
    try:
        from ..fs import nofollow

        root = nofollow.resolve(directory)
        recorded = _read_manifest(root).get("version") if root.is_dir() else None
        if recorded == version:
            return []
        outcomes = init_agent_dir(directory, version=version)
    except (OSError, ZpiError) as exc:
        warn(f"the agent directory {directory} was not set up: {exc} (run `zpi-host "
             f"init-agent-dir` to see the details)")
        return []
    for outcome in outcomes:
        if outcome.action == "failed":
            warn(f"{directory / outcome.path} was not set up: {outcome.reason}")
    return outcomes


# --------------------------------------------------------------------------------- one file

def _settle(root: Path, path: str, text: str, version: str, entry: Mapping[str, Any] | None,
            ) -> tuple[Outcome, dict[str, Any] | None]:
    target = root / path
    digest = _digest(text.encode("utf-8"))
    shipped = {"version": version, "sha256": digest}
    current = _read_current(target)
    if current is None:
        _write(target, text, None)
        return Outcome(path, "written"), shipped
    if isinstance(current, str):
        return Outcome(path, "kept", current), None
    data, fingerprint = current
    if entry is None:
        return Outcome(path, "kept", "it was there before the host shipped it"), None
    if is_customised(path, data.decode("utf-8", "replace")):
        return Outcome(path, "kept", "it says metadata.custom"), None
    if fingerprint.sha256 != entry.get("sha256"):
        return Outcome(path, "kept", "changed since it was shipped"), None
    if fingerprint.sha256 == digest:
        return Outcome(path, "current"), shipped
    if entry.get("version") == version:
        return Outcome(path, "current", "same host version"), None
    _write(target, text, fingerprint)
    return Outcome(path, "updated", f"from {entry.get('version')} to {version}"), shipped


def _read_current(target: Path) -> tuple[bytes, Any] | str | None:
    """None when absent; (bytes, fingerprint) of a regular file; else why it is left alone."""
    from ..fs import nofollow
    from ..fs.files import read_fd_with_fingerprint

    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return None
    if not _is_regular(st.st_mode):
        return f"it is {nofollow.kind_of(st.st_mode)}, not a regular file"
    fd, _ = nofollow.open_regular(target)
    try:
        return read_fd_with_fingerprint(fd)
    finally:
        os.close(fd)


def _fingerprint_or_none(target: Path) -> Any:
    current = _read_current(target)
    if isinstance(current, str):
        raise BootstrapError(f"{target}: {current}; remove it so the host can record what it "
                             f"ships")
    return None if current is None else current[1]


def _write(target: Path, text: str, expected: Any) -> None:
    from ..fs.files import FileChange, FileCommitError, commit

    try:
        commit([FileChange(target, text.encode("utf-8"), expected)], resolved=True)
    except FileCommitError as exc:
        raise BootstrapError(f"{target} could not be written: {exc}") from exc


def _read_manifest(root: Path) -> dict[str, Any]:
    """The record (empty when absent, unreadable or not a regular file); read without the
    file-commit machinery, as every run of ``run`` and ``chat`` reads it."""
    from ..fs import nofollow

    try:
        fd, _ = nofollow.open_regular(root / MANIFEST)
    except (OSError, ZpiError):
        return {}
    try:
        with os.fdopen(fd, "rb") as handle:
            text = handle.read(MANIFEST_LIMIT)
    except OSError:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}  # rewritten: it only decides what may be updated, and a lost one updates less
    return data if isinstance(data, dict) and isinstance(data.get("files", {}), dict) else {}


def _check_relative(path: str, source: str) -> None:
    parts = Path(path).parts
    if not parts or Path(path).is_absolute() or ".." in parts or path == MANIFEST:
        raise BootstrapError(f"the {ENTRY_POINT_GROUP} entry point {source!r} ships "
                             f"{path!r}, which is not a path inside the agent directory")


def _is_regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)


def _digest(data: bytes) -> str:
    from ..support.digests import sha256

    return str(sha256(data).hexdigest())


def describe(outcomes: Iterable[Outcome]) -> list[str]:
    """One line per file, for ``zpi-host init-agent-dir``."""
    return [f"{o.action:8} {o.path}" + (f" ({o.reason})" if o.reason else "")
            for o in outcomes]
