"""Bounded output: capture a command's output in fixed memory and keep tool results small.

A command may print gigabytes; the model only needs the start and the end, and a person may
need all of it. :class:`HeadTailBuffer` keeps a head and a tail in memory and, once the output
outgrows its limit, writes every byte to a spill file. :func:`protect_result` does the same for
any finished tool result whose text is too long to send to the model.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

import attrs

from ..fs.spill import SpillFolderError, create_spill_file
from ..support.attrs_methods import FrozenFieldsEq
from .base import DEFAULT_CAPTURE_LIMIT, DEFAULT_RESULT_LIMIT, Content, TextContent, ToolResult

# Room left for the omission marker so a protected preview stays within its limit.
_MARKER_RESERVE = 512


@attrs.frozen(repr=False, eq=False, slots=False)
class CapturedOutput(FrozenFieldsEq):
    """What a :class:`HeadTailBuffer` captured. ``text`` is the whole output when it fit,
    otherwise head + omission marker + tail. ``spill_path`` holds every byte when set."""

    text: str
    total_bytes: int
    total_lines: int
    spill_path: Path | None
    truncated: bool
    spill_error: str | None = None


def _trim_incomplete_end(data: bytes) -> bytes:
    """Drop a UTF-8 sequence cut off at the end, so a cut does not decode to garbage."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:  # continuation byte: keep looking for the lead byte
            continue
        if byte >= 0xF0:
            need = 4
        elif byte >= 0xE0:
            need = 3
        elif byte >= 0xC0:
            need = 2
        else:
            need = 1
        return data if need <= back else data[:-back]
    return data


def _trim_partial_start(data: bytes) -> bytes:
    """Drop continuation bytes at the start left over from a sequence cut in two."""
    skip = 0
    while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
        skip += 1
    return data[skip:]


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _why(exc: Exception) -> str:
    return str(exc) if isinstance(exc, SpillFolderError) else f"{type(exc).__name__}: {exc}"


def _marker(omitted: int, path: Path | None, error: str | None) -> str:
    if path is not None:
        where = f"full output in {path}"
    elif error is not None:
        where = f"full output could not be saved: {error}"
    else:
        where = "full output not saved"
    return f"\n[... {omitted} bytes omitted; {where} ...]\n"


def _preview(head: bytes, tail: bytes, total: int, path: Path | None, error: str | None) -> str:
    head = _trim_incomplete_end(head)
    tail = _trim_partial_start(tail)
    omitted = total - len(head) - len(tail)
    return _decode(head) + _marker(omitted, path, error) + _decode(tail)


def _open_spill(spill_dir: Path | None, prefix: str) -> tuple[Path, IO[bytes]]:
    """A new uniquely named file ``<prefix>-<id>.log`` in the private folder ``spill_dir``
    (made if missing; see :mod:`zpi_host.fs.spill` for the checks). Without a folder nothing is
    saved: output never goes to a shared temporary folder."""
    if spill_dir is None:
        raise SpillFolderError("no spill folder was given")
    return create_spill_file(spill_dir, prefix)


