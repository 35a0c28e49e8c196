"""Frozen plugin folders: a content-addressed copy that a session keeps using.

A session must go on with the plugin files it started with, even when someone edits the folder
meanwhile. So when a folder plugin is loaded, the folder is copied to
``<agent dir>/plugin-cache/claude/<name>/<hash>/`` and every path the session gets (skill
locations, ``${CLAUDE_PLUGIN_ROOT}``, hook commands) points at that copy. The hash covers every
file's relative path, executable bit and content, so an unchanged folder reuses its copy and an
edited one gets a new copy for new sessions while running sessions keep the old one.

Keeping it cheap: a per-plugin ``stat-index.json`` maps a signature of the files' (path, size,
mtime, inode) to the content hash, so an unchanged folder costs one ``stat`` per file, not a
read; a copy that exists is never written again. Symlinks that stay inside the folder are
followed (the copy holds what they point to, as Claude Code's plugin cache does). A symlink
that leads outside the plugin, to a file or a folder, is left out of the copy with a warning
naming it: the same rule as for component and hook command paths, which are refused when they
lead outside (plugins may only use their own files). ``.git`` is skipped.
A copy's folder time is refreshed whenever a session uses it; when a new copy is made, copies
of the same plugin unused for ``KEEP_UNUSED_DAYS`` are removed (a session running that long
would be the only loser, and it would see its plugin files vanish).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat as stat_module
from collections.abc import Callable
from pathlib import Path

from zpi_host.errors import ZpiError
from zpi_host.support.digests import sha256

from .records import record

SKIPPED_NAMES = frozenset({".git"})
_INDEX_ENTRIES = 32  # signatures remembered per plugin
#: Beyond these the folder is refused: ``--plugin-dir ~`` must not copy a home folder.
MAX_ENTRIES = 100_000
MAX_BYTES = 1 << 30
#: copies of a plugin not used by any session for this long are removed when a new one is made
KEEP_UNUSED_DAYS = 14


class FreezeError(ZpiError):
    """The folder could not be snapshotted (unreadable file, cache not writable)."""


@record
class FileEntry:
    rel: str
    path: Path
    is_dir: bool
    executable: bool = False


@record
class Snapshot:
    """A frozen copy: ``root`` is what ``${CLAUDE_PLUGIN_ROOT}`` names for the session."""

    key: str
    root: Path
    source: Path

    def sibling(self, suffix: str) -> Path:
        """A path next to the copy, named after it (``<hash>.layout``, ``<hash>.index.json``)."""
        return self.root.with_name(self.key + suffix)


def walk(root: Path, warnings: list[str] | None = None) -> list[FileEntry]:
    """Every folder and file below ``root``, sorted, symlinks inside ``root`` followed. A
    symlink that leads outside ``root``, a link back into a folder being walked (a loop), a
    broken link and special files are skipped (reported in ``warnings``)."""
    entries: list[FileEntry] = []
    notes = warnings if warnings is not None else []
    real_root = root.resolve()
    total = [0]

    def count(size: int) -> None:
        total[0] += size
        if len(entries) > MAX_ENTRIES or total[0] > MAX_BYTES:
            raise FreezeError(f"{root} is too large to snapshot (over {MAX_ENTRIES} files or "
                              f"{MAX_BYTES >> 20} MiB); is it really a plugin folder?")

    def visit(folder: Path, prefix: str, active: frozenset[tuple[int, int]]) -> None:
        try:
            with os.scandir(folder) as iterator:
                children = sorted(iterator, key=lambda e: e.name)
        except OSError as exc:
            raise FreezeError(f"{folder}: cannot list the folder: {exc.strerror or exc}") from exc
        for child in children:
            if child.name in SKIPPED_NAMES:
                continue
            rel = f"{prefix}{child.name}"
            path = Path(child.path)
            try:
                info = path.stat()  # follows symlinks
            except OSError:
                notes.append(f"{path}: skipped (a broken symlink or an unreadable entry)")
                continue
            if child.is_symlink():
                target = path.resolve()
                if target != real_root and not target.is_relative_to(real_root):
                    notes.append(f"{path}: skipped: a symlink that leads outside the plugin "
                                 f"folder (it resolves to {target}); plugins may only use "
                                 "their own files, so it is not in the session's copy")
                    continue
            if stat_module.S_ISDIR(info.st_mode):
                ident = (info.st_dev, info.st_ino)
                if ident in active:
                    notes.append(f"{path}: skipped (a symlink loop back to {path.resolve()})")
                    continue
                entries.append(FileEntry(rel, path, True))
                count(0)
                visit(path, rel + "/", active | {ident})
            elif stat_module.S_ISREG(info.st_mode):
                entries.append(FileEntry(rel, path, False, bool(info.st_mode & 0o111)))
                count(info.st_size)
            else:
                notes.append(f"{path}: skipped (not a regular file or folder)")

    top = root.stat()
    visit(root, "", frozenset({(top.st_dev, top.st_ino)}))
    return entries


def _signature(entries: list[FileEntry]) -> str:
    digest = sha256()
    for entry in entries:
        if entry.is_dir:
            digest.update(f"d\0{entry.rel}\n".encode(errors="surrogateescape"))
            continue
        info = entry.path.stat()
        digest.update(f"f\0{entry.rel}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ino}\0"
                      f"{entry.executable}\n".encode(errors="surrogateescape"))
    return digest.hexdigest()


def content_hash(entries: list[FileEntry]) -> str:
    """The snapshot key: relative paths, executable bits and contents of every file."""
    import hashlib  # OpenSSL's SHA-256 for contents; only when a folder is (re)hashed

    digest = sha256()
    for entry in entries:
        digest.update(f"{'d' if entry.is_dir else 'f'}\0{entry.rel}\0{entry.executable}\0"
                      .encode(errors="surrogateescape"))
        if not entry.is_dir:
            try:
                with entry.path.open("rb") as handle:
                    file_digest = hashlib.file_digest(handle, "sha256")
            except OSError as exc:
                raise FreezeError(f"{entry.path}: cannot read the file: "
                                  f"{exc.strerror or exc}") from exc
            digest.update(file_digest.digest())
        digest.update(b"\n")
    return digest.hexdigest()[:20]


#: In-process memo: (folder, signature) -> key; saves reading the index file again.
_MEMO: dict[tuple[str, str], str] = {}


def _read_index(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)} \
        if isinstance(data, dict) else {}


def _write_json(path: Path, data: object) -> None:
    """Atomic write (temporary file + replace), so readers never see half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    try:
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def freeze(source: Path, cache: Path, warnings: list[str]) -> Snapshot:
    """The snapshot of ``source`` under ``cache`` (``<agent dir>/plugin-cache/claude/<name>``),
    copied now if this content was never seen. Raises FreezeError."""
    source = source.resolve()
    entries = walk(source, warnings)
    signature = _signature(entries)
    memo_key = (str(source), signature)
    index_path = cache / "stat-index.json"
    key = _MEMO.get(memo_key)
    if key is None:
        index = _read_index(index_path)
        key = index.get(signature)
        if key is None or not (cache / key).is_dir():
            key = content_hash(entries)
            index = {k: v for k, v in index.items() if k != signature}
            index[signature] = key
            _store(cache, key, entries)
            prune(cache, keep=key)
            try:
                _write_json(index_path, dict(list(index.items())[-_INDEX_ENTRIES:]))
            except OSError as exc:
                warnings.append(f"{index_path}: cannot write the snapshot index "
                                f"({exc.strerror or exc}); the folder is hashed again next time")
        _MEMO[memo_key] = key
    root = cache / key
    if not root.is_dir():  # removed since it was memoised
        _store(cache, key, entries)
    with contextlib.suppress(OSError):
        os.utime(root)  # "last used": what pruning goes by
    return Snapshot(key, root, source)


