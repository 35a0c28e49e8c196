"""Reading a ``query()`` to its end in tests, its last result included."""

from __future__ import annotations

from typing import Any


async def collect(stream: Any) -> list[Any]:
    """Every message of ``stream``. A ``query()`` whose last result is an error raises
    ``ResultError`` after it (as claude-agent-sdk does); that error is checked to describe
    the last message and the messages are returned, so a test can look at the result."""
    from zpi_host.sdk import ResultError, ResultMessage

    messages: list[Any] = []
    try:
        async for message in stream:
            messages.append(message)
    except ResultError as exc:
        last = messages[-1] if messages else None
        assert isinstance(last, ResultMessage) and last.is_error, exc
        assert (exc.subtype, exc.session_id) == (last.subtype, last.session_id)
    return messages