class HeadTailBuffer:
    """Output capture in bounded memory.

    Up to ``limit_bytes`` everything stays in memory. Past it, the first and last
    ``limit_bytes // 2`` bytes stay in memory and every byte, from the first, goes to a spill
    file in ``spill_dir`` (a session's private spill folder; ``None``: the output is not
    saved and the preview says so), so the file is the complete output. Feed bytes with
    :meth:`feed`, then call :meth:`finish` once (or :meth:`discard` to drop everything, spill
    file included).
    """

    def __init__(
        self,
        limit_bytes: int = DEFAULT_CAPTURE_LIMIT,
        spill_dir: Path | None = None,
        *,
        name_prefix: str = "zpi-bash",
    ) -> None:
        if limit_bytes < 2:
            raise ValueError(f"limit_bytes must be at least 2, got {limit_bytes}")
        self.limit_bytes = limit_bytes
        self.spill_dir = spill_dir
        self.name_prefix = name_prefix
        self._half = limit_bytes // 2
        self._buf = bytearray()  # all output while it fits; the head once spilled
        self._tail = bytearray()  # grows to twice the tail size, then is trimmed (amortised)
        self._spilled = False
        self._file: IO[bytes] | None = None
        self._path: Path | None = None
        self._error: str | None = None
        self._finished = False
        self.total_bytes = 0
        self._newlines = 0
        self._last_byte = b""

    @property
    def total_lines(self) -> int:
        """Lines seen so far; a last line without a newline counts."""
        return self._newlines + (1 if self._last_byte not in (b"", b"\n") else 0)

    @property
    def spill_path(self) -> Path | None:
        return self._path

    def feed(self, data: bytes) -> None:
        """Take the next chunk of output."""
        if self._finished:
            raise RuntimeError("HeadTailBuffer.feed() called after finish()")
        if not data:
            return
        self.total_bytes += len(data)
        self._newlines += data.count(b"\n")
        self._last_byte = data[-1:]
        if not self._spilled:
            if self.total_bytes <= self.limit_bytes:
                self._buf += data
                return
            self._start_spill(data)
            return
        self._write(data)
        self._tail += data
        if len(self._tail) > 2 * self._half:
            del self._tail[: len(self._tail) - self._half]

    def _start_spill(self, data: bytes) -> None:
        """Past the limit: the bytes held so far and ``data`` go to the file; memory keeps
        the head and the tail only."""
        everything = bytes(self._buf) + data
        self._spilled = True
        try:
            self._path, self._file = _open_spill(self.spill_dir, self.name_prefix)
        except (OSError, SpillFolderError) as exc:
            self._error = _why(exc)
        self._write(everything)
        self._buf = bytearray(everything[: self._half])
        self._tail = bytearray(everything[-self._half :])

    def _save_held(self) -> None:
        """Everything held in memory (the output fit the limit) to a spill file, as
        :meth:`_start_spill` does past the limit."""
        everything = bytes(self._buf)
        self._spilled = True
        try:
            self._path, self._file = _open_spill(self.spill_dir, self.name_prefix)
        except (OSError, SpillFolderError) as exc:
            self._error = _why(exc)
        self._write(everything)
        self._tail = bytearray(everything)

    def _write(self, data: bytes) -> None:
        if self._file is None:
            return
        try:
            self._file.write(data)
        except OSError as exc:
            # Disk full or similar: keep capturing in memory, say so in the result.
            self._error = f"{type(exc).__name__}: {exc}"
            self._close_file()
            self._remove_file()

    def recent(self, max_bytes: int = 4096) -> str:
        """The last ``max_bytes`` of output, decoded: for progress updates."""
        source = self._tail if self._spilled else self._buf
        chunk = bytes(source[-max_bytes:])
        if len(chunk) < self.total_bytes:
            chunk = _trim_partial_start(chunk)
        return _decode(chunk)

    def finish(self, preview_bytes: int | None = None) -> CapturedOutput:
        """Close the spill file and describe the output. ``preview_bytes`` (at most the
        limit): the text is kept within it instead, for a caller that shows several outputs
        side by side; output that fit in memory but not in it is saved to a spill file
        now, so the file still has every byte."""
        self._finished = True
        half = self._half
        if preview_bytes is not None and preview_bytes < self.limit_bytes:
            half = max(1, (preview_bytes - _MARKER_RESERVE) // 2)
            if not self._spilled and self.total_bytes > preview_bytes:
                self._save_held()
        self._close_file()
        if not self._spilled:
            return CapturedOutput(
                _decode(bytes(self._buf)), self.total_bytes, self.total_lines, None, False
            )
        text = _preview(
            bytes(self._buf[:half]), bytes(self._tail[-half:]), self.total_bytes,
            self._path, self._error,
        )
        return CapturedOutput(
            text, self.total_bytes, self.total_lines, self._path, True, self._error
        )

    def discard(self) -> None:
        """Drop the capture and delete the spill file (the output will not be reported)."""
        self._finished = True
        self._close_file()
        self._remove_file()

    def _close_file(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError as exc:
                self._error = self._error or f"{type(exc).__name__}: {exc}"

    def _remove_file(self) -> None:
        if self._path is not None:
            path, self._path = self._path, None
            path.unlink(missing_ok=True)


def protect_result(
    result: ToolResult,
    *,
    limit_bytes: int = DEFAULT_RESULT_LIMIT,
    spill_dir: Path | None = None,
    name_prefix: str = "zpi-output",
) -> ToolResult:
    """Keep a result's text within ``limit_bytes`` (UTF-8) so one tool cannot flood the
    model's context. Longer text becomes a head and tail preview; the whole text is written
    to a file named in the preview and in ``details["full_output_path"]``. If the details
    already name a full-output file (bash spilled), that file is referred to instead of
    writing another. Images are kept as they are."""
    text = result.text_content
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limit_bytes:
        return result
    details = dict(result.details or {})
    existing = details.get("full_output_path")
    path: Path | None = None
    error: str | None = None
    if isinstance(existing, str | Path) and Path(existing).is_file():
        path = Path(existing)
    else:
        try:
            path, file = _open_spill(spill_dir, name_prefix)
            with file:
                file.write(data)
        except (OSError, SpillFolderError) as exc:
            error = _why(exc)
            if path is not None:
                path.unlink(missing_ok=True)
                path = None
    half = max(1, (limit_bytes - _MARKER_RESERVE) // 2)
    preview = _preview(data[:half], data[-half:], len(data), path, error)
    details["full_output_path"] = str(path) if path is not None else None
    if error is not None:
        details["full_output_error"] = error
    content: list[Content] = []
    placed = False
    for block in result.content:
        if isinstance(block, TextContent):
            if not placed:
                content.append(TextContent(preview))
                placed = True
        else:
            content.append(block)
    return ToolResult(tuple(content), result.is_error, details)
