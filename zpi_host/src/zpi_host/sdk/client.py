"""SDKClient (alias ClaudeSDKClient): one session, several inputs, messages as they come.

``connect`` builds the session through ``create_session`` (the options mapped by
:class:`~.options.AgentOptions`, the standard tools, hooks and approver added as in-process
plugins and options) and opens a task group in which inputs run one after another, in the
order they were sent. Every session event is translated into messages (``translate.py``) and
put on one stream that ``receive_messages`` / ``receive_response`` read. Use it as
``async with SDKClient(options) as client:`` so that connect and disconnect run in one task.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ..errors import UsageError
from ..session.ports import TaskError, UnknownTaskError
from .accounting import Budget
from .client_controls import ClientControls
from .client_setup import ClientSetup
from .errors import NotConnectedError
from .mcp_controls import McpControls
from .messages import Message, ResultMessage
from .options import AgentOptions
from .stream_parts import ChildMessages, End, failed_run, once, user_text

if TYPE_CHECKING:
    from ..agent.events import Event
    from ..session.agent_session import AgentSession, RunResult

__all__ = ["ClaudeSDKClient", "SDKClient", "TaskError", "UnknownTaskError"]

#: the session events the messages are made from (``translate.py``)
WANTED_EVENTS = ("message_end", "tool_end", "warning", "system", "compaction", "task_started",
                 "task_progress", "task_notification")
#: and the start of each turn and the deltas, for partial messages
PARTIAL_EVENTS = ("turn_start", "text_delta", "reasoning_delta")

class SDKClient(ClientSetup, ClientControls, McpControls):
    """A conversation that outlives one input; see the module docstring."""

    def __init__(self, options: AgentOptions | None = None, transport: Any = None) -> None:
        from .transport import refuse_transport

        refuse_transport(transport)
        self.options = options if options is not None else AgentOptions()
        self._session: AgentSession | None = None
        self._group: Any = None
        self._send: Any = None
        self._receive: Any = None
        self._lock: Any = None
        self._translator: Any = None
        self._budget = Budget(self.options.max_budget_usd)
        self._mode = self.options.permission_mode or "default"
        self._mirror: Any = None  # TranscriptMirror, with a session_store
        self._resynced: list[Any] = []  # mirrors sending sub-agent records the store lacks
        self._resume_choice: Any = None  # what the store had of the resumed session
        self._mcp: Any = None  # InProcessServers, after connect
        self._started_model: tuple[Any, Any] = (None, None)
        #: the typed error that ended the last input's run (None when it did not fail)
        self.last_failure: BaseException | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def session(self) -> AgentSession:
        """The kernel session (after ``connect``)."""
        if self._session is None:
            raise NotConnectedError("the client is not connected; call connect() or use "
                                    "'async with SDKClient(...)'")
        return self._session

    async def connect(self, prompt: str | AsyncIterable[Mapping[str, Any]] | None = None
                      ) -> None:
        """Create the session; ``prompt``, if given, is sent as the first input."""
        if self._session is not None:
            raise UsageError("the client is already connected")
        import anyio

        session = await self._create_session()
        await self._adopt(session)
        self._send, self._receive = anyio.create_memory_object_stream[Any](math.inf)
        self._lock = anyio.Lock()
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        self._start_mirrors()
        if prompt is not None:
            await self.query(prompt)

    async def _adopt(self, session: AgentSession) -> None:
        """Make ``session`` the client's: environment, mode, mirror, observers, translator,
        subscription (at connect, and after ``/clear``)."""
        from .translate import Translator

        try:
            if self.options.fallback_model is not None:
                from .fallback import attach_fallback

                await attach_fallback(session, self.options.fallback_model,
                                      {str(k): str(v) for k, v in self.options.env.items()})
            if self.options.resume is not None or self.options.continue_conversation:
                from .accounting import restore_totals

                restore_totals(session)
            for name, value in self.options.env.items():  # the provider keys stay out
                if str(name) not in session.hidden_variables:
                    session.view.set_environment(str(name), str(value))
            self._session = session
            self._started_model = (session.provider, session.model_entry)
            self._apply_mode(self._mode)
            if self.options.session_store is not None:
                self._attach_mirror(session)
            session.subagent_observers.append(ChildMessages(self))
        except BaseException:
            self._session = self._mirror = None
            self._resynced = []
            await session.dispose()
            raise
        self._translator = Translator(session, partial=self.options.include_partial_messages,
                                      mcp_servers=self._init_mcp_servers,
                                      echo_prompts=self.options.echo_prompts,
                                      forward_subagent_text=self.options.forward_subagent_text)
        wanted = set(WANTED_EVENTS)
        if self.options.include_partial_messages:
            wanted.update(PARTIAL_EVENTS)
        if self.options.echo_prompts:
            wanted.add("turn_start")
        session.subscribe(self._on_event, wanted)

    def _start_mirrors(self) -> None:
        if self._mirror is not None:
            self._group.start_soon(self._mirror.run)
        for mirror in self._resynced:
            self._group.start_soon(mirror.run)

    def _report(self, message: Message) -> None:
        """A message from outside the session's events (a hook's run), on the stream."""
        if self._send is not None:
            self._send.send_nowait(message)

    async def disconnect(self) -> None:
        """Stop what runs, end the session (``zpi_session_end``) and release it."""
        session, group = self._session, self._group
        if session is None:
            return
        self._session = self._group = None
        try:
            # aborts the running input and waits until it has recorded its interrupted calls
            await session.dispose()
            started = self._started_model[0]
            if started is not None and started is not session.provider and \
                    started is not self.options.provider:
                await started.aclose()  # kept open by set_model for set_model(None)
        finally:
            try:
                await self._close_mirror(session)
            finally:
                group.cancel_scope.cancel()  # inputs still waiting for their turn
                try:
                    await group.__aexit__(None, None, None)
                finally:
                    self._send.close()

    async def __aenter__(self) -> SDKClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> bool:
        await self.disconnect()
        return False

    # ------------------------------------------------------------------ inputs

    async def query(self, prompt: str | AsyncIterable[Mapping[str, Any]],
                    session_id: str = "default") -> None:
        """Send an input (a string, or an async iterable of user-message dicts, each one
        input); its messages arrive on ``receive_messages``. ``session_id`` is accepted for
        claude-agent-sdk's signature: a client has one session."""
        if self._group is None:
            raise NotConnectedError("the client is not connected; call connect() or use "
                                    "'async with SDKClient(...)'")
        if isinstance(prompt, str):
            self._group.start_soon(self._run_one, prompt)
        elif isinstance(prompt, AsyncIterable):
            self._group.start_soon(self._run_stream, prompt, False)
        else:
            raise UsageError(f"prompt must be a string or an async iterable of user-message "
                             f"dicts, got {type(prompt).__name__}")

    async def _run_stream(self, prompts: AsyncIterable[Mapping[str, Any]], end: bool,
                          plain: bool = False) -> None:
        error: BaseException | None = None
        try:
            async for item in prompts:
                await self._run_one(user_text(item), finish_tasks=plain)
        except Exception as exc:  # handed to the reader, not lost in the task group
            error = exc
        if end or error is not None:
            self._send.send_nowait(End(error))

    async def _run_one(self, text: str, finish_tasks: bool = False) -> None:
        """One input and its result; ``finish_tasks`` (a plain ``query()`` with a string):
        background tasks still running are stopped and awaited before the result."""
        if text.strip() == "/clear":
            async with self._lock:
                from .clear import clear_conversation

                for message in await clear_conversation(self):
                    self._send.send_nowait(message)
            return
        session = self.session
        async with self._lock:
            translator = self._translator
            translator.start()
            self._budget.start(session)
            started = time.perf_counter()
            self._send.send_nowait(translator.init_message(self._mode))
            run = await self._run(session, text, started)
            self.last_failure = run.failure
            structured = None
            if self.options.output_format is not None:
                run, structured = await self._structured(session, run, started)
            if finish_tasks:
                await session.ports.tasks.stop_all("the query ended")
            if self._mirror is not None:
                await self._mirror.turn_end()
            self._send.send_nowait(translator.result(run, self._budget, started, structured))

    async def _run(self, session: AgentSession, text: str, started: float) -> RunResult:
        try:
            return await session.run(text)
        except Exception as exc:
            return failed_run(session, exc, started)

    async def _structured(self, session: AgentSession, run: RunResult, started: float
                          ) -> tuple[RunResult, tuple[Any, list[str]]]:
        """``output_format``: the answer checked, and asked again while it does not fit
        (the result counts every request: turns and denials here, usage in the
        translator)."""
        from .structured import MAX_RETRIES, StructuredOutput

        checker = StructuredOutput(self.options.output_format or {})
        runs = [run]
        value, problems = checker.parse(run.result)
        while problems and len(runs) <= MAX_RETRIES and not run.is_error \
                and not self._budget.exceeded:
            run = await self._run(session, checker.retry_prompt(problems), started)
            runs.append(run)
            if not run.is_error:
                value, problems = checker.parse(run.result)
        combined = attrs.evolve(run, num_turns=sum(r.num_turns for r in runs),
                                denials=tuple(d for r in runs for d in r.denials))
        return combined, (value, problems)

    def _on_event(self, event: Event) -> None:
        """Each wanted session event: its messages on the stream (synchronous: nothing here
        waits). The budget is checked by the session's spend ledger before each request."""
        from ..agent.events import WarningEvent

        session = self._session
        if session is None:
            return
        if isinstance(event, WarningEvent) and self.options.stderr is not None:
            self.options.stderr(event.message)
        for message in self._translator.translate(event):
            self._send.send_nowait(message)

    # ------------------------------------------------------------------ reading

    async def receive_messages(self) -> AsyncIterator[Message]:
        """Every message, as it comes, until the client disconnects."""
        if self._receive is None:
            raise NotConnectedError("the client is not connected")
        async for message in self._receive:
            if isinstance(message, End):
                if message.error is not None:
                    raise message.error
                continue
            yield message

    async def receive_response(self) -> AsyncIterator[Message]:
        """Messages up to and including the next ``ResultMessage``."""
        async for message in self.receive_messages():
            yield message
            if isinstance(message, ResultMessage):
                return

    def start_stream(self, prompts: str | AsyncIterable[Mapping[str, Any]]) -> None:
        """``query()``'s input (one string, or each streamed message in turn), then an
        :class:`End` mark on the stream."""
        if isinstance(prompts, str):
            self._group.start_soon(self._run_stream, once(prompts), True, True)
        else:
            self._group.start_soon(self._run_stream, prompts, True)

    @property
    def receive_stream(self) -> Any:
        """The stream of messages (and :class:`End` marks) that the readers read."""
        return self._receive


#: claude-agent-sdk's name
ClaudeSDKClient = SDKClient
