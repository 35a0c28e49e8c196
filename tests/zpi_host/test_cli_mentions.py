"""``@path`` mentions of the chat: a text file's content goes with the prompt, an image is
attached, and nothing outside the working directory (or not a regular file) is read."""

from __future__ import annotations

import base64
from pathlib import Path

from zpi_host.cli.chat_input import MENTION_BYTES, expand_mentions, mentioned_paths

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
                       "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def test_mentions_bring_text_and_attach_images(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha")
    (tmp_path / "dot.png").write_bytes(PNG)
    text, notes, images = expand_mentions("see @a.txt, and @dot.png twice @a.txt", tmp_path)
    assert text == 'see @a.txt, and @dot.png twice @a.txt\n\n<file path="a.txt">\nalpha\n</file>'
    assert notes == [] and [i.mime_type for i in images] == ["image/png"]
    assert base64.b64decode(images[0].data) == PNG


def test_what_a_mention_does_not_read(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "secret.txt").write_text("outside")
    (work / "link.txt").symlink_to(tmp_path / "secret.txt")
    (work / "big.txt").write_text("x" * (MENTION_BYTES + 1))
    (work / "bin.dat").write_bytes(b"\0\1\2")
    prompt = "mail me@example.org about @../secret.txt @link.txt @big.txt @bin.dat @nothing"
    text, notes, images = expand_mentions(prompt, work)
    assert text == prompt and images == []  # the symlink leads outside: not a mention
    assert notes == [f"@big.txt: {MENTION_BYTES + 1} bytes (a mention reads at most "
                     f"{MENTION_BYTES}); not included", "@bin.dat: a binary file; not included"]
    assert mentioned_paths("(@x.py) e@mail @y.py.") == ["y.py"]
