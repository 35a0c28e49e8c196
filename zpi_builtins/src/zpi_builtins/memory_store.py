"""The memory files on disk: one Markdown file per memory, per user and per project.

``<agent dir>/memory/<name>.md`` (scope ``user``) and ``<cwd>/.zpi/memory/<name>.md`` (scope
``project``), each with a frontmatter of ``name``, ``description`` and ``scope`` and the
memory as its body. One file per memory, so a user edits, removes or versions (the project's
memories are in the repository) one memory without touching the others, and two sessions
changing different memories never conflict.

Every change goes through :func:`apply_updates`: under the directory's lock
(``memory/.lock``, ``flock``; every scope taken in one order), each update is checked against
what the caller last read (a :class:`~zpi_host.fs.files.FileFingerprint`, or "absent"); one
that does not match is refused, never written, and the rest are committed in one atomic
:func:`zpi_host.fs.files.commit`. Nothing follows a symlink: names are plain (no separators, no
dots), the memory directory's base is resolved once and everything below it is opened with
:mod:`zpi_host.fs.nofollow`, so a symlinked ``memory/`` or memory file is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import attrs

from zpi_host.errors import ZpiError
from zpi_host.fs import nofollow
from zpi_host.resources.frontmatter import FrontmatterError, parse_frontmatter
from zpi_host.support.attrs_methods import FrozenFieldsEq

if TYPE_CHECKING:  # zpi_host.fs.files is imported when a memory is read or written
    from zpi_host.fs.files import FileChange, FileFingerprint

SCOPES: Final = ("user", "project")
ACTIONS: Final = ("add", "replace", "remove")
NAME_PATTERN: Final = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}\Z")
MAX_DESCRIPTION_CHARS: Final = 200
MAX_CONTENT_BYTES: Final = 16 * 1024
LOCK_NAME: Final = ".lock"
SUFFIX: Final = ".md"
#: what the caller read: a fingerprint, or None for "no such memory"
Known = Mapping[tuple[str, str], "FileFingerprint | None"]


class MemoryInputError(ZpiError):
    """A memory name, scope, description or content that cannot be used (says which and why)."""


class MemoryPathError(ZpiError):
    """The memory directory or a memory file is not a plain directory or file (a symlink, a
    special file): refused, never followed."""


def check_scope(scope: object) -> str:
    if scope not in SCOPES:
        raise MemoryInputError(f"scope must be 'user' or 'project', got {scope!r}")
    return str(scope)


def check_name(name: object) -> str:
    """A memory name: 1 to 64 lowercase letters, digits, ``-`` and ``_``, starting with a
    letter or digit, so it can never be a path (no ``/``, no ``.``, no ``..``)."""
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise MemoryInputError(
            f"memory name {name!r} is not allowed: use 1 to 64 lowercase letters, digits, '-' "
            "and '_', starting with a letter or digit (e.g. 'build-commands')")
    return name


def check_description(description: object) -> str:
    if not isinstance(description, str) or not description.strip():
        raise MemoryInputError("description must be a non-empty string (one line)")
    line = " ".join(description.split())
    if len(line) > MAX_DESCRIPTION_CHARS:
        raise MemoryInputError(f"description is {len(line)} characters; keep it to one line of "
                               f"at most {MAX_DESCRIPTION_CHARS}")
    return line


def check_content(content: object) -> str:
    if not isinstance(content, str) or not content.strip():
        raise MemoryInputError("content must be a non-empty string")
    size = len(content.strip().encode("utf-8", "surrogatepass"))
    if size > MAX_CONTENT_BYTES:
        raise MemoryInputError(f"content is {size} bytes; a memory holds at most "
                               f"{MAX_CONTENT_BYTES} bytes (split it, or keep only what matters)")
    return content.strip()


@attrs.frozen(repr=False, eq=False, slots=False)
class Memory(FrozenFieldsEq):
    """One memory as read from its file."""

    scope: str
    name: str
    description: str
    content: str
    path: Path
    fingerprint: FileFingerprint

    @property
    def key(self) -> tuple[str, str]:
        return (self.scope, self.name)


def render(scope: str, name: str, description: str, content: str) -> bytes:
    """The file of a memory. Values are JSON-quoted, which YAML reads as double-quoted
    scalars, so any description survives the round trip."""
    return (f"---\nname: {name}\ndescription: {json.dumps(description, ensure_ascii=False)}\n"
            f"scope: {scope}\n---\n\n{content.strip()}\n").encode()


def parse(data: bytes, path: Path, scope: str, name: str, fingerprint: FileFingerprint
          ) -> Memory:
    """A memory file (the file name is its name; one without frontmatter, written by hand, is
    described by its first line). Raises FrontmatterError."""
    meta, body = parse_frontmatter(data, path)
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        description = next((line.strip("# ").strip() for line in body.splitlines()
                            if line.strip()), "(no description)")
    return Memory(scope, name, " ".join(description.split())[:MAX_DESCRIPTION_CHARS], body,
                  path, fingerprint)


@attrs.frozen(repr=False, eq=False, slots=False)
class Skipped(FrozenFieldsEq):
    """A file in a memory directory that is not used, and why."""

    scope: str
    file: str
    reason: str


@attrs.frozen(repr=False, eq=False, slots=False)
class MemoryDir(FrozenFieldsEq):
    """The memory directory of one scope. ``path`` is resolved (no symlink above it); below
    it nothing is followed. ``refused`` says why it may not be used at all: a project's
    ``.zpi`` that leads out of the workspace (a repository can ship ``.zpi`` as a symlink)."""

    scope: str
    path: Path
    refused: str | None = None

    @classmethod
    def of(cls, scope: str, agent_dir: Path, cwd: Path) -> MemoryDir:
        if check_scope(scope) == "user":
            return cls(scope, nofollow.resolve(Path(os.path.abspath(agent_dir))) / "memory")
        workspace = nofollow.resolve(Path(os.path.abspath(cwd)))
        base = nofollow.resolve(workspace / ".zpi")
        if base.is_relative_to(workspace):
            return cls(scope, base / "memory")
        return cls(scope, base / "memory", (
            f"project memory directory {workspace / '.zpi' / 'memory'} leads to "
            f"{base / 'memory'}, outside the workspace {workspace} (.zpi is a symlink); it is "
            "not used. Make .zpi a plain folder to keep project memories"))

    def file(self, name: str) -> Path:
        return self.path / f"{check_name(name)}{SUFFIX}"

    def _open(self) -> int | None:
        """A descriptor of the directory, None when it does not exist yet."""
        if self.refused is not None:
            raise MemoryPathError(self.refused)
        try:
            return nofollow.open_directory(self.path)
        except FileNotFoundError:
            return None
        except (nofollow.PathChangedError, NotADirectoryError) as exc:
            raise MemoryPathError(f"{self.scope} memory directory {self.path} is not a plain "
                                  f"directory ({exc}); it is not used") from exc

    def load(self) -> tuple[list[Memory], list[Skipped]]:
        """Every memory of the directory, by name, and the files left out (a symlink, a
        special file, an unreadable or unparsable file)."""
        fd = self._open()
        if fd is None:
            return [], []
        memories: list[Memory] = []
        skipped: list[Skipped] = []
        try:
            for entry in sorted(os.listdir(fd)):
                stem = entry[:-len(SUFFIX)] if entry.endswith(SUFFIX) else None
                if stem is None or not NAME_PATTERN.match(stem):
                    continue
                try:
                    found = self._read_at(fd, stem)
                except (MemoryPathError, FrontmatterError, OSError) as exc:
                    skipped.append(Skipped(self.scope, entry, str(exc)))
                    continue
                if found is not None:
                    memories.append(found)
        finally:
            os.close(fd)
        return memories, skipped

    def read(self, name: str) -> Memory | None:
        """One memory; None when there is none. Raises MemoryPathError for a symlink or a
        special file, FrontmatterError for a file that does not parse."""
        check_name(name)
        fd = self._open()
        if fd is None:
            return None
        try:
            return self._read_at(fd, name)
        finally:
            os.close(fd)

    def _read_at(self, fd: int, name: str) -> Memory | None:
        path = self.file(name)
        entry = nofollow.lstat_at(fd, path.name)
        if entry is None:
            return None
        if not stat.S_ISREG(entry.st_mode):
            raise MemoryPathError(f"{path} is {nofollow.kind_of(entry.st_mode)}, not a regular "
                                  "file; memories are never read through links or special "
                                  "files (replace it with a plain file)")
        try:
            file_fd, _ = nofollow.open_regular_at(fd, path.name, path)
        except (nofollow.PathChangedError, nofollow.SpecialFileError) as exc:
            raise MemoryPathError(str(exc)) from exc
        from zpi_host.fs.files import read_fd_with_fingerprint

        try:
            data, fingerprint = read_fd_with_fingerprint(file_fd)
        finally:
            os.close(file_fd)
        return parse(data, path, self.scope, name, fingerprint)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the directory's lock (made with the directory when missing)."""
        import fcntl

        if self.refused is not None:
            raise MemoryPathError(self.refused)
        try:
            # the user's memories are private; a project's live in its repository
            os.makedirs(self.path, mode=0o700 if self.scope == "user" else 0o777,
                        exist_ok=True)
        except OSError as exc:
            raise MemoryPathError(f"cannot make the {self.scope} memory directory {self.path}: "
                                  f"{exc}") from exc
        fd = self._open()
        if fd is None:
            raise MemoryPathError(f"{self.path} vanished while being locked; try again")
        try:
            lock = os.open(LOCK_NAME, os.O_RDWR | os.O_CREAT | nofollow.FILE_FLAGS, 0o600,
                           dir_fd=fd)
        except OSError as exc:
            raise MemoryPathError(f"cannot open the lock {self.path / LOCK_NAME}: {exc}") from exc
        finally:
            os.close(fd)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
        finally:
            os.close(lock)  # releases the lock


