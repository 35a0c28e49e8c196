"""The model's Markdown rendered on a terminal, block by block as it streams.

Rendering is ``rich``'s (its ``Markdown`` on ``markdown-it-py``, code highlighted by
Pygments), chosen over a parser plus a hand-written renderer for fidelity (headings, lists,
tables, code, links) at an import cost paid only on a terminal: about 120 ms for
``rich.markdown`` on a loaded machine against 60 ms for ``markdown-it-py`` alone and 45 ms for
``mistune`` alone, neither of which draws anything (figures in the architecture notes).
``rich`` comes with the ``chat`` extra; without it :func:`available` is False and the text is
streamed as it comes.

Streaming never re-flows what is shown: text is held until a block is complete (a blank line
outside a code fence, the end of a fence, or a heading line), then that block is rendered and
written once. What is held when the message ends is rendered then. Text goes through
:func:`~zpi_host.support.terminal_text.for_terminal` before rich sees it, and links are shown
as ``text (url)`` rather than terminal hyperlinks, so the model cannot drive the terminal.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar, TextIO

from ..support.terminal_text import for_terminal

__all__ = ["MarkdownStream", "available"]

#: a fence opening or closing a code block (up to three spaces of indent)
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
#: an ATX heading: a block of its own once its line ends
_HEADING = re.compile(r"^ {0,3}#{1,6}(\s|$)")
#: the spaces rich pads a line with, and the colour escapes among them
_PADDING = re.compile(r"(?:\x1b\[[0-9;]*m| )+$")
_STYLE = re.compile(r"\x1b\[[0-9;]*m")
CODE_THEME = "monokai"


def available() -> bool:
    """Whether rich can be imported (the ``chat`` extra), without importing it."""
    from importlib.util import find_spec

    return find_spec("rich") is not None


class MarkdownStream:
    """Feed it the text as it streams (:meth:`feed`), :meth:`flush` at the end of a message;
    each complete block is written to ``out`` rendered. ``width`` gives the terminal width."""

    def __init__(self, out: TextIO, *, colour: bool, width: Callable[[], int]) -> None:
        self.out, self.colour, self.width = out, colour, width
        self.pending = ""  # the text of the block not complete yet
        self.blocks = 0  # blocks written for this message (a blank line goes between two)
        self._markdown: Any = None

    def feed(self, text: str) -> None:
        self.pending += text
        block = self._complete_block()
        while block is not None:
            self._write(block)
            block = self._complete_block()

    def flush(self) -> None:
        """Render what is held (the message ended) and start over for the next message."""
        if self.pending.strip():
            self._write(self.pending)
        self.pending, self.blocks = "", 0

    @property
    def holding(self) -> bool:
        return bool(self.pending.strip())

    def _complete_block(self) -> str | None:
        """Take the first complete block off :attr:`pending` (None: none complete yet)."""
        fenced = False
        at = 0
        lines = self.pending.split("\n")
        for index, line in enumerate(lines[:-1]):  # the last one has not ended yet
            end = at + len(line) + 1
            if _FENCE.match(line):
                fenced = not fenced
                if not fenced:  # a closed code block ends its block
                    block, self.pending = self.pending[:end], self.pending[end:]
                    return block
            elif not fenced and not line.strip() and self.pending[:at].strip():
                block, self.pending = self.pending[:at], self.pending[end:]
                return block
            elif not fenced and _HEADING.match(line) and not self.pending[:at].strip():
                block, self.pending = self.pending[:end], self.pending[end:]
                return block
            at = end
            if index == 0 and not line.strip():  # blank lines before a block: dropped
                self.pending, at = self.pending[end:], 0
                return self._complete_block()
        return None

    def _write(self, block: str) -> None:
        try:
            rendered = self.render(block)
        except Exception:  # a renderer's bug must not lose the model's words: shown plain
            rendered = for_terminal(block).rstrip("\n") + "\n"
        if self.blocks:
            self.out.write("\n")
        self.out.write(rendered)
        self.out.flush()
        self.blocks += 1

    def render(self, block: str) -> str:
        """One block as the terminal shows it: rich's lines, without their padding, each
        ending with a newline."""
        import io

        from rich.console import Console

        buffer = io.StringIO()
        console = Console(file=buffer, width=max(self.width(), 20), force_terminal=True,
                          color_system="standard" if self.colour else None, highlight=False,
                          legacy_windows=False, emoji=False, markup=False)
        console.print(self._make(for_terminal(block)))
        lines = [self._unpadded(line) for line in buffer.getvalue().split("\n")]
        while lines and not lines[-1]:
            lines.pop()
        while lines and not lines[0]:
            lines.pop(0)
        return "".join(line + "\n" for line in lines)

    def _unpadded(self, line: str) -> str:
        """``line`` without its padding; ends with a reset when it holds a style."""
        cut = _PADDING.sub("", line)
        if not _STYLE.sub("", cut).strip():
            return ""
        return cut + "\x1b[0m" if _STYLE.search(cut) else cut

    def _make(self, text: str) -> Any:
        if self._markdown is None:
            self._markdown = _markdown_class()
        return self._markdown(text, code_theme=CODE_THEME, hyperlinks=False)


def _markdown_class() -> Any:
    """rich's Markdown with every heading on the left, as in the rest of the display."""
    from rich.markdown import Heading, Markdown

    class LeftHeading(Heading):
        LEVEL_ALIGN: ClassVar[dict[str, Any]] = dict.fromkeys(
            ("h1", "h2", "h3", "h4", "h5", "h6"), "left")

    class LeftMarkdown(Markdown):
        elements: ClassVar[dict[str, Any]] = {**Markdown.elements, "heading_open": LeftHeading}

    return LeftMarkdown
