"""Reading a transcript: parse every line and validate the whole chain. Never writes.

Rules (format version 2): every line is one JSON object; the first is the header with
``version: 2``; every record has ``uuid``, ``parentUuid``, ``type``, ``sessionId`` and an ISO
8601 UTC ``timestamp``; ``sessionId`` is the header's; ``parentUuid`` is null for the header
only and otherwise names an earlier record; no uuid appears twice; every type-specific field
is present with the right type. A torn final line (no newline at the end and not parseable:
a crash mid-write) is dropped with a warning and reported in ``valid_size`` so the owner can
truncate it before its next write. Any other damage is a :class:`TranscriptError` naming the
file and line.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from json.scanner import make_scanner
from pathlib import Path
from typing import Any, BinaryIO

import attrs

from ..support.attrs_methods import FrozenFieldsEq
from .codec import decode_record
from .errors import TranscriptError, TranscriptVersionError
from .records import (
    FORMAT_VERSION,
    NAMESPACE,
    RECORD_TYPES,
    CompactionRecord,
    CustomRecord,
    HeaderRecord,
    Record,
    ToolResultRecord,
)
from .sharing import Sharing

_scan = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # C scanner, no wrapper
_ZERO = timedelta(0)


@attrs.frozen(repr=False, eq=False, slots=False)
class Transcript(FrozenFieldsEq):
    """A validated transcript: its records in file order and what reading noticed."""

    path: Path | None
    records: tuple[Record, ...]
    warnings: tuple[str, ...] = ()
    #: Bytes of the file that hold complete records (a torn tail starts here).
    valid_size: int = 0
    #: The last record is complete but has no newline yet: add one before appending.
    needs_newline: bool = False
    #: Every record's parent is the record before it (no branches).
    linear: bool = True
    #: Bytes read (more than ``valid_size`` when a torn final line was dropped).
    size: int = 0
    #: Every record's uuid (what the owner checks new parents and uuids against).
    uuids: set[str] = attrs.field(factory=set, eq=False, repr=False)

    @property
    def header(self) -> HeaderRecord:
        header = self.records[0]
        assert isinstance(header, HeaderRecord)
        return header

    @property
    def session_id(self) -> str:
        return self.header.session_id


def read_transcript(path: Path | str) -> Transcript:
    """Read and validate the transcript at ``path`` (OSError if it cannot be read)."""
    path = Path(path)
    with path.open("rb") as file:
        return _parse(file, path)


def parse_transcript(data: bytes, path: Path | None = None) -> Transcript:
    """Parse and validate a transcript's bytes; ``path`` is only used in messages."""
    return _parse(io.BytesIO(data), path)


def _parse(file: BinaryIO, path: Path | None) -> Transcript:
    """Read ``file`` one line at a time, building each record as its line is read: a
    resume's peak is the records and one line, not the file's bytes, text and lines besides
    them."""
    lines = _Lines(file, path)
    with _gc_paused():
        records, linear, uuids = _validate(lines, path)
    return Transcript(path, tuple(records), tuple(lines.warnings), lines.valid_size,
                      lines.needs_newline, linear, lines.size, uuids)


