"""Settings: the user file merged with the project file, read safely and written surgically.

``<agent dir>/settings.json`` (user) and ``<cwd>/.zpi/settings.json`` (project) are merged key
by key as Claude Code merges its files (:func:`merge_settings`): the project's values win,
objects merge at every depth, lists add up. A file that does not parse is reported with its
path, line and column and is never treated as empty or overwritten; the other file still
applies. Writes re-read the file under a lock, change only the keys the caller named and replace
the file atomically.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from .errors import ZpiError

Scope = Literal["user", "project"]
SETTINGS_FILE = "settings.json"
PROJECT_DIR = ".zpi"
DEFAULT_AGENT_DIR = "~/.zpi/agent"


def agent_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where user settings and sessions live: ``ZPI_AGENT_DIR`` if set (and not empty), else
    ``~/.zpi/agent``; made absolute."""
    env = os.environ if environ is None else environ
    raw = env.get("ZPI_AGENT_DIR") or DEFAULT_AGENT_DIR
    return Path(os.path.abspath(Path(raw).expanduser()))


class SettingsError(ZpiError):
    """A settings file that cannot be read, parsed or written; names the file and position."""

    def __init__(self, path: Path | None, message: str) -> None:
        super().__init__(f"{path}: {message}" if path is not None else message)
        self.path = path


