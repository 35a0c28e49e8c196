"""Text from elsewhere (a model, a command's output, a plugin) made safe to show on a terminal.

A terminal obeys the control characters it is given: ``ESC ]52;c;...`` writes the clipboard,
``ESC ]0;...`` retitles the window, ``ESC [2J`` clears the screen, a carriage return or a
cursor movement overwrites what was shown, and bidi overrides reorder it. A model (which a
repository's files can steer) or a command must not drive the user's terminal, nor make one
thing look like another: a permission prompt must show the command that will run.

:func:`for_terminal` drops complete escape sequences (colours, cursor moves, window titles) and
carriage returns, and shows any other control character in caret form (``^[``, ``^G``) or as
``<U+202E>``; tabs and newlines stay. With ``exact=True`` (what a person approves or answers)
nothing is dropped: every control character is shown. Only on a terminal (:func:`shown`): a
pipe or a file gets the text exactly as it was.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["for_terminal", "shown"]

#: CSI (``ESC [`` ... final byte), OSC (``ESC ]`` ... BEL or ``ESC \``; also DCS, SOS, PM and
#: APC strings) and the two-character escapes; compiled on first use (not at start-up)
_SEQUENCE = (r"\x1b\[[0-?]*[ -/]*[@-~]"
             r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)"
             r"|\x1b[ -/]*[0-~]")
#: every character shown otherwise: C0 but tab and newline, DEL, C1 (0x9B acts as ``ESC [``
#: on some terminals), the bidi embeddings, overrides and isolates
_EXACT: dict[int, str] = {c: "^" + chr(c + 64) for c in range(0x20) if c not in (0x09, 0x0A)}
_EXACT[0x7F] = "^?"
_EXACT.update({c: f"<U+{c:04X}>" for c in (*range(0x80, 0xA0), *range(0x202A, 0x202F),
                                           *range(0x2066, 0x206A))})
#: the same, but a carriage return goes (``\r\n`` line ends are common in output)
_VISIBLE = {**_EXACT, 0x0D: ""}
#: what makes a text need care: a character of :data:`_EXACT`
_CARE = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"


def for_terminal(text: str, *, exact: bool = False) -> str:
    """``text`` with escape sequences and carriage returns dropped and other control
    characters made visible; ``exact``: every control character made visible, none dropped."""
    if re.search(_CARE, text) is None:  # re keeps the compiled pattern
        return text
    if exact:
        return text.translate(_EXACT)
    return re.sub(_SEQUENCE, "", text).translate(_VISIBLE)


def shown(text: str, stream: Any, *, exact: bool = False) -> str:
    """``text`` as it should be written to ``stream``: made safe when it is a terminal."""
    try:
        terminal = bool(stream.isatty())
    except (AttributeError, ValueError):
        terminal = False
    return for_terminal(text, exact=exact) if terminal else text
