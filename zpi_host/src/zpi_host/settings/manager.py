"""Settings: the user, project and local files merged, read safely and written surgically.

``<agent dir>/settings.json`` (user), ``<cwd>/.zpi/settings.json`` (project, shared with the
repository) and ``<cwd>/.zpi/settings.local.json`` (local: this checkout's own, not shared) are
merged in that order, the later winning, key by key as Claude Code merges its files
(:func:`merge_settings`): objects merge at every depth, lists add up. ``sources`` chooses which
of the files are read (the SDK's ``setting_sources``). A file that does not parse is reported
with its path, line and column and is never treated as empty or overwritten; the other files
still apply. Writes re-read the file under a lock, change only the keys the caller named and
replace the file atomically.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from ..errors import ZpiError

Scope = Literal["user", "project", "local"]
#: every scope, in merge order (a later one wins)
SCOPES: tuple[Scope, ...] = ("user", "project", "local")
SETTINGS_FILE = "settings.json"
LOCAL_SETTINGS_FILE = "settings.local.json"
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
    from .schema import Setting, find

    node = find(key)
    if isinstance(node, Setting):
        shown = "none" if node.default is None else json.dumps(node.default)
        return f", so {key} falls back to the other file's value or its default ({shown})"
    return f", so {key} falls back to its defaults" if node is not None else ""


def check_settings(path: Path | None, data: Mapping[str, Any]
                   ) -> tuple[dict[str, Any], list[SettingsProblem]]:
    """One file's object validated against the schema (:mod:`zpi_host.settings.schema`):
    values of the wrong type dropped, each reported with the file and key path. An empty
    object (a file that does not exist) has nothing to check: the schema is not loaded."""
    if not data:
        return {}, []
    from .schema import check_layer

    clean, findings = check_layer(data)
    return clean, [SettingsProblem(path, f.message, f.key, kept=not f.ignored)
                   for f in findings]


class _Delete:
    def __repr__(self) -> str:
        return "DELETE"


DELETE: Any = _Delete()
"""Value for :meth:`SettingsManager.update` that removes a key."""


def merge_settings(user: Mapping[str, Any], *over: Mapping[str, Any]) -> dict[str, Any]:
    """Each later layer over the earlier ones (project over user, local over project), key by
    key, the way Claude Code merges its settings files: objects are merged at every depth,
    lists are concatenated (the earlier items first, repeats dropped) so a project adds rules
    but cannot remove the user's, and any other value of the later layer replaces. A list that
    is one value (a command line, marked in the schema) is replaced whole."""

    def lists_add(path: str) -> bool:  # the schema is loaded only when two lists meet
        from .schema import lists_add

        return lists_add(path)

    def merge(base: Mapping[str, Any], layer: Mapping[str, Any], prefix: str) -> dict[str, Any]:
        merged = copy.deepcopy(dict(base))
        for key, value in layer.items():
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

    result = dict(user)
    for layer in over:
        result = merge(result, layer, "")
    return copy.deepcopy(result) if not over else result


def read_settings_file(path: Path, root: Path | None = None) -> dict[str, Any]:
    """The object in ``path`` ({} when the file does not exist); SettingsFileError otherwise.
    ``root``: the project a project file belongs to (it is read as a file the repository
    ships, :func:`zpi_host.fs.shipped.read_shipped`: regular, bounded, not linked out of it);
    the user's file, too, is read only when regular and bounded."""
    from ..fs.shipped import CONFIG_LIMIT, ShippedFileError, read_shipped

    try:
        text = read_shipped(path, limit=CONFIG_LIMIT, root=root,
                            what="settings file").decode("utf-8")
    except FileNotFoundError:
        return {}
    except ShippedFileError as exc:
        raise SettingsFileError(path, exc.problem) from None
    except UnicodeDecodeError as exc:
        raise SettingsFileError(path, f"not UTF-8 text (invalid byte at offset {exc.start}); "
                                      "save it as UTF-8") from None
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

    ``sources`` are the files read (default: all three); a file left out is neither read nor
    merged, though :meth:`update` and :meth:`edit` may still write it.
    ``SettingsManager.in_memory(...)`` keeps the layers in memory (embedding, tests); it has
    the same API and never touches the disk.
    """

    def __init__(self, agent_dir: Path | None, cwd: Path | None,
                 sources: Iterable[str] | None = None) -> None:
        self.user_path = Path(agent_dir) / SETTINGS_FILE if agent_dir is not None else None
        self.project_path = (Path(cwd) / PROJECT_DIR / SETTINGS_FILE
                             if cwd is not None else None)
        self.local_path = (Path(cwd) / PROJECT_DIR / LOCAL_SETTINGS_FILE
                           if cwd is not None else None)
        #: the project the project and local files belong to (they may not link out of it)
        self.project_root = Path(cwd) if cwd is not None else None
        self.sources: tuple[Scope, ...] = check_sources(sources)
        self._layers: dict[Scope, dict[str, Any]] = {scope: {} for scope in SCOPES}
        self._problems: dict[Scope, tuple[SettingsProblem, ...]] = {s: () for s in SCOPES}
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
        return {"user": self.user_path, "project": self.project_path,
                "local": self.local_path}[scope]

    def _root(self, scope: Scope) -> Path | None:
        return None if scope == "user" else self.project_root

    def reload(self) -> SettingsManager:
        """Read the files again; a broken one becomes a problem and is left out."""
        if self.in_memory_only:
            return self
        for scope in self.sources:
            path = self.path(scope)
            if path is None:
                continue
            try:
                data = read_settings_file(path, self._root(scope))
                self._layers[scope], found = check_settings(path, data)
            except SettingsFileError as exc:
                self._layers[scope] = {}
                found = [SettingsProblem(path, exc.problem)]
            self._problems[scope] = tuple(found)
        self._remerge()
        return self

    @property
    def problems(self) -> tuple[SettingsProblem, ...]:
        """What reading left out: broken files, and values of the wrong type (user first)."""
        return tuple(p for scope in SCOPES for p in self._problems[scope])

    def _remerge(self) -> None:
        self._merged = merge_settings({}, *(self._layers[s] for s in SCOPES if s in self.sources))

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
        self.edit(scope, lambda data: _apply(data, changes))

    def edit(self, scope: Scope, change: Callable[[dict[str, Any]], None]) -> None:
        """Change one file's object in place with ``change`` (which may raise to leave the file
        as it is), under the file's lock, on what the file holds now (another process may have
        written), then replace the file atomically. Refuses to write over a file that does not
        parse. A scope not in ``sources`` is written but stays out of the merge."""
        path = self.path(scope)
        if path is None:
            current = copy.deepcopy(self._layers[scope])
            change(current)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(path):
                current = read_settings_file(path, self._root(scope))
                change(current)
                _write_atomically(path, current)
        if scope not in self.sources:
            return
        self._layers[scope], found = check_settings(path, current)
        self._problems[scope] = tuple(found)
        self._remerge()


def restore_user_value(manager: SettingsManager, settings: dict[str, Any],
                       dotted: str) -> None:
    """Put the user file's value of the dotted key back into the merged ``settings`` (or drop
    the key when the user has none): what the project's files said of it is gone."""
    *parents, leaf = dotted.split(".")
    target: Any = settings
    for key in parents:
        target = target.get(key) if isinstance(target, dict) else None
    if not isinstance(target, dict):
        return
    user: Any = manager.layer("user")
    for key in parents:
        user = user.get(key) if isinstance(user, Mapping) else None
    if isinstance(user, Mapping) and leaf in user:
        target[leaf] = copy.deepcopy(user[leaf])
    else:
        target.pop(leaf, None)


def check_sources(sources: Iterable[str] | None) -> tuple[Scope, ...]:
    """The settings files to read, validated (None: all of them)."""
    if sources is None:
        return SCOPES
    if isinstance(sources, str):
        raise SettingsError(None, f"setting sources must be a list of {', '.join(SCOPES)}, "
                                  f"got the string {sources!r}")
    chosen = list(sources)
    unknown = [s for s in chosen if s not in SCOPES]
    if unknown:
        raise SettingsError(None, f"unknown setting source(s) {', '.join(map(repr, unknown))}; "
                                  f"use {', '.join(SCOPES)}")
    return tuple(s for s in SCOPES if s in chosen)


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
