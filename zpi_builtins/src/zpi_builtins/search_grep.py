"""The grep engines: ripgrep when ``rg`` is on PATH, else pure Python, with the same results.

Both produce :class:`FileHits` (a file's matched and context lines by number), which the tool
formats; ordering, separators and limits are the tool's, so they cannot differ between the
engines. The files searched follow :mod:`.search_files` (ripgrep's own rules, which ``rg`` is
told to apply exactly: no global or ``.git/info/exclude`` rules, ``.gitignore`` also outside a
repository). A file containing a NUL byte is binary and skipped. Lines are split on ``\\n``.
Without ``multiline`` a match lies within one line; with it, ``.`` also matches newlines and
each match marks every line it spans. A count is of matched lines (ripgrep's ``--count``
counts matches instead when a multiline pattern can match a newline, so multiline counts are
taken from its line output).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

import attrs

from zpi_host.support.attrs_methods import FieldsEq, FrozenFieldsEq

from .search_files import FILE_TYPES, FileFilter, walk_files

__all__ = ["FileHits", "GrepArgs", "GrepQuery", "RipgrepError", "grep_python", "grep_ripgrep",
           "ripgrep_path"]

#: output of one search kept before it stops (the tool says the results were cut)
MAX_COLLECT_BYTES = 16 * 1024 * 1024
#: how long ripgrep may run
RG_TIMEOUT_SECONDS = 300


@attrs.frozen(repr=False, eq=False, slots=False)
class GrepArgs(FrozenFieldsEq):
    """Validated ``grep`` arguments (search.prepare_grep)."""

    pattern: str
    path: str | None = None
    globs: tuple[str, ...] = ()
    file_type: str | None = None
    mode: str = "files_with_matches"
    ignore_case: bool = False
    numbers: bool = True
    before: int = 0
    after: int = 0
    head_limit: int = 0
    multiline: bool = False


class RipgrepError(RuntimeError):
    """ripgrep failed for a reason other than the pattern (the message is its stderr)."""


@attrs.frozen(repr=False, eq=False, slots=False)
class GrepQuery(FrozenFieldsEq):
    """One search: what to look for, where, which files, how much context."""

    pattern: str
    root: Path
    globs: tuple[str, ...] = ()
    file_type: str | None = None
    ignore_case: bool = False
    multiline: bool = False
    before: int = 0
    after: int = 0
    #: what is wanted: "lines" (matched and context lines), "counts" (matched lines per
    #: file) or "files" (which files match: a file's search stops at its first match)
    output: str = "lines"

    @property
    def count_only(self) -> bool:
        return self.output != "lines"

    def regex(self) -> re.Pattern[str]:
        flags = re.MULTILINE | (re.IGNORECASE if self.ignore_case else 0)
        if self.multiline:
            flags |= re.DOTALL
        return re.compile(self.pattern, flags)


@attrs.define(repr=False, eq=False, slots=False)
class FileHits(FieldsEq):
    """One file's results: line number -> (is a match, text), and how many lines matched."""

    rel: str
    lines: dict[int, tuple[bool, str]] = attrs.field(factory=dict)
    count: int = 0
    #: when the file was last modified (files_with_matches lists the newest first)
    mtime: float = 0.0


@attrs.define(repr=False, eq=False, slots=False)
class Collected(FieldsEq):
    """What a search found, and whether it stopped early because there was too much."""

    files: list[FileHits]
    cut: bool = False
    #: ignore files the walk refused (:func:`.search_files.walk_files`), each said once
    problems: list[str] = attrs.Factory(list)


def ripgrep_path() -> str | None:
    return shutil.which("rg")


# ------------------------------------------------------------------------------ pure Python


