"""``query()``: one conversation as an async iterator of messages, claude-agent-sdk style.

A string prompt is one input; an async iterable of user-message dicts is streaming input,
each dict one input with its own ``ResultMessage``. The session is created when iteration
starts and released when it ends (consume the iterator to its end, or close it, e.g. with
``contextlib.aclosing``).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import Any

import attrs

from ..errors import ConnectionFailure
from .client import End, SDKClient
from .errors import ConnectionResultError, ResultError
from .messages import Message, ResultMessage
from .options import AgentOptions

__all__ = ["query", "result_error"]


async def query(prompt: str | AsyncIterable[Mapping[str, Any]],
                options: AgentOptions | None = None,
                transport: Any = None) -> AsyncIterator[Message]:
    """Run ``prompt`` with ``options`` and yield every message, ending with the (last)
    ``ResultMessage``. When that result is an error (``is_error``), :class:`ResultError`
    is raised after it, as claude-agent-sdk does (its CLI exits after an error result).
    ``transport`` is refused (there is no CLI to talk to)."""
    client = SDKClient(options, transport)
    await client.connect()
    last: Message | None = None
    try:
        client.start_stream(prompt)
        async for message in client.receive_stream:
            if isinstance(message, End):
                if message.error is not None:
                    raise message.error
                break
            last = message
            yield message
    finally:
        await client.disconnect()
    if isinstance(last, ResultMessage) and last.is_error:
        raise result_error(last, client.last_failure)


def result_error(result: ResultMessage, failure: BaseException | None = None) -> ResultError:
    """The error that ends a query whose last result failed; ``data`` is the result. When
    the run failed because a service could not be reached (``failure``, the run's typed
    error), it is a :class:`ConnectionResultError`, also a ``CLIConnectionError``."""
    data = attrs.asdict(result, recurse=True)
    why = "; ".join(result.errors or []) or result.result or result.subtype
    kind = ConnectionResultError if isinstance(failure, ConnectionFailure) else ResultError
    error = kind(f"the run ended with an error result ({result.subtype}): {why}", data=data)
    error.__cause__ = failure
    return error
