"""What the chat's prompt adds to typing: Tab completion of slash commands and their
arguments (``/model`` models, ``/resume`` sessions) and of ``@path`` mentions, and the
expansion of those mentions into the files' contents when the prompt is sent.

A mention names a file of the working directory (``@src/app.py``); the prompt keeps the
mention and gets the file's text after it, in a ``<file path="...">`` block, so the model
reads it without a tool call, as Claude Code's ``@`` does. Only regular text files inside the
working directory are read (no-follow, at most :data:`MENTION_BYTES`); anything else stays a
plain word (an e-mail address, a decorator). A mentioned image (PNG, JPEG, GIF, WebP) is
attached to the prompt as an image instead, for a vision model.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from prompt_toolkit.completion import Completer, Completion

__all__ = ["MENTION_BYTES", "ChatCompleter", "expand_mentions", "mentioned_paths"]

#: the largest file a mention puts into the prompt
MENTION_BYTES = 256 * 1024
_MENTION = re.compile(r"(?<!\S)@([^\s@]+)")


def mentioned_paths(text: str) -> list[str]:
    return [m.group(1).rstrip(".,;:!?)") for m in _MENTION.finditer(text)]


def expand_mentions(text: str, cwd: Path) -> tuple[str, list[str], list[Any]]:
    """``text`` with a ``<file>`` block for each mentioned text file, notes for the person
    about mentions that were not included (too big, not text), and the images mentioned
    (PNG, JPEG, GIF, WebP: attached to the prompt as images)."""
    blocks: list[str] = []
    notes: list[str] = []
    images: list[Any] = []
    seen: set[str] = set()
    for given in mentioned_paths(text):
        if given in seen:
            continue
        seen.add(given)
        content = _read_mentioned(cwd, given)
        if content is None:
            continue
        if isinstance(content, _Skipped):
            notes.append(f"@{given}: {content.why}; not included")
            continue
        if not isinstance(content, str):  # an image
            images.append(content)
            continue
        end = "" if content.endswith("\n") else "\n"
        blocks.append(f'<file path="{given}">\n{content}{end}</file>')
    if not blocks:
        return text, notes, images
    return text + "\n\n" + "\n\n".join(blocks), notes, images


class _Skipped:
    def __init__(self, why: str) -> None:
        self.why = why


def _read_mentioned(cwd: Path, given: str) -> Any:
    """The text (or the ImageContent) of the file ``given`` names inside ``cwd``; None when
    it names none."""
    from ..errors import ZpiError
    from ..fs.nofollow import open_regular
    from ..tools.base import ImageContent
    from ..tools.read import MAX_IMAGE_BYTES, sniff_image

    root = cwd.resolve()
    target = (root / given).resolve()
    if target != root and root not in target.parents:
        return None  # outside the working directory: not a mention
    try:
        fd, st = open_regular(target)
    except (OSError, ZpiError):
        return None
    try:
        head = os.read(fd, 16)
        mime = sniff_image(head)
        most = MAX_IMAGE_BYTES if mime else MENTION_BYTES
        if st.st_size > most:
            return _Skipped(f"{st.st_size} bytes (a mention reads at most {most})")
        data = head + os.read(fd, most + 1)
        if mime:
            return ImageContent.from_bytes(data, mime)
    except OSError as exc:
        return _Skipped(f"cannot be read ({exc})")
    finally:
        os.close(fd)
    if b"\0" in data:
        return _Skipped("a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _Skipped("not UTF-8 text")


class ChatCompleter(Completer):
    """Tab completion at the chat's prompt. ``commands()`` gives the slash commands and
    their descriptions; ``arguments(name)`` the values of a command's argument."""

    def __init__(self, cwd: Callable[[], Path], commands: Callable[[], dict[str, str]],
                 arguments: Callable[[str], Iterable[str]]) -> None:
        self.cwd, self.commands, self.arguments = cwd, commands, arguments

    def get_completions(self, document: Any, complete_event: Any) -> Iterator[Completion]:
        before = document.text_before_cursor
        word = before.split(" ")[-1] if before and not before[-1].isspace() else ""
        if before.startswith("/") and " " not in before:
            for name, about in sorted(self.commands().items()):
                if name.startswith(before[1:]):
                    yield Completion(f"/{name}", -len(before), display_meta=about)
            return
        if before.startswith("/") and before.count(" ") == 1 and "\n" not in before:
            name = before[1:].split(" ")[0]
            for value in self.arguments(name):
                if value.startswith(word):
                    yield Completion(value, -len(word))
            return
        if word.startswith("@"):
            yield from self._paths(word)

    def _paths(self, word: str) -> Iterator[Completion]:
        typed = word[1:]
        folder, _, start = typed.rpartition("/")
        root = self.cwd()
        where = (root / folder) if folder else root
        try:
            entries = sorted(os.scandir(where), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if not entry.name.startswith(start) or (entry.name.startswith(".")
                                                    and not start.startswith(".")):
                continue
            suffix = "/" if entry.is_dir(follow_symlinks=False) else ""
            path = f"{folder}/{entry.name}" if folder else entry.name
            yield Completion(f"@{path}{suffix}", -len(word), display=entry.name + suffix)
