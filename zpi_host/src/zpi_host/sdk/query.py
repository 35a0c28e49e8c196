"""``query()``: one conversation as an async iterator of messages, claude-agent-sdk style.

A string prompt is one input; an async iterable of user-message dicts is streaming input,
each dict one input with its own ``ResultMessage``. The session is created when iteration
starts and released when it ends: consumed to its end, closed (``contextlib.aclosing``), or
left early with ``break`` and closed by the event loop's async-generator finalizer.

The client's task group lives in an owner task of its own (:class:`QueryOwner`), not in the
generator's frame: a generator closed by the finalizer runs in another task, and a cancel
scope entered in one task cannot be left in another ("Attempted to exit cancel scope in a
different task"). The generator only reads the message stream; closing it asks the owner to
disconnect and waits, shielded, until it has.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Coroutine, Mapping
from typing import Any

import attrs

from ..errors import ConnectionFailure
from .client import SDKClient
from .errors import ConnectionResultError, ResultError
from .messages import Message, ResultMessage
from .options import AgentOptions
from .stream_parts import End

__all__ = ["QueryOwner", "query", "result_error"]


async def query(prompt: str | AsyncIterable[Mapping[str, Any]],
                options: AgentOptions | None = None,
                transport: Any = None) -> AsyncIterator[Message]:
    """Run ``prompt`` with ``options`` and yield every message, ending with the (last)
    ``ResultMessage``. When that result is an error (``is_error``), :class:`ResultError`
    is raised after it, as claude-agent-sdk does (its CLI exits after an error result).
    ``transport`` is refused (there is no CLI to talk to)."""
    owner = QueryOwner(SDKClient(options, transport), prompt)
    await owner.start()
    last: Message | None = None
    try:
        async for message in owner.client.receive_stream:
            if isinstance(message, End):
                if message.error is not None:
                    raise message.error
                break
            last = message
            yield message
    finally:
        await owner.stop()
    if isinstance(last, ResultMessage) and last.is_error:
        raise result_error(last, owner.client.last_failure)


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


class QueryOwner:
    """The task that connects the client, runs the prompt and disconnects, so that the client's
    task group is entered and left in one task whoever closes the generator."""

    def __init__(self, client: SDKClient, prompt: str | AsyncIterable[Mapping[str, Any]]
                 ) -> None:
        import anyio

        self.client = client
        self.prompt = prompt
        self.connected = anyio.Event()
        self.stopping = anyio.Event()
        self.done = anyio.Event()
        self.error: BaseException | None = None  # from connect (or starting the input)
        self.close_error: Exception | None = None  # from disconnect

    async def start(self) -> None:
        """Start the owner task and wait until the client is connected (its error raised)."""
        spawn_owner_task(self.run)
        try:
            await self.connected.wait()
        except BaseException:  # the caller was cancelled while connecting
            await self.stop()
            raise
        if self.error is not None:
            raise self.error

    async def run(self) -> None:
        """Connect, run, wait to be stopped, disconnect; never raises (the errors go to
        :attr:`error`). No shield around the disconnect: the client's task group was entered
        in this task's own scope and must be left in it; nothing else cancels this task."""
        try:
            try:
                await self.client.connect()
            except BaseException as exc:  # handed to start(), which raises it
                self.error = exc
                return
            try:
                self.client.start_stream(self.prompt)
            except Exception as exc:  # handed to start(), as a connect error is
                self.error = exc
                return
            finally:
                self.connected.set()
            await self.stopping.wait()
        finally:
            self.connected.set()
            try:
                await self.client.disconnect()
            except Exception as exc:
                self.close_error = exc
            finally:
                self.done.set()

    async def stop(self) -> None:
        """Ask the owner to disconnect and wait (shielded) until it has; an error of the
        disconnect is raised."""
        import anyio

        self.stopping.set()
        with anyio.CancelScope(shield=True):
            await self.done.wait()
        error, self.close_error = self.close_error, None
        if error is not None:
            raise error


def spawn_owner_task(run: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``run`` in a task of its own that no caller's cancel scope contains (asyncio: a
    loop task kept referenced until it ends; trio: a system task, as ``run`` never raises)."""
    import sniffio

    library = sniffio.current_async_library()
    if library == "trio":
        import trio

        trio.lowlevel.spawn_system_task(run)
        return
    import asyncio

    task = asyncio.get_running_loop().create_task(run())
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)


#: asyncio keeps only weak references to tasks
_RUNNING: set[Any] = set()
