"""The connections of one session to its MCP servers (imports ``mcp``: only when a server is
configured).

Each server lives in its own asyncio task, which opens the transport and the client session
and holds them until :meth:`McpConnection.aclose` (the ``mcp`` SDK's anyio scopes must be left
by the task that entered them). Servers start concurrently, each within the start-up timeout;
one that fails, times out or dies later has status ``failed`` and an error, and its calls fail
with that error. The client session reads the transport through :class:`WatchedStream`, so a
server that dies while idle (its stdout or stream ends) is ``failed`` at once, not at its next
call. A ``notifications/tools/list_changed`` is recorded with the
server's new list (the session's tools stay as they were: its snapshot). A stdio server runs in
its own process group (the SDK starts it with ``start_new_session``), stopped with its children
when the connection closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from zpi_host.support.redaction import Redactor

from .mcp_config import ServerConfig

__all__ = ["McpConnection", "start_all"]

STDERR_TAIL = 2000


class McpConnection:
    """One server: its config, status (``pending``, ``connected``, ``failed``, ``closed``),
    the tools, prompts and resources it offered at start."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.status = config.status
        self.error: str | None = config.error
        self.tools: list[Any] = []
        self.prompts: list[Any] = []
        self.has_resources = False
        #: the server's ``serverInfo`` (name, version) once connected
        self.server_info: dict[str, Any] | None = None
        self.session: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._stderr: Any = None
        self.redact = Redactor(config.secrets) if config.secrets else None
        #: the tools the server offers now, after a ``tools/list_changed`` (None: unchanged)
        self.changed_tools: list[Any] | None = None
        #: told of what happened to the server after its start (it died, its tools changed)
        self.on_news: Callable[[str], None] | None = None
        self._refresh: asyncio.Task[None] | None = None

    def _clean(self, text: str) -> str:
        return self.redact.text(text) if self.redact is not None else text

    async def start(self, timeout: float) -> None:
        """Connect and list the tools within ``timeout`` seconds; never raises."""
        if self.status != "pending":
            return
        self._task = asyncio.get_running_loop().create_task(self._run())
        try:
            await asyncio.wait_for(asyncio.shield(self._ready.wait()), timeout)
        except TimeoutError:
            self._fail(f"did not start within {timeout:g} s (MCP_TIMEOUT, in ms, or "
                       "plugins.builtins.mcp.startup_timeout)")
            await self._stop_task()

    async def reconnect(self, timeout: float) -> None:
        """Close the connection (whatever its state) and start the server again as configured;
        never raises (a server that fails again has status ``failed`` and an error)."""
        await self.aclose()
        self.status, self.error = self.config.status, self.config.error
        self.tools, self.prompts, self.has_resources, self.server_info = [], [], False, None
        self._task, self._stderr, self.changed_tools = None, None, None
        self._ready, self._closing = asyncio.Event(), asyncio.Event()
        await self.start(timeout)

    def _fail(self, why: str) -> None:
        was = self.status
        if self.status in ("pending", "connected"):
            tail = self._stderr_tail()
            self.status, self.error = "failed", self._clean(why + (f"; its stderr ended: {tail}"
                                                                   if tail else ""))
        self._ready.set()
        if was == "connected" and self.status == "failed":
            self._tell(f"MCP server {self.config.name!r} ({self.config.origin}) failed: "
                       f"{self.error}; its tools fail until it is reconnected")

    def _tell(self, news: str) -> None:
        if self.on_news is not None:
            with contextlib.suppress(Exception):  # the listener's trouble is not the server's
                self.on_news(news)

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.flush()
            self._stderr.seek(0)
            text = self._stderr.read()[-STDERR_TAIL:]
            return " ".join(text.split())
        return ""

    async def _run(self) -> None:
        from mcp import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                source, write = await self._open(stack)
                session = await stack.enter_async_context(ClientSession(
                    WatchedStream(source, self._ended), write,
                    message_handler=self._on_message))
                started = await session.initialize()
                info = getattr(started, "server_info", None)
                if info is not None:
                    self.server_info = {"name": str(info.name), "version": str(info.version)}
                capabilities = getattr(started, "capabilities", None)
                listed = await session.list_tools()
                self.tools = list(listed.tools)
                self.has_resources = bool(getattr(capabilities, "resources", None))
                if getattr(capabilities, "prompts", None):
                    with contextlib.suppress(Exception):  # prompts are extra: tools still work
                        self.prompts = list((await session.list_prompts()).prompts)
                self.session = session
                self.status = "connected"
                self._ready.set()
                await self._closing.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the transport's errors arrive grouped
            self._fail(_reason(exc))
        finally:
            self.session = None
            if self.status == "connected":
                self.status = "failed" if not self._closing.is_set() else "closed"
                if self.status == "failed":
                    self.error = "the server closed the connection"
            self._ready.set()

    def _ended(self) -> None:
        """The transport's stream ended (a stdio server exited, a stream was cut): a server
        that was connected is ``failed`` now, and its task lets the transport go."""
        if self.status == "connected" and not self._closing.is_set():
            self._fail("the server closed the connection")
            self._closing.set()

    async def _on_message(self, message: Any) -> None:
        """The server's notifications: ``tools/list_changed`` fetches the new list beside the
        session's receive loop (a request awaited here would wait for itself)."""
        from mcp import types

        if (isinstance(message, types.ToolListChangedNotification) and self.session is not None
                and (self._refresh is None or self._refresh.done())):
            self._refresh = asyncio.get_running_loop().create_task(self._list_again())

    async def _list_again(self) -> None:
        session = self.session
        if session is None:
            return
        try:
            listed = await asyncio.wait_for(session.list_tools(), 30.0)
        except Exception as exc:
            self._tell(f"MCP server {self.config.name!r} changed its tools, but they could not "
                       f"be listed: {_reason(exc)}")
            return
        self.changed_tools = list(listed.tools)
        self._tell(f"MCP server {self.config.name!r} changed its tools (now: "
                   f"{', '.join(changed_names(self)) or 'none'}); this session keeps the "
                   "tools it started with, the next session gets the new list")

    async def _open(self, stack: contextlib.AsyncExitStack) -> tuple[Any, Any]:
        config = self.config
        if config.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            # closed by the exit stack; its tail explains a server that failed
            self._stderr = stack.enter_context(tempfile.TemporaryFile(  # noqa: SIM115
                "w+", encoding="utf-8", errors="replace"))
            params = StdioServerParameters(command=config.command or "", args=list(config.args),
                                           env=dict(config.env) or None, cwd=config.cwd,
                                           encoding_error_handler="replace")
            streams = await stack.enter_async_context(stdio_client(params,
                                                                   errlog=self._stderr))
        elif config.transport == "sse":
            from mcp.client.sse import sse_client

            streams = await stack.enter_async_context(sse_client(
                config.url or "", headers=dict(config.headers) or None))
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            client = await stack.enter_async_context(httpx2.AsyncClient(
                headers=dict(config.headers), timeout=httpx2.Timeout(30.0, read=300.0)))
            streams = await stack.enter_async_context(streamable_http_client(
                config.url or "", http_client=client))
        return streams[0], streams[1]

    async def call_tool(self, name: str, arguments: Mapping[str, Any], timeout: float) -> Any:
        """The server's CallToolResult; raises ConnectionError (server not connected),
        TimeoutError, or the SDK's error."""
        if self.session is None or self.status != "connected":
            raise ConnectionError(self.unavailable())
        return await self._request(self.session.call_tool(name, dict(arguments)), timeout)

    async def get_prompt(self, name: str, arguments: Mapping[str, str], timeout: float) -> Any:
        if self.session is None or self.status != "connected":
            raise ConnectionError(self.unavailable())
        return await self._request(self.session.get_prompt(name, dict(arguments)), timeout)

    async def list_resources(self, timeout: float) -> list[Any]:
        if self.session is None or self.status != "connected":
            raise ConnectionError(self.unavailable())
        return list((await self._request(self.session.list_resources(), timeout)).resources)

    async def read_resource(self, uri: str, timeout: float) -> list[Any]:
        if self.session is None or self.status != "connected":
            raise ConnectionError(self.unavailable())
        return list((await self._request(self.session.read_resource(uri), timeout)).contents)

    async def _request(self, request: Any, timeout: float) -> Any:
        """The answer to ``request``; a request that finds the connection closed (the server
        died) marks the server ``failed``, so that its status says so and it can be
        reconnected."""
        try:
            async with asyncio.timeout(timeout):  # no task of its own, unlike wait_for
                return await request
        except Exception as exc:
            if _connection_closed(exc):
                self._fail("the server closed the connection")
                self._closing.set()  # its task ends and releases the transport
            raise

    def unavailable(self) -> str:
        return (f"the MCP server {self.config.name!r} is {self.status}"
                + (f": {self.error}" if self.error else ""))

    async def _stop_task(self) -> None:
        task = self._task
        if task is None or task.done():
            return
        task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(task, 10.0)

    async def aclose(self) -> None:
        """Close the session and the transport (a stdio server's process group is stopped)."""
        self._closing.set()
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 5.0)
            except BaseException:
                await self._stop_task()
        if self.status == "connected":
            self.status = "closed"


