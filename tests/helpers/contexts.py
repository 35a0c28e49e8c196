"""What hooks added for the model, wherever the host placed it."""

from __future__ import annotations

import re

from zpi_host.providers.messages import ContextMessage, ToolResultMessage
from zpi_host.tools.base import TextContent

_REMINDER = re.compile(r"<system-reminder>\n(.*)\n</system-reminder>", re.S)


def contexts(session) -> list[str]:
    """Context texts in history order: context messages, and the ``<system-reminder>``
    blocks appended inside tool results (hook context about a call)."""
    out = []
    for message in session.messages:
        if isinstance(message, ContextMessage):
            out.append(message.text)
        elif isinstance(message, ToolResultMessage):
            out.extend(m.group(1) for c in message.content if isinstance(c, TextContent)
                       for m in [_REMINDER.fullmatch(c.text)] if m)
    return out
