"""``@path`` imports of a ``CLAUDE.md``, read as Claude Code reads them.

An import is ``@`` at the start of a line or after whitespace, followed by a path: relative to
the importing file, absolute, or ``~/`` for the home folder. Imports inside code spans and
fenced code blocks are text, not imports. An imported file may import others, at most
:data:`IMPORT_DEPTH` hops from the file the loader found; a file already read (a cycle, or
one imported twice) is not read again. A token naming no file (``@someone``) is text.

Each imported file becomes a context file of its own, right after the file that imports it
(Claude Code lists them as memory files of their own too); the importing text keeps its
``@path``. What a repository ships may import only files inside its own folder (``root``): a
project's ``CLAUDE.md`` cannot pull ``~/.aws/credentials`` into the prompt that goes to the
model's provider. The user's own files may import anything.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["IMPORT_DEPTH", "find_imports", "resolve_import"]

#: how many hops of imports are followed (Claude Code's limit)
IMPORT_DEPTH = 5

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,}).*?(?:^[ \t]{0,3}\1[`~]*[ \t]*$|\Z)",
                    re.MULTILINE | re.DOTALL)
_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
_IMPORT = re.compile(r"(?<!\S)@((?:[^\s\\]|\\ )+)")
_TRAILING = ".,;:!?)]}'\""


def find_imports(text: str) -> list[str]:
    """The ``@path`` tokens of ``text`` outside code, in order (``\\ `` is a space)."""
    plain = _SPAN.sub(" ", _FENCE.sub("\n", text))
    return [match.group(1).replace("\\ ", " ") for match in _IMPORT.finditer(plain)]


def resolve_import(token: str, importer: Path, exists: Callable[[Path], bool] = os.path.isfile
                   ) -> Path | None:
    """The file ``token`` names, relative to the folder of ``importer`` (``~/``: the home
    folder), or None when it names none (trailing punctuation is tried without)."""
    candidates = [token]
    stripped = token.rstrip(_TRAILING)
    if stripped and stripped != token:
        candidates.append(stripped)
    for candidate in candidates:
        path = Path(os.path.expanduser(candidate)) if candidate.startswith("~/") \
            else importer.parent / candidate
        if exists(path):
            return Path(os.path.abspath(path))
    return None


def walk_imports(path: Path, text: str, read: Callable[[Path], str | None],
                 seen: set[str], depth: int = 1) -> Iterator[tuple[Path, str]]:
    """The files ``text`` (of ``path``) imports, depth first, each with its text; ``read``
    gives a file's text or None (it reports why). ``seen``: real paths already read."""
    if depth > IMPORT_DEPTH:
        return
    for token in find_imports(text):
        target = resolve_import(token, path)
        if target is None or os.path.realpath(target) in seen:
            continue
        body = read(target)
        if body is None:
            continue  # refused here (outside this file's folder) may still be read elsewhere
        seen.add(os.path.realpath(target))
        yield target, body
        yield from walk_imports(target, body, read, seen, depth + 1)