class SettingsFileError(SettingsError):
    """A settings file that cannot be read or parsed. ``problem`` says only what is wrong (and
    where in the file): reading reports it once, with what happened to the file."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(path, f"{problem}; fix the file (it was not changed)")
        self.problem = problem


class SettingsProblem(NamedTuple):
    """Why one settings file, or one key of it (``key``), was left out of the merge; the
    session starts without it. ``path`` is None for in-memory settings."""

    path: Path | None
    message: str
    key: str | None = None
    #: only a warning: the key was kept (an unknown key in a section open to plugins)
    kept: bool = False

    def __str__(self) -> str:
        where = self.path if self.path is not None else "settings (in memory)"
        if self.key is None:
            return f"{where}: {self.message}; the file was ignored and left unchanged: fix it " \
                   "to apply its settings"
        if self.kept:
            return f"{where}: setting {self.key} {self.message}; kept for plugins that read it"
        kept = " (the file was left unchanged)" if self.path is not None else ""
        return f"{where}: setting {self.key} {self.message}; ignored{kept}{_fallback(self.key)}"


def _fallback(key: str) -> str:
    from .settings_schema import Setting, find

    node = find(key)
    if isinstance(node, Setting):
        shown = "none" if node.default is None else json.dumps(node.default)
        return f", so {key} falls back to the other file's value or its default ({shown})"
    return f", so {key} falls back to its defaults" if node is not None else ""


def check_settings(path: Path | None, data: Mapping[str, Any]
                   ) -> tuple[dict[str, Any], list[SettingsProblem]]:
    """One file's object validated against the schema (:mod:`zpi_host.settings_schema`):
    values of the wrong type dropped, each reported with the file and key path."""
    from .settings_schema import check_layer

    clean, findings = check_layer(data)
    return clean, [SettingsProblem(path, f.message, f.key, kept=not f.ignored)
                   for f in findings]


class _Delete:
    def __repr__(self) -> str:
        return "DELETE"


DELETE: Any = _Delete()
"""Value for :meth:`SettingsManager.update` that removes a key."""


def merge_settings(user: Mapping[str, Any], project: Mapping[str, Any]) -> dict[str, Any]:
    """Project over user, key by key, the way Claude Code merges its settings files: objects
    are merged at every depth, lists are concatenated (the user's items first, repeats
    dropped) so a project adds rules but cannot remove the user's, and any other value of the
    project replaces the user's. A list that is one value (a command line, marked in the
    schema) is replaced whole."""
    from .settings_schema import lists_add

    def merge(base: Mapping[str, Any], over: Mapping[str, Any], prefix: str) -> dict[str, Any]:
        merged = copy.deepcopy(dict(base))
        for key, value in over.items():
            path, below = f"{prefix}{key}", merged.get(key)
            if isinstance(below, dict) and isinstance(value, Mapping):
                merged[key] = merge(below, value, path + ".")
            elif isinstance(below, list) and isinstance(value, list) and lists_add(path):
                for item in value:
                    if item not in below:
                        below.append(copy.deepcopy(item))
            else:
                merged[key] = copy.deepcopy(value)
        return merged

    return merge(user, project, "")


def read_settings_file(path: Path) -> dict[str, Any]:
    """The object in ``path`` ({} when the file does not exist); SettingsFileError otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsFileError(path, f"cannot read settings: {exc}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsFileError(path, f"line {exc.lineno}, column {exc.colno}: invalid JSON "
                                      f"({exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # a number too long, nesting too deep
        raise SettingsFileError(path, f"JSON this host cannot read ({exc})") from None
    if not isinstance(data, dict):
        raise SettingsFileError(path, "settings must be a JSON object, got "
                                      f"{type(data).__name__}")
    return data


class SettingsManager:
    """The merged settings of one agent dir and project; ``settings`` is read-only.

    ``SettingsManager.in_memory(...)`` keeps both layers in memory (embedding, tests); it has
    the same API and never touches the disk.
    """

    def __init__(self, agent_dir: Path | None, cwd: Path | None) -> None:
        self.user_path = Path(agent_dir) / SETTINGS_FILE if agent_dir is not None else None
        self.project_path = (Path(cwd) / PROJECT_DIR / SETTINGS_FILE
                             if cwd is not None else None)
        self._layers: dict[Scope, dict[str, Any]] = {"user": {}, "project": {}}
        self._problems: dict[Scope, tuple[SettingsProblem, ...]] = {"user": (), "project": ()}
        self._merged: dict[str, Any] = {}
        self.reload()

    @classmethod
    def in_memory(
        cls, user: Mapping[str, Any] | None = None, project: Mapping[str, Any] | None = None
    ) -> SettingsManager:
        manager = cls(None, None)
        scope: Scope
        for scope, data in (("user", user), ("project", project)):
            layer, found = check_settings(None, copy.deepcopy(dict(data or {})))
            manager._layers[scope], manager._problems[scope] = layer, tuple(found)
        manager._remerge()
        return manager

    @property
    def in_memory_only(self) -> bool:
        return self.user_path is None and self.project_path is None

    def path(self, scope: Scope) -> Path | None:
        return self.user_path if scope == "user" else self.project_path

    def reload(self) -> SettingsManager:
        """Read both files again; a broken one becomes a problem and is left out."""
        if self.in_memory_only:
            return self
        scope: Scope
        for scope in ("user", "project"):
            path = self.path(scope)
            if path is None:
                continue
            try:
                self._layers[scope], found = check_settings(path, read_settings_file(path))
            except SettingsFileError as exc:
                self._layers[scope] = {}
                found = [SettingsProblem(path, exc.problem)]
            self._problems[scope] = tuple(found)
        self._remerge()
        return self

    @property
    def problems(self) -> tuple[SettingsProblem, ...]:
        """What reading left out: broken files, and values of the wrong type (user first)."""
        return self._problems["user"] + self._problems["project"]

    def _remerge(self) -> None:
        self._merged = merge_settings(self._layers["user"], self._layers["project"])

    @property
    def settings(self) -> Mapping[str, Any]:
        """The merged settings (read-only view; nested values must not be changed)."""
        return MappingProxyType(self._merged)

    def snapshot(self) -> dict[str, Any]:
        """A deep copy: what a session keeps, unaffected by later changes."""
        return copy.deepcopy(self._merged)

    def layer(self, scope: Scope) -> Mapping[str, Any]:
        return MappingProxyType(self._layers[scope])

    def get(self, key: str, default: Any = None) -> Any:
        """Value at a dotted path (``"requests.max_retries"``) of the merged settings."""
        node: Any = self._merged
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def update(self, scope: Scope, changes: Mapping[str, Any]) -> None:
        """Set (or with ``DELETE`` remove) dotted keys in one file, leaving every other key as
        the file has it now. Refuses to write over a file that does not parse."""
        path = self.path(scope)
        if path is None:
            current = copy.deepcopy(self._layers[scope])
            _apply(current, changes)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(path):
                current = read_settings_file(path)  # fresh: another process may have written
                _apply(current, changes)
                _write_atomically(path, current)
        self._layers[scope], found = check_settings(path, current)
        self._problems[scope] = tuple(found)
        self._remerge()


def _apply(data: dict[str, Any], changes: Mapping[str, Any]) -> None:
    for key, value in changes.items():
        parts = key.split(".")
        if not all(parts):
            raise SettingsError(None, f"invalid settings key {key!r}: empty path segment")
        node = data
        for i, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                if value is DELETE:
                    break
                child = node[part] = {}
            elif not isinstance(child, dict):
                raise SettingsError(None, f"cannot set {key!r}: "
                                          f"{'.'.join(parts[: i + 1])!r} is not an object")
            node = child
        else:
            if value is DELETE:
                node.pop(parts[-1], None)
            else:
                node[parts[-1]] = copy.deepcopy(value)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl

    lock_path = path.with_name(path.name + ".lock")
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_atomically(path: Path, data: Mapping[str, Any]) -> None:
    import tempfile

    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