@attrs.frozen(repr=False, eq=False, slots=False)
class Update(FrozenFieldsEq):
    """One change: ``add`` (a memory that must not exist), ``replace`` (its description,
    content or both) or ``remove``."""

    action: str
    scope: str
    name: str
    description: str | None = None
    content: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.scope, self.name)

    @classmethod
    def parse(cls, raw: object) -> Update:
        """An update given as a mapping (a tool call, an entry of a batch); raises
        MemoryInputError naming the field."""
        if not isinstance(raw, Mapping):
            raise MemoryInputError(f"an update must be an object, got {type(raw).__name__}")
        action = raw.get("action")
        if action not in ACTIONS:
            raise MemoryInputError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
        scope, name = check_scope(raw.get("scope")), check_name(raw.get("name"))
        description = raw.get("description")
        content = raw.get("content")
        if action == "add":
            return cls(action, scope, name, check_description(description),
                       check_content(content))
        if action == "remove":
            return cls(action, scope, name)
        if description is None and content is None:
            raise MemoryInputError("replace needs a new content, a new description or both")
        return cls(action, scope, name,
                   None if description is None else check_description(description),
                   None if content is None else check_content(content))


@attrs.frozen(repr=False, eq=False, slots=False)
class Outcome(FrozenFieldsEq):
    """What :func:`apply_updates` did: the updates written (with the new fingerprints) and
    the ones refused, each with the reason."""

    applied: tuple[tuple[Update, FileFingerprint | None], ...] = ()
    refused: tuple[tuple[Update, str], ...] = ()


