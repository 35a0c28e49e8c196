"""Text from a model or a command made safe for a terminal (zpi_host.support.terminal_text)."""

from __future__ import annotations

import io
import os

import pytest

from zpi_host.support.terminal_text import for_terminal, shown


@pytest.mark.parametrize(("text", "expected"), [
    ("plain text, ünïcode, 👨‍👩‍👧 and\ttabs\nnewlines", None),  # unchanged
    ("a\x1b]52;c;ZXZpbA==\x07b", "ab"),  # clipboard write (OSC 52, BEL-terminated)
    ("a\x1b]0;title\x1b\\b", "ab"),  # window title (OSC, ST-terminated)
    ("\x1b[2J\x1b[Hclear", "clear"),  # clear screen, cursor home
    ("\x1b[31mred\x1b[0m", "red"),  # colours of a command's output
    ("shown\r\x1b[Khidden", "shownhidden"),  # a line overwritten
    ("windows\r\nline", "windows\nline"),
    ("bell\x07 nul\x00 del\x7f", "bell^G nul^@ del^?"),
    ("c1 \x9b2J", "c1 <U+009B>2J"),  # the one-byte CSI
    ("file\u202eexe.txt", "file<U+202E>exe.txt"),  # a bidi override
    ("trailing escape\x1b", "trailing escape^["),  # half a sequence (a split stream)
])
def test_escape_sequences_go_and_control_characters_show(text: str, expected: str | None) -> None:
    assert for_terminal(text) == (text if expected is None else expected)


def test_exact_shows_every_control_character_and_drops_none() -> None:
    command = "echo hi\r\x1b[2Krm -rf ~\u202e"
    assert for_terminal(command, exact=True) == "echo hi^M^[[2Krm -rf ~<U+202E>"


def test_only_a_terminal_gets_the_safe_form() -> None:
    text = "\x1b[31mred\x1b[0m"
    assert shown(text, io.StringIO()) == text  # a pipe or a file: exactly the text
    primary, secondary = os.openpty()
    try:
        with open(secondary, "w", closefd=False) as terminal:
            assert shown(text, terminal) == "red"
            assert shown(text, terminal, exact=True) == "^[[31mred^[[0m"
    finally:
        os.close(primary)
        os.close(secondary)