class WatchedStream:
    """The transport's read stream as the client session reads it (the ``mcp`` SDK's
    ``ReadStream`` protocol), telling ``on_end`` when it ends: how a server that dies while
    idle is seen at once, without a task or a hop per message."""

    def __init__(self, source: Any, on_end: Callable[[], None]) -> None:
        self._source = source
        self._on_end = on_end

    @property
    def last_context(self) -> Any:  # the sender's context, where the transport keeps one
        return getattr(self._source, "last_context", None)

    async def receive(self) -> Any:
        import anyio

        try:
            return await self._source.receive()
        except anyio.EndOfStream:
            self._on_end()
            raise

    def __aiter__(self) -> WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._source.__anext__()
        except StopAsyncIteration:
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._source.aclose()

    async def __aenter__(self) -> WatchedStream:
        await self._source.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._source.__aexit__(*exc)  # type: ignore[no-any-return]


def changed_names(connection: McpConnection) -> list[str]:
    """The names of the tools a server offers since it changed its list (empty: none, or
    no change)."""
    return [str(t.name) for t in connection.changed_tools or ()]


def _connection_closed(exc: BaseException) -> bool:
    """Whether ``exc`` is the ``mcp`` SDK's "Connection closed" error (the transport ended)."""
    from mcp.shared.exceptions import MCPError

    try:
        from mcp_types import CONNECTION_CLOSED
    except ImportError:  # the mcp releases that keep the codes in mcp.types
        from mcp.types import CONNECTION_CLOSED  # type: ignore[attr-defined,no-redef]
    return isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED


def _reason(exc: BaseException) -> str:
    """The first real error of a (grouped) exception, one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def start_all(configs: Sequence[ServerConfig], timeout: float) -> list[McpConnection]:
    """A connection per config; the pending ones started concurrently."""
    connections = [McpConnection(c) for c in configs]
    await asyncio.gather(*(c.start(timeout) for c in connections))
    return connections
