"""The one place that parses Markdown frontmatter (skills, commands, agents, compat folders).

Only the syntax lives here: ``---`` delimited YAML at the top of a file, parsed with
python-frontmatter's YAML handler. What each field means is each kind's business
(``zpi_host.resources``). python-frontmatter and PyYAML are imported on first use, so importing
this module stays cheap for the CLI; the usual frontmatter (a few ``key: some text`` lines)
does not need them at all (:func:`simple_mapping`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ZpiError


class FrontmatterError(ZpiError):
    """A file's frontmatter cannot be used: unreadable, not UTF-8, bad YAML, not a mapping."""

    def __init__(self, path: Path | str, problem: str, line: int | None = None) -> None:
        where = f"{path}, line {line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")
        self.path = Path(path)
        self.problem = problem
        #: 1-based line in the file where the problem is, when the YAML parser knows it.
        self.line = line


#: python-frontmatter's ``YAMLHandler.FM_BOUNDARY``: a line of three or more dashes
BOUNDARY = re.compile(r"^-{3,}\s*$", re.MULTILINE)
#: ``key: value`` where YAML can only mean the text as written: the key a name, the value
#: printable ASCII starting with a letter (no YAML indicator), no comment, no nested mapping
_SIMPLE_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]{0,127}):[ ]+([A-Za-z][ -~]*?)[ ]*")
#: plain words that YAML 1.1 (PyYAML) reads as booleans or null, whatever their case here
_YAML_WORDS = frozenset({"yes", "no", "true", "false", "on", "off", "null"})


def simple_mapping(block: str) -> dict[str, str] | None:
    """The frontmatter ``block`` as YAML would read it, without a YAML parser, when every
    line is blank or ``key: text`` whose text YAML takes as a plain string (no quotes,
    lists, comments, booleans, numbers, dates or continuation lines); None otherwise (then
    the caller parses it with PyYAML). Saves importing PyYAML for the usual skill, command
    and agent file."""
    metadata: dict[str, str] = {}
    for line in block.split("\n"):
        match = _SIMPLE_LINE.fullmatch(line)
        if match is None:
            if line.strip(" "):
                return None
            continue
        key, value = match.groups()
        if (key.lower() in _YAML_WORDS or value.lower() in _YAML_WORDS or ": " in value
                or value.endswith(":") or " #" in value):
            return None
        metadata[key] = value
    return metadata


_TOP_LEVEL_LINE = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.-]*):[ \t]+(\S.*?)[ \t]*$")


def _quote_plain_values(block: str, load: Callable[[str], Any]) -> str | None:
    """Retry text for Claude Code's lenient frontmatter: ``description: Use it: when X`` or
    ``argument-hint: [a] [b]`` are not YAML, but Claude Code reads such a top-level value as
    plain text. Each top-level ``key: value`` line whose value does not parse on its own is
    quoted; ``None`` when no line needed it (the YAML error is then real)."""
    import yaml

    lines = block.split("\n")
    changed = False
    for index, line in enumerate(lines):
        match = _TOP_LEVEL_LINE.match(line)
        if match is None:
            continue
        key, value = match.groups()
        try:
            load(f"k: {value}")
        except (yaml.YAMLError, ValueError):
            lines[index] = f"{key}: {json.dumps(value, ensure_ascii=False)}"
            changed = True
    return "\n".join(lines) if changed else None


def _yaml_error(path: Path | str, exc: Exception, offset: int) -> FrontmatterError:
    """The parser's message and its line in the file (``offset`` lines precede the YAML)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = offset + mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["unknown"])[0]
    return FrontmatterError(path, f"invalid YAML in the frontmatter: {problem}", line)


def read_frontmatter(path: Path, root: Path | None = None) -> tuple[dict[str, Any], str]:
    """Read ``path`` and split it into (metadata, body); every failure is a FrontmatterError.
    The file is read as one a repository or plugin ships
    (:func:`zpi_host.fs.shipped.read_shipped`): regular, at most ``TEXT_LIMIT`` bytes and,
    with ``root``, not linked out of that folder."""
    from ..fs.shipped import TEXT_LIMIT, ShippedFileError, read_shipped

    try:
        data = read_shipped(path, limit=TEXT_LIMIT, root=root, what="Markdown file")
    except ShippedFileError as exc:
        raise FrontmatterError(path, exc.detail) from None
    except OSError as exc:
        raise FrontmatterError(path, f"cannot read the file: {exc.strerror or exc}") from exc
    return parse_frontmatter(data, path)


def parse_frontmatter(source: str | bytes, path: Path | str) -> tuple[dict[str, Any], str]:
    """Split Markdown text into (metadata, body).

    A file without a leading ``---`` line has no frontmatter: ``({}, text)``. Blank lines and a
    UTF-8 byte-order mark before the first ``---`` are allowed. The body is stripped of
    surrounding whitespace, as python-frontmatter does. ``path`` only names the file in errors.

    A top-level ``key: value`` line whose value is not valid YAML on its own is read as plain
    text, as Claude Code does (``argument-hint: [pr] [priority]``, ``description: a: b``).

    Raises FrontmatterError for text that is not UTF-8, a ``---`` block that is never closed,
    YAML that does not parse (with its line in the file) and YAML that is not a mapping with
    string keys.
    """
    if isinstance(source, bytes):
        try:
            text = source.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise FrontmatterError(
                path, f"not UTF-8 text (invalid byte at offset {exc.start}); save it as UTF-8"
            ) from exc
    else:
        text = source.removeprefix("\ufeff")

    start = len(text) - len(text.lstrip())
    skipped_lines = text.count("\n", 0, start)
    text = text[start:]
    opening = BOUNDARY.match(text)
    if opening is None:
        return {}, text.strip()
    closing = BOUNDARY.search(text, opening.end())
    if closing is None:
        raise FrontmatterError(
            path, "the frontmatter opened by '---' is never closed; add a '---' line after it",
            skipped_lines + 1,
        )
    block = text[opening.end():closing.start()]
    metadata = simple_mapping(block)
    if metadata is None:
        metadata = _load_yaml(block, path, skipped_lines + text.count("\n", 0, opening.end()))
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise FrontmatterError(
            path,
            f"the frontmatter must be a mapping of 'key: value' lines, "
            f"got {type(metadata).__name__}",
            skipped_lines + 1,
        )
    bad_keys = [key for key in metadata if not isinstance(key, str)]
    if bad_keys:
        raise FrontmatterError(
            path, f"frontmatter keys must be text, got {bad_keys[0]!r}; quote the key"
        )
    return metadata, text[closing.end():].strip()


def _load_yaml(block: str, path: Path | str, offset: int) -> Any:
    """``block`` parsed by python-frontmatter's YAML handler, leniently (see
    :func:`_quote_plain_values`); ``offset`` lines of the file precede it (for errors)."""
    import yaml
    from frontmatter.default_handlers import YAMLHandler

    handler = YAMLHandler()
    try:
        return handler.load(block)
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: e.g. a date like 2024-13-45
        lenient = _quote_plain_values(block, handler.load)
        try:
            if lenient is None:
                raise
            return handler.load(lenient)
        except (yaml.YAMLError, ValueError):
            raise _yaml_error(path, exc, offset) from exc