class _Lines:
    """The lines of a file as text (each with its newline), one at a time, and what reading
    them found: the size read, where the complete records end, a torn final line dropped."""

    def __init__(self, file: BinaryIO, path: Path | None) -> None:
        self.file, self.path = file, path
        self.warnings: list[str] = []
        self.size = self.valid_size = 0
        self.needs_newline = False

    def __iter__(self) -> Iterator[str]:
        path = self.path
        for number, raw in enumerate(self.file, 1):
            self.size += len(raw)
            if raw[-1:] != b"\n":  # the last line: torn (a crash mid-write) unless it parses
                try:
                    text = raw.decode("utf-8")
                    json.loads(text)
                except (ValueError, RecursionError):
                    self.warnings.append(
                        f"{path or '<memory>'}:{number}: dropped a torn final line "
                        f"({len(raw)} bytes, no newline, not valid JSON): the session was "
                        "interrupted while writing it")
                    return
                self.needs_newline = True
            else:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise TranscriptError(f"not valid UTF-8 ({exc.reason})", path=path,
                                          line=number) from None
            del raw
            self.valid_size = self.size
            yield text


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building records: they hold no cycles, and
    on a 100,000-record file collections triggered by the allocations cost a third of the
    time. Afterwards the new objects go straight to the oldest generation (``gc.freeze``
    and ``gc.unfreeze``): they live as long as the session, and as the youngest they would be
    walked by the next two collections (another third)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def _parse_line(line: str, path: Path | None, number: int) -> Any:
    """Slow path for a line the scanner refused: json.loads, for its error message."""
    try:
        return json.loads(line)
    except ValueError as exc:
        problem = "empty line" if not line.strip() else f"not valid JSON ({exc})"
        raise TranscriptError(problem, path=path, line=number) from None
    except RecursionError:
        raise TranscriptError("JSON nested too deeply", path=path, line=number) from None


def _validate(lines: Iterable[str], path: Path | None
              ) -> tuple[list[Record], bool, set[str]]:
    """The records of ``lines``, each built as its line is read (the records hold their own
    strings, so each line is let go as soon as its record exists)."""
    each = iter(lines)
    first = next(each, None)
    if first is None:
        raise TranscriptError("the file is empty: a transcript starts with a header record",
                              path=path, line=1)
    header = _header(first, path)
    del first
    session_id = header.session_id
    records: list[Record] = [header]
    seen = {header.uuid}
    previous = header.uuid
    linear = True
    types, scan, decode = RECORD_TYPES, _scan, decode_record
    fromiso, zero = datetime.fromisoformat, _ZERO
    share = Sharing(session_id, header.uuid).share
    for number, line in enumerate(each, 2):
        try:
            obj, stop = scan(line, 0)
            if stop != len(line) and line[stop:] != "\n":  # the newline, or none at the end
                raise ValueError
        except Exception:
            obj = _parse_line(line, path, number)
        del line
        if type(obj) is not dict:
            raise TranscriptError(f"expected a JSON object, got {_kind(obj)}", path=path,
                                  line=number)
        share(obj)
        kind = obj.get("type")
        cls = types.get(kind) if type(kind) is str else None
        if cls is None or cls is HeaderRecord:
            raise TranscriptError(_bad_type(kind), path=path, line=number)
        try:
            record = decode(obj, cls)
        except ValueError as exc:
            raise TranscriptError(f"invalid {kind!r} record: {exc}", path=path,
                                  line=number) from None
        uuid, parent = record.uuid, record.parent_uuid
        if uuid in seen:
            raise TranscriptError(f"duplicate uuid {uuid!r} (already used by an earlier record)",
                                  path=path, line=number)
        if parent != previous:
            linear = False
            if parent is None:
                raise TranscriptError("parentUuid is null, but only the header may have no "
                                      "parent", path=path, line=number)
            if parent not in seen:
                raise TranscriptError(f"parentUuid {parent!r} does not name an earlier record",
                                      path=path, line=number)
        if record.session_id != session_id:
            raise TranscriptError(f"sessionId {record.session_id!r} differs from the header's "
                                  f"{session_id!r}", path=path, line=number)
        try:
            utc = fromiso(record.timestamp).utcoffset() == zero
        except ValueError:
            utc = False
        if not utc:
            raise TranscriptError(f"timestamp {record.timestamp!r} is not an ISO 8601 UTC time",
                                  path=path, line=number)
        if cls in _CHECKS:
            problem = _CHECKS[cls](record, seen)
            if problem:
                raise TranscriptError(problem, path=path, line=number)
        seen.add(uuid)
        previous = uuid
        records.append(record)
    return records, linear, seen