def prune(cache: Path, keep: str, max_age_s: float = KEEP_UNUSED_DAYS * 86_400) -> list[str]:
    """Remove this plugin's copies (and their derived ``<hash>.*`` siblings) unused for
    ``max_age_s``, except ``keep``. Returns the removed hashes; failures are ignored (the
    cache is only a cache)."""
    import time

    now = time.time()
    removed: list[str] = []
    try:
        names = [entry.name for entry in os.scandir(cache)]
    except OSError:
        return removed
    for name in names:
        if name == keep or name.startswith(".") or "." in name or not (cache / name).is_dir():
            continue
        try:
            if now - (cache / name).stat().st_mtime < max_age_s:
                continue
        except OSError:
            continue
        for sibling in [n for n in names if n == name or n.startswith(name + ".")]:
            target = cache / sibling
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    target.unlink()
        removed.append(name)
    return removed


def _store(cache: Path, key: str, entries: list[FileEntry]) -> None:
    """Copy ``entries`` to ``cache/key`` unless it exists; built aside, then renamed, so a
    concurrent process sees either nothing or the whole copy."""
    target = cache / key
    if target.is_dir():
        return
    tmp = cache / f".{key}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        tmp.mkdir(parents=True)
        for entry in entries:
            destination = tmp / entry.rel
            if entry.is_dir:
                destination.mkdir(exist_ok=True)
            else:
                shutil.copy2(entry.path, destination)
        try:
            os.rename(tmp, target)
        except OSError:
            if not target.is_dir():
                raise
    except OSError as exc:
        raise FreezeError(f"cannot snapshot the plugin into {target}: {exc.strerror or exc}; "
                          "the host keeps a copy of each plugin for the sessions using it, "
                          "so the agent dir must be writable") from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def build_once(path: Path, build: Callable[[Path], None]) -> Path:
    """Make the folder ``path`` with ``build(tmp_folder)`` unless it exists (atomic rename);
    used for a snapshot's derived files, which depend only on its content."""
    if path.is_dir():
        return path
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        tmp.mkdir(parents=True)
        build(tmp)
        try:
            os.rename(tmp, path)
        except OSError:
            if not path.is_dir():
                raise
    except OSError as exc:
        raise FreezeError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return path


def write_json_atomic(path: Path, data: object) -> None:
    """Public form of the atomic JSON write (parse caches use it)."""
    _write_json(path, data)