def apply_updates(dirs: Mapping[str, MemoryDir], updates: Sequence[Update], known: Known
                  ) -> Outcome:
    """Apply ``updates`` under the locks of their directories. An update whose memory is
    not what ``known`` says the caller read (changed, added or removed by someone else
    since) is refused; the others are committed together, all or nothing. Raises
    FileCommitError when the commit itself fails (nothing is written then)."""
    from zpi_host.fs.files import FileCommitError, StaleFileError, commit

    scopes = [s for s in SCOPES if any(u.scope == s for u in updates)]
    with contextlib.ExitStack() as stack:
        for scope in scopes:  # always in SCOPES order: two processes never deadlock
            stack.enter_context(dirs[scope].locked())
        for _attempt in range(3):
            accepted, refused, changes = _plan(dirs, updates, known)
            try:
                report = commit(changes, resolved=True) if changes else None
            except StaleFileError:  # an editor that takes no lock wrote meanwhile: judge again
                continue
            applied = tuple((u, report.get(dirs[u.scope].file(u.name)).fingerprint)
                            for u in accepted) if report is not None else ()
            return Outcome(applied, tuple(refused))
    raise FileCommitError("the memory files kept changing while they were being written; "
                          "nothing was changed; try again")


def _plan(dirs: Mapping[str, MemoryDir], updates: Sequence[Update], known: Known
          ) -> tuple[list[Update], list[tuple[Update, str]], list[FileChange]]:
    accepted: list[Update] = []
    refused: list[tuple[Update, str]] = []
    changes: list[FileChange] = []
    for update in updates:
        memory_dir = dirs[update.scope]
        if any(u.key == update.key for u in accepted):
            refused.append((update, "an earlier update of this batch changes the same memory"))
            continue
        try:
            current = memory_dir.read(update.name)
        except (MemoryPathError, FrontmatterError, OSError) as exc:
            refused.append((update, str(exc)))
            continue
        reason = _conflict(update, current, known)
        if reason is not None:
            refused.append((update, reason))
            continue
        accepted.append(update)
        changes.append(_change(memory_dir, update, current))
    return accepted, refused, changes


def _conflict(update: Update, current: Memory | None, known: Known) -> str | None:
    """Why ``update`` must not be written over what is on disk now; None when it may."""
    where = f"{update.scope} memory {update.name!r}"
    if update.action == "add":
        if current is not None:
            return f"{where} already exists; view it, then replace it"
        return None
    if current is None:
        return f"{where} does not exist"
    if update.key not in known or known[update.key] is None:
        return f"{where} was added after it was last viewed; view it first"
    seen = known[update.key]
    assert seen is not None
    if not seen.same_content(current.fingerprint):
        return (f"{where} was changed on disk since it was last read "
                f"({seen.describe_change(current.fingerprint)}); the change on disk is kept")
    return None


def _change(memory_dir: MemoryDir, update: Update, current: Memory | None) -> FileChange:
    from zpi_host.fs.files import FileChange

    path = memory_dir.file(update.name)
    if update.action == "remove":
        assert current is not None
        return FileChange(path, None, current.fingerprint)
    if update.action == "add":
        assert update.description is not None and update.content is not None
        return FileChange(path, render(update.scope, update.name, update.description,
                                       update.content), None)
    assert current is not None
    description = update.description if update.description is not None else current.description
    content = update.content if update.content is not None else current.content
    return FileChange(path, render(update.scope, update.name, description, content),
                      current.fingerprint)