def _header(line: str, path: Path | None) -> HeaderRecord:
    obj = _parse_line(line, path, 1)
    if type(obj) is not dict:
        raise TranscriptError(f"expected a JSON object, got {_kind(obj)}", path=path, line=1)
    if obj.get("type") != "header":
        kind = obj.get("type")
        what = f"a {kind!r} record" if isinstance(kind, str) else f"a record whose 'type' is " \
            f"{_kind(kind)}"
        raise TranscriptError(f"missing header: the first record is {what}, but a transcript "
                              "starts with a 'header' record", path=path, line=1)
    version = obj.get("version")
    if type(version) is int and version > FORMAT_VERSION:
        raise TranscriptVersionError(
            f"transcript format version {version} was written by a newer zpi-host; this one "
            f"reads version {FORMAT_VERSION}", path=path, line=1,
            hint="upgrade zpi-host to open this session; nothing was changed")
    if version != FORMAT_VERSION:
        raise TranscriptVersionError(
            f"unsupported transcript format version {version!r} (this zpi-host reads version "
            f"{FORMAT_VERSION})", path=path, line=1)
    try:
        header = decode_record(obj, HeaderRecord)
    except ValueError as exc:
        raise TranscriptError(f"invalid 'header' record: {exc}", path=path, line=1) from None
    assert isinstance(header, HeaderRecord)
    if header.parent_uuid is not None:
        raise TranscriptError("the header's parentUuid must be null", path=path, line=1)
    for name, value in (("timestamp", header.timestamp), ("createdAt", header.created_at)):
        if not _utc_timestamp(value):
            raise TranscriptError(f"{name} {value!r} is not an ISO 8601 UTC time", path=path,
                                  line=1)
    return header


def _utc_timestamp(value: str) -> bool:
    try:
        offset = datetime.fromisoformat(value).utcoffset()
    except ValueError:
        return False
    return offset == _ZERO


def _kind(obj: Any) -> str:
    return {list: "an array", dict: "an object", str: "a string", type(None): "null",
            bool: "a boolean"}.get(type(obj), "a number")


def _bad_type(kind: Any) -> str:
    if kind == "header":
        return "a second header: only the first record may be a header"
    known = ", ".join(t for t in RECORD_TYPES if t != "header")
    if kind is None:
        return f"the record has no 'type' (format version 2 has: {known})"
    if not isinstance(kind, str):
        return f"the field 'type' must be a string naming the record type ({known}), got " \
               f"{_kind(kind)}"
    return (f"unknown record type {kind!r} (format version {FORMAT_VERSION} has: {known}; "
            "a newer zpi-host may have written it)")


def _check_tool_result(record: Any, seen: set[str]) -> str | None:
    if record.call_id != record.message.call_id:
        return (f"callId {record.call_id!r} differs from its message's callId "
                f"{record.message.call_id!r}")
    return None


def _check_custom(record: Any, seen: set[str]) -> str | None:
    if not NAMESPACE.match(record.namespace):
        return (f"custom record namespace {record.namespace!r} must look like 'plugin.name' "
                "or 'name' (letters, digits, '_' and '-')")
    return None


def _check_compaction(record: Any, seen: set[str]) -> str | None:
    kept = record.first_kept_uuid
    if kept is not None and kept not in seen:
        return f"firstKeptUuid {kept!r} does not name an earlier record"
    if record.tokens_before < 0 or record.tokens_after < 0:
        return "tokensBefore and tokensAfter must not be negative"
    return None


_CHECKS = {ToolResultRecord: _check_tool_result, CustomRecord: _check_custom,
           CompactionRecord: _check_compaction}


def check_record(record: Record, seen: set[str]) -> str | None:
    """The type-specific rule a record breaks (None: fine); used by writers before appending."""
    check = _CHECKS.get(type(record))
    return check(record, seen) if check is not None else None
