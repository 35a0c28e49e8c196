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
import os
import time
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ..errors import UsageError, ZpiError
from ..session.ports import TaskError, UnknownTaskError
from .accounting import Budget, context_usage_dict
from .messages import Message, ResultMessage
from .options import PERMISSION_MODES, AgentOptions

if TYPE_CHECKING:
    from ..agent.events import Event
    from ..session.agent_session import AgentSession, RunResult

__all__ = ["ClaudeSDKClient", "SDKClient", "TaskError", "UnknownTaskError"]

#: the session events the messages are made from (``translate.py``)
WANTED_EVENTS = ("message_end", "tool_end", "warning", "system", "compaction", "task_started",
                 "task_progress", "task_notification")
#: and the start of each turn and the deltas, for partial messages
PARTIAL_EVENTS = ("turn_start", "text_delta", "reasoning_delta")

#: where the mode allowances of ``acceptEdits`` come from (removed when the mode changes)
MODE_RULE_SOURCE = "permission mode acceptEdits"


@attrs.frozen
class End:
    """Marks the end of a ``query()`` stream; carries the error that ended it, if any."""

    error: BaseException | None = None


class SDKClient:
    """A conversation that outlives one input; see the module docstring."""

    def __init__(self, options: AgentOptions | None = None) -> None:
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
        #: a borrowed host session (options.host_session): never disposed here
        self._borrowed = self.options.host_session is not None
        self._detach: list[Any] = []  # what to undo on a borrowed session at disconnect

    # ------------------------------------------------------------------ lifecycle

    @property
    def session(self) -> AgentSession:
        """The kernel session (after ``connect``)."""
        if self._session is None:
            raise UsageError("the client is not connected; call connect() or use "
                             "'async with SDKClient(...)'")
        return self._session

    async def connect(self, prompt: str | AsyncIterable[Mapping[str, Any]] | None = None
                      ) -> None:
        """Create the session; ``prompt``, if given, is sent as the first input."""
        if self._session is not None:
            raise UsageError("the client is already connected")
        import anyio

        from .translate import Translator

        session = await self._create_session()
        if self._borrowed:  # a host session as it is: only what is undone at the end
            from .host import attach_observer

            self._session = session
            self._detach.append(attach_observer(session, _ChildMessages(self)))
        else:
            await self._connect_own(session)
        self._translator = Translator(session, partial=self.options.include_partial_messages,
                                      mcp_servers=self._init_mcp_servers)
        self._send, self._receive = anyio.create_memory_object_stream[Any](math.inf)
        self._lock = anyio.Lock()
        wanted = set(WANTED_EVENTS)
        if self.options.include_partial_messages:
            wanted.update(PARTIAL_EVENTS)
        self._detach.append(session.subscribe(self._on_event, wanted))
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        if self._mirror is not None:
            group.start_soon(self._mirror.run)
        for mirror in self._resynced:
            group.start_soon(mirror.run)
        if prompt is not None:
            await self.query(prompt)

    async def _connect_own(self, session: AgentSession) -> None:
        try:
            if self.options.resume is not None or self.options.continue_conversation:
                from .accounting import restore_totals

                restore_totals(session)
            for name, value in self.options.env.items():  # the provider keys stay out
                if str(name) not in session.hidden_variables:
                    session.view.set_environment(str(name), str(value))
            self._session = session
            self._apply_mode(self._mode)
            if self.options.session_store is not None:
                self._attach_mirror(session)
            session.subagent_observers.append(_ChildMessages(self))
        except BaseException:
            self._session = self._mirror = None
            self._resynced = []
            await session.dispose()
            raise

    async def _create_session(self) -> AgentSession:
        from ..session.assembly import create_session
        from .tools import StandardToolsPlugin

        options = self.options
        if options.host_session is not None:
            from .mcp_servers import InProcessServers

            options.check()  # creation-time options refused: the host fixed them
            self._mcp = InProcessServers({})  # none of the SDK's: the host's tools as they are
            return options.host_session.session  # type: ignore[no-any-return]
        kwargs = options.session_kwargs()
        plugins: dict[str, Any] = {"sdk-standard-tools": StandardToolsPlugin()}
        if options.hooks:
            from .hook_callbacks import callback_hooks_plugin

            plugins["sdk-hooks"] = callback_hooks_plugin(options.hooks)
        from .mcp_servers import InProcessServers

        self._mcp = InProcessServers(options.in_process_servers())
        if self._mcp.servers:  # says which server is switched off when its tool is called
            plugins["sdk-mcp-servers"] = self._mcp
        kwargs["plugins"] = plugins
        if options.can_use_tool is not None:
            from .permissions import sdk_approver

            approve = sdk_approver(options.can_use_tool, lambda: self.session,
                                   self._apply_mode)

            async def approver(name: str, arguments: dict[str, Any], context: Any) -> Any:
                from ..permissions import PermissionDeny

                if self._mode == "dontAsk":
                    return PermissionDeny(f"{context.reason}; permission mode dontAsk denies "
                                          "what is not allowed by a rule")
                return await approve(name, arguments, context)

            kwargs["can_use_tool"] = approver
        if options.session_store is not None:
            await self._resume_from_store(kwargs)
        elif kwargs.get("continue_recent") and self._latest(kwargs) is None:
            del kwargs["continue_recent"]  # nothing to continue: a new session
            self.options = attrs.evolve(options, continue_conversation=False,
                                        fork_session=False)
        elif options.fork_session and options.session_store is None:
            kwargs["resume"] = self._fork(kwargs)
            kwargs.pop("continue_recent", None)
        return await create_session(**kwargs)

    async def _resume_from_store(self, kwargs: dict[str, Any]) -> None:
        """With a session_store, resume and continue read the mirror first
        (``store_resume.py``); the local session of the same id is the fallback.
        ``fork_session`` forks in the store (``fork_session_via_store``), or locally when the
        store does not have the session, and resumes the fork."""
        from ..stores.store_resume import newest_session, resolve_resume

        options = self.options
        project = options.store_project_key()
        continue_recent = bool(kwargs.pop("continue_recent", False))
        resume = options.resume
        if options.fork_session:
            from .store_sessions import fork_session_via_store

            if continue_recent:
                resume = await newest_session(options.session_store, project,
                                              options.load_timeout_ms)
                continue_recent = False
            if resume is not None:
                from ..transcript.errors import SessionNotFoundError

                try:
                    fork = await fork_session_via_store(options.session_store, resume,
                                                        project_key=project,
                                                        new_id=options.session_id)
                    resume = fork.session_id
                except SessionNotFoundError:  # not in the store: the local session's fork
                    resume = self._fork({**kwargs, "resume": resume})
        from ..session.assembly import resolve_agent_dir

        choice = await resolve_resume(
            options.session_store, project, resume=resume, continue_recent=continue_recent,
            timeout_ms=options.load_timeout_ms,
            agent_dir=resolve_agent_dir(kwargs.get("agent_dir"),
                                        kwargs.get("environ") or os.environ),
            cwd=Path(kwargs.get("cwd") or os.getcwd()).expanduser().resolve())
        if choice.resume is None:
            kwargs.pop("resume", None)
            self.options = attrs.evolve(options, continue_conversation=False,
                                        fork_session=False)
        else:
            kwargs["resume"] = choice.resume
        self._resume_choice = choice

    def _attach_mirror(self, session: AgentSession) -> None:
        from ..stores.mirror import SubagentMirrors, attach_mirror, resync_subagents

        options = self.options
        key: Any = {"project_key": options.store_project_key(),
                    "session_id": session.session_id}
        choice = self._resume_choice
        self._mirror = attach_mirror(session, options.session_store, key,
                                     flush_mode=options.session_store_flush,
                                     on_error=self._mirror_error,
                                     known=choice.known if choice is not None else frozenset())
        self._resynced = resync_subagents(
            session, options.session_store, key, flush_mode=options.session_store_flush,
            on_error=self._mirror_error,
            known=choice.children_known if choice is not None else {})
        session.subagent_observers.append(SubagentMirrors(
            options.session_store, key, flush_mode=options.session_store_flush,
            on_error=self._mirror_error, start_soon=lambda run: self._group.start_soon(run)))

    def _mirror_error(self, key: Any, error: str) -> None:
        from .messages import MirrorErrorMessage

        if self.options.stderr is not None:
            self.options.stderr(f"session store mirror: {error}")
        if self._send is not None:
            self._send.send_nowait(MirrorErrorMessage(
                "mirror_error", {"key": dict(key), "error": error}, key=dict(key), error=error))

    @staticmethod
    def _latest(kwargs: Mapping[str, Any]) -> str | None:
        """The latest session of the chosen working directory, or None."""
        from ..transcript import list_sessions

        cwd = Path(kwargs.get("cwd") or os.getcwd()).expanduser().resolve()
        recent = list_sessions(cwd, agent_dir=kwargs.get("agent_dir"))
        return recent[0].session_id if recent else None

    def _fork(self, kwargs: dict[str, Any]) -> str:
        """``fork_session``: resume a copy of the chosen session under a new id."""
        from ..transcript import fork_session

        source = kwargs.get("resume") or self._latest(kwargs)
        assert source is not None  # continue_conversation without a session starts anew
        return fork_session(source, agent_dir=kwargs.get("agent_dir"),
                            new_id=self.options.session_id)

    async def disconnect(self) -> None:
        """Stop what runs, end the session (``zpi_session_end``) and release it."""
        session, group = self._session, self._group
        if session is None:
            return
        self._session = self._group = None
        try:
            if self._borrowed:  # the host's: our input stopped, nothing of the host's
                from .host import give_back

                detach, self._detach = self._detach, []
                await give_back(session, self._lock is not None and self._lock.locked(),
                                detach)
            else:
                # aborts the running input and waits until it has recorded its interrupted
                # calls
                await session.dispose()
        finally:
            try:
                await self._close_mirror(session)
            finally:
                group.cancel_scope.cancel()  # inputs still waiting for their turn
                try:
                    await group.__aexit__(None, None, None)
                finally:
                    self._send.close()

    async def _close_mirror(self, session: AgentSession) -> None:
        """Query exit waits for every scheduled write to the store."""
        from ..stores.mirror import close_mirrors, detach_mirror

        mirror, self._mirror = self._mirror, None
        resynced, self._resynced = self._resynced, []
        try:
            if mirror is not None:
                await detach_mirror(session, mirror)
        finally:
            await close_mirrors(resynced)

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
            raise UsageError("the client is not connected; call connect() or use "
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
        session = self.session
        async with self._lock:
            translator = self._translator
            translator.start()
            self._budget.start(session)
            started = time.perf_counter()
            self._send.send_nowait(translator.init_message(self._mode))
            run = await self._run(session, text, started)
            structured = None
            if self.options.output_format is not None:
                run, structured = await self._structured(session, run, started)
            if finish_tasks and not self._borrowed:  # a host's tasks are the host's
                await session.ports.tasks.stop_all("the query ended")
            if self._mirror is not None:
                await self._mirror.turn_end()
            self._send.send_nowait(translator.result(run, self._budget, started, structured))

    async def _run(self, session: AgentSession, text: str, started: float) -> RunResult:
        try:
            return await session.run(text)
        except Exception as exc:
            return _failed_run(session, exc, started)

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
            raise UsageError("the client is not connected")
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
        :class:`End` mark on the stream. With a borrowed session, an empty prompt runs the
        host's prepared input."""
        if self._borrowed:
            from .host import first_input

            prompts = first_input(self.options.host_session, prompts)
        if isinstance(prompts, str):
            self._group.start_soon(self._run_stream, _once(prompts), True, True)
        else:
            self._group.start_soon(self._run_stream, prompts, True)

    @property
    def receive_stream(self) -> Any:
        """The stream of messages (and :class:`End` marks) that the readers read."""
        return self._receive

    # ------------------------------------------------------------------ control

    async def interrupt(self) -> None:
        """Stop the input that runs now; its result comes with ``error_during_execution``."""
        self.session.abort()

    async def set_permission_mode(self, mode: str) -> None:
        """Change the permission mode for the calls that follow."""
        self._apply_mode(mode)

    def _apply_mode(self, mode: str) -> None:
        if mode not in PERMISSION_MODES:
            raise UsageError(f"unknown permission mode {mode!r}; use one of "
                             f"{', '.join(PERMISSION_MODES)}")
        from ..permissions import parse_rule

        policy = self.session.permissions if self._session is not None else None
        self._mode = mode
        if policy is None:
            return
        kernel, extra = PERMISSION_MODES[mode]
        policy.mode = kernel  # type: ignore[assignment]
        policy.rules.allow[:] = [r for r in policy.rules.allow if r.source != MODE_RULE_SOURCE]
        for rule in extra:
            policy.rules.add("allow", parse_rule(rule, source=MODE_RULE_SOURCE))

    async def set_model(self, model: str | None = None) -> None:
        """Use ``model`` (``PROVIDER:MODEL`` or a catalog name) from the next request on;
        None: the model the session started with."""
        from ..providers.catalog import resolve_model
        from ..providers.factories import collect_providers, from_environment

        session = self.session
        if session.is_running:
            raise UsageError("set_model: wait for the current response to finish")
        spec = model or self.options.model
        if spec is None:
            raise UsageError("set_model: no model given and none was chosen in the options")
        environ = {**os.environ, **{str(k): str(v) for k, v in self.options.env.items()}}
        entry = from_environment(resolve_model(spec, session.settings), environ)
        factories = await collect_providers(session.host, session.settings)
        if entry.provider not in factories:
            raise UsageError(f"unknown model provider {entry.provider!r} (installed: "
                             f"{', '.join(sorted(factories)) or 'none'})")
        provider = factories[entry.provider].create(entry, session.settings)
        old, session.provider, session.model_entry = session.provider, provider, entry
        session.store.append("model_change", provider=provider.name, model=provider.model)
        if old is not self.options.provider:
            await old.aclose()

    async def get_context_usage(self) -> dict[str, Any]:
        """How full the context is; never calls the model."""
        session = self.session
        return context_usage_dict(session.get_context_usage(), session.view.model)

    async def stop_task(self, task_id: str) -> None:
        """Stop a background task of this session (the registry ``TaskOutput``/``TaskStop``
        use) and wait until its processes are gone; its ``TaskNotificationMessage``
        (status ``stopped``) is on the stream. Stopping a task that already ended succeeds.
        An unknown id or another session's task raises :class:`~zpi_host.session.ports.TaskError`
        (``UnknownTaskError`` for an unknown one); after ``disconnect`` too."""
        if self._session is None:
            raise TaskError(f"stop_task({task_id!r}): the client is not connected (after "
                            "disconnect its tasks were stopped with its session)")
        await self._session.ports.tasks.stop(task_id, "stopped by stop_task")

    async def get_mcp_status(self) -> dict[str, Any]:
        """``{"mcpServers": [...]}``: each server's status, server info, config (without
        secrets), scope and tools, in claude-agent-sdk's shape: the in-process servers
        (``connected`` or ``disabled``), then the external ones the kernel's MCP service runs
        (``connected``, ``pending``, ``failed`` with an ``error``, ``disabled``)."""
        in_process = self._mcp_servers()
        return {"mcpServers": in_process.statuses() + self.session.ports.mcp.statuses()}

    async def toggle_mcp_server(self, server_name: str, enabled: bool) -> None:
        """Switch a server's tools off (or on again) from the next request on; an external
        server keeps its connection. An unknown name raises
        :class:`~.mcp_servers.McpServerError`."""
        if self._is_in_process(server_name, "toggle_mcp_server"):
            self._mcp.toggle(self.session, server_name, enabled)
        else:
            self.session.ports.mcp.toggle(server_name, enabled)

    async def reconnect_mcp_server(self, server_name: str) -> None:
        """Connect an external server again (one that died or failed to start): its tools
        work again from the next request on; if it fails again, ``get_mcp_status()`` says
        why. An in-process server has no connection to lose: this succeeds for one. An
        unknown name raises :class:`~.mcp_servers.McpServerError`."""
        if not self._is_in_process(server_name, "reconnect_mcp_server"):
            await self.session.ports.mcp.reconnect(server_name)

    def _is_in_process(self, server_name: str, request: str) -> bool:
        """Whether ``server_name`` is an in-process server; raises McpServerError when the
        client has no server of that name."""
        in_process = self._mcp_servers()
        if server_name in in_process.servers:
            return True
        external = self.session.ports.mcp.names()
        if server_name not in external:
            from .mcp_servers import McpServerError

            raise McpServerError(
                f"{request}({server_name!r}): no MCP server of that name (in-process: "
                f"{', '.join(sorted(in_process.servers)) or 'none'}; external: "
                f"{', '.join(external) or 'none'})")
        return False

    def _init_mcp_servers(self) -> list[dict[str, Any]]:
        """The ``mcp_servers`` of the ``init`` system message: name and status of each."""
        external = [{"name": e["name"], "status": e["status"]}
                    for e in self.session.ports.mcp.statuses()]
        return self._mcp.init_entries() + external

    def _mcp_servers(self) -> Any:
        self.session  # noqa: B018 - raises when not connected
        return self._mcp

    async def get_server_info(self) -> dict[str, Any]:
        """What the ``init`` system message says."""
        return dict(self._translator.init_message(self._mode).data)


#: claude-agent-sdk's name
ClaudeSDKClient = SDKClient


async def _once(text: str) -> AsyncIterator[str]:
    yield text


def user_text(item: Any) -> str:
    """The text of one streamed user-message dict
    (``{"type": "user", "message": {"role": "user", "content": ...}}``)."""
    if isinstance(item, str):
        return item
    message = item.get("message") if isinstance(item, Mapping) else None
    if not isinstance(item, Mapping) or item.get("type") != "user" or \
            not isinstance(message, Mapping):
        raise UsageError(f"a streamed input must be {{'type': 'user', 'message': {{'role': "
                         f"'user', 'content': ...}}}}, got {item!r:.200}")
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for block in content:
            if not isinstance(block, Mapping) or block.get("type") != "text":
                raise UsageError(f"only text content can be streamed in; got {block!r:.100}")
            texts.append(str(block.get("text", "")))
        return "\n".join(texts)
    raise UsageError(f"the message content must be a string or a list of text blocks, got "
                     f"{content!r:.100}")


class _ChildMessages:
    """A sub-agent's tool calls and results on the message stream, each marked with the
    ``parent_tool_use_id`` of the call that started it (claude-agent-sdk's default; its text
    is not forwarded)."""

    def __init__(self, client: SDKClient) -> None:
        self.client = client
        self._unsubscribe: dict[str, Any] = {}

    async def subagent_started(self, child: AgentSession, link: Any) -> None:
        def forward(event: Event) -> None:
            client = self.client
            if client._translator is None or client._send is None:
                return
            for message in client._translator.subagent(event, link.tool_call_id):
                client._send.send_nowait(message)

        self._unsubscribe[child.session_id] = child.subscribe(forward,
                                                              ["message_end", "tool_end"])

    async def subagent_stopped(self, child: AgentSession, link: Any) -> None:
        unsubscribe = self._unsubscribe.pop(child.session_id, None)
        if unsubscribe is not None:
            unsubscribe()


def _failed_run(session: AgentSession, exc: Exception, started: float) -> RunResult:
    """A run that raised (a bug in a callback, a typed error from a plugin) as a failed
    result, so the reader always gets a ResultMessage."""
    from ..providers.messages import Usage
    from ..session.agent_session import RunResult

    what = str(exc) if isinstance(exc, ZpiError) else f"{type(exc).__name__}: {exc}"
    return RunResult(result=what, is_error=True, num_turns=0, session_id=session.session_id,
                     usage=Usage(), duration_ms=int((time.perf_counter() - started) * 1000),
                     stop_reason="error", error=what)