def _read(path: str | Path) -> tuple[bytes, float] | None:
    """A regular file's bytes and modification time (None when it cannot be read, or is
    not a regular file now: a device such as ``/dev/zero`` would never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None
            return f.read(), st.st_mtime
    except OSError:
        return None


def _line_starts(text: str) -> list[int]:
    starts = [0]
    find = text.find
    at = find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = find("\n", at + 1)
    return starts


def _split(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _matched_lines(regex: re.Pattern[str], text: str, query: GrepQuery
                   ) -> tuple[list[str], list[int]]:
    """The file's lines and the 0-based numbers of the matched lines (only the first when
    only the files are wanted)."""
    lines = _split(text)
    if not query.multiline:
        search = regex.search
        if query.output == "files":
            return lines, next(([i] for i, line in enumerate(lines) if search(line)), [])
        return lines, [i for i, line in enumerate(lines) if search(line)]
    from bisect import bisect_right

    starts = _line_starts(text)
    hit: set[int] = set()
    for m in regex.finditer(text):
        first = bisect_right(starts, m.start()) - 1
        if first >= len(lines):
            continue
        end = m.end() - 1 if m.end() > m.start() else m.end()
        last = min(max(first, bisect_right(starts, end) - 1), len(lines) - 1)
        hit.update(range(first, last + 1))
    return lines, sorted(hit)


def _file_hits(rel: str, data: bytes, regex: re.Pattern[str], query: GrepQuery
               ) -> FileHits | None:
    if b"\0" in data:
        return None
    text = data.decode("utf-8", errors="replace")
    if regex.search(text) is None:  # quick refusal: a line's match is also a match here
        return None
    lines, hits = _matched_lines(regex, text, query)
    if not hits:
        return None
    found = FileHits(rel, count=len(hits))
    if query.count_only:
        return found
    shown: dict[int, tuple[bool, str]] = {}
    for i in hits:
        for j in range(max(0, i - query.before), min(len(lines), i + query.after + 1)):
            if j not in shown:
                shown[j] = (False, lines[j])
    for i in hits:
        shown[i] = (True, lines[i])
    found.lines = {i + 1: shown[i] for i in sorted(shown)}
    return found


def _targets(query: GrepQuery, problems: list[str]) -> Iterator[tuple[str, Path]]:
    if query.root.is_dir():
        yield from walk_files(query.root, FileFilter.of(query.globs, query.file_type),
                              problems)
    else:
        yield query.root.name, query.root


def grep_python(query: GrepQuery) -> Collected:
    """The search in pure Python (the engine when ``rg`` is missing, and for a single file)."""
    regex = query.regex()
    out = Collected([])
    size = 0
    for rel, path in _targets(query, out.problems):
        read = _read(path)
        if read is None:
            continue
        hits = _file_hits(rel, read[0], regex, query)
        if hits is None:
            continue
        hits.mtime = read[1]
        out.files.append(hits)
        size += len(rel) + sum(len(t) + 12 for _, t in hits.lines.values())
        if size > MAX_COLLECT_BYTES:
            out.cut = True
            break
    return out


# ------------------------------------------------------------------------------ ripgrep


def _command(rg: str, query: GrepQuery) -> list[str]:
    cmd = [rg, "--no-config", "--no-messages", "--no-require-git", "--no-ignore-global",
           "--no-ignore-exclude", "--encoding", "none", "--color", "never", "--null",
           "--no-heading", "--with-filename", "--line-number"]
    if query.ignore_case:
        cmd.append("--ignore-case")
    if query.multiline:
        cmd += ["--multiline", "--multiline-dotall"]
    for glob in query.globs:
        cmd += ["--glob", glob]
    if query.file_type:
        # our own definition, so that both engines use the same list whatever rg's version
        cmd += [arg for g in FILE_TYPES[query.file_type]
                for arg in ("--type-add", f"zpisearch:{g}")] + ["--type", "zpisearch"]
    if query.output == "files":
        cmd.append("--files-with-matches")
    elif query.output == "counts" and not query.multiline:
        cmd.append("--count")
    elif query.output == "lines":
        if query.before:
            cmd += ["--before-context", str(query.before)]
        if query.after:
            cmd += ["--after-context", str(query.after)]
    # "./" (not nothing): without a path rg may read a non-terminal stdin instead
    return [*cmd, "--regexp", query.pattern, "--", "./"]


_LINE = re.compile(rb"(\d+)([:-])")


def _parse(chunks: Iterable[bytes], query: GrepQuery, out: Collected) -> None:
    """ripgrep's ``--null`` output (its lines, or for "files" its names) into ``out.files``
    (a file's lines come together)."""
    by_file: dict[bytes, FileHits] = {}  # by the name as ripgrep wrote it: decoded once
    if query.output == "files":
        out.files += [FileHits(os.fsdecode(name).removeprefix("./"), count=1)
                      for name in chunks if name]
        return
    for raw in chunks:
        if raw == b"--" or not raw:
            continue
        name, sep, rest = raw.partition(b"\0")
        if not sep:
            continue
        hits = by_file.get(name)
        if hits is None:
            hits = by_file[name] = FileHits(os.fsdecode(name).removeprefix("./"))
            out.files.append(hits)
        if query.output == "counts" and not query.multiline:
            hits.count = int(rest)
            continue
        m = _LINE.match(rest)
        if m is None:
            continue
        is_match = m.group(2) == b":"
        text = rest[m.end():].decode("utf-8", errors="replace")
        hits.count += is_match
        if not query.count_only:
            hits.lines[int(m.group(1))] = (is_match, text)


#: ripgrep looks for a NUL in the first read of a file (its buffer, 64 KiB) before searching
#: it; a NUL further on may stop it part-way, after some lines were reported
RG_FIRST_READ = 64 * 1024


def _keep(hits: FileHits, root: str) -> bool:
    """Records the file's modification time; False when ripgrep may have searched it only
    up to a late NUL byte (the Python engine skips such a file whole). Only files longer
    than ripgrep's first read are read again."""
    path = root + hits.rel
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    hits.mtime = st.st_mtime
    if st.st_size <= RG_FIRST_READ:
        return True
    read = _read(path)
    return read is not None and b"\0" not in read[0]


def grep_ripgrep(query: GrepQuery, rg: str) -> Collected | None:
    """The search with ripgrep in the folder ``query.root``; None when ripgrep refuses the
    pattern (its regex dialect lacks look-around and back-references: the caller then uses
    Python). Files ripgrep searched only in part because a NUL came late are dropped, as
    the Python engine skips them."""
    proc = subprocess.Popen(_command(rg, query), cwd=query.root, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = Collected([])
    try:
        data, err, out.cut = _bounded(proc)
    except subprocess.TimeoutExpired:
        raise RipgrepError(f"it ran longer than {RG_TIMEOUT_SECONDS} seconds; narrow the "
                           "search (path, glob, type)") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode == 2 and not data:
        message = err.decode("utf-8", errors="replace").strip()
        if "regex" in message.lower():
            return None
        raise RipgrepError(message or "ripgrep failed (exit status 2)")
    # names end with a NUL in "files" output (a name may hold a newline), lines with "\n"
    records = data.split(b"\0" if query.output == "files" else b"\n")
    if out.cut:
        records = records[:-1]  # the last one may be partial
    _parse(records, query, out)
    root = str(query.root).rstrip("/") + "/"
    out.files = [h for h in out.files if _keep(h, root)]
    return out


def _bounded(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes, bool]:
    """ripgrep's stdout and stderr, and whether it was stopped past MAX_COLLECT_BYTES."""
    import threading

    assert proc.stdout is not None and proc.stderr is not None
    err_parts: list[bytes] = []
    stderr = proc.stderr
    reader = threading.Thread(target=lambda: err_parts.append(stderr.read()), daemon=True)
    reader.start()
    parts: list[bytes] = []
    size = 0
    while True:
        chunk = os.read(proc.stdout.fileno(), 1 << 16)
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
        if size > MAX_COLLECT_BYTES:
            proc.kill()
            reader.join(RG_TIMEOUT_SECONDS)
            return b"".join(parts), b"", True
    proc.wait(RG_TIMEOUT_SECONDS)
    reader.join(RG_TIMEOUT_SECONDS)
    return b"".join(parts), b"".join(err_parts), False
