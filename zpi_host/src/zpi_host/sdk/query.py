"""``query()``: one conversation as an async iterator of messages, claude-agent-sdk style.

A string prompt is one input; an async iterable of user-message dicts is streaming input,
each dict one input with its own ``ResultMessage``. The session is created when iteration
starts and released when it ends (consume the iterator to its end, or close it, e.g. with
``contextlib.aclosing``).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import Any

from .client import SDKClient
from .messages import Message
from .options import AgentOptions
from .stream_parts import End

__all__ = ["query"]


async def query(prompt: str | AsyncIterable[Mapping[str, Any]],
                options: AgentOptions | None = None) -> AsyncIterator[Message]:
    """Run ``prompt`` with ``options`` and yield every message, ending with the (last)
    ``ResultMessage``."""
    client = SDKClient(options)
    await client.connect()
    try:
        client.start_stream(prompt)
        async for message in client.receive_stream:
            if isinstance(message, End):
                if message.error is not None:
                    raise message.error
                return
            yield message
    finally:
        await client.disconnect()
