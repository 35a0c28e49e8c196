"""Host ports: the generic ways a service plugin reaches the user, the model and storage.

Built-in services (``zpi_builtins``) never import the CLI or the SDK: they talk to the host
only through the ports a session exposes as ``SessionView.ports``. The embedding program
chooses the user-facing ones (``create_session(ports=HostPorts(...))``): the CLI gives a
terminal prompt and the terminal stream on a TTY, the SDK gives its ``ask_user`` callback;
without them a service is told plainly that nobody can answer. The session fills in the
ports it owns: side requests to a model (:class:`ModelPort`), the session's own records
(:class:`StoragePort`) and the search backends plugins register (:class:`SearchPort`).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, Protocol

import attrs

from ..errors import UsageError, ZpiError
from ..providers.factories import collect_providers, from_environment
from ..support.attrs_methods import FrozenFieldsEq
from ..support.terminal_text import shown

if TYPE_CHECKING:
    from ..agent.state import SessionState

from .mcp_port import (  # re-exported: the port's MCP part lives in its own module
    McpPort,
    McpRegistry,
    McpServerError,
    discard_mcp_registry,
    offer_mcp_registry,
)

__all__ = ["AskUser", "AskUserError", "HostPorts", "McpPort", "McpRegistry", "McpServerError",
           "discard_mcp_registry", "offer_mcp_registry",
           "ModelPort", "NobodyToAsk", "Question",
           "QuestionOption", "SearchBackend", "SearchBackendError", "SearchHit", "SearchPort",
           "SessionPorts", "StoragePort", "SubagentPort", "TaskError", "TaskInfo", "TaskPort",
           "TaskRegistry", "TerminalAsker", "UnknownTaskError", "check_answers"]

@attrs.frozen(repr=False, eq=False, slots=False)
class QuestionOption(FrozenFieldsEq):
    label: str
    description: str = ""


@attrs.frozen(repr=False, eq=False, slots=False)
class Question(FrozenFieldsEq):
    """One question for the user: free text when it has no options, else a choice (several
    labels when ``multi_select``); the user may always type an answer of their own."""

    question: str
    header: str = ""
    options: tuple[QuestionOption, ...] = ()
    multi_select: bool = False


@attrs.frozen(repr=False, eq=False, slots=False)
class TaskInfo(FrozenFieldsEq):
    """What the host knows about one background task (a command run with
    ``run_in_background``): a snapshot, safe to keep. ``status`` is ``running``,
    ``completed`` (exit code 0), ``failed`` (another exit code) or ``stopped`` (killed by
    ``task_stop``, ``stop_task``, the end of a plain run or of the session, or found ended on
    resume)."""

    task_id: str
    session_id: str
    command: str
    description: str
    status: str
    output_file: str
    pid: int | None = None
    pgid: int | None = None
    tool_use_id: str | None = None
    exit_code: int | None = None
    output_bytes: int = 0
    duration_ms: int = 0
    summary: str = ""

    @property
    def running(self) -> bool:
        return self.status == "running"

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen(repr=False, eq=False, slots=False)
class SearchHit(FrozenFieldsEq):
    """One result of a web search."""

    title: str
    url: str
    snippet: str = ""


class NobodyToAsk(ZpiError):
    """The session has no way to ask its user (no terminal, no ``ask_user`` callback)."""


class AskUserError(ZpiError):
    """The asking port answered with something that is not an answer to the questions."""


#: ``await ask(questions)`` -> ``{question text: answer}``; an answer is a string, or a list of
#: option labels for a multi-select question. Raise :class:`NobodyToAsk` to decline.
AskUser = Callable[[Sequence["Question"]], Awaitable[Mapping[str, Any]]]


def check_answers(questions: Sequence[Question], answers: Any) -> dict[str, str | list[str]]:
    """The port's answers, validated: one per question, strings or lists of strings."""
    if not isinstance(answers, Mapping):
        raise AskUserError(f"the ask_user port must return a mapping of question to answer, "
                           f"got {type(answers).__name__}")
    clean: dict[str, str | list[str]] = {}
    for q in questions:
        value = answers.get(q.question)
        if isinstance(value, str):
            clean[q.question] = value
        elif isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            clean[q.question] = list(value)
        elif value is None:
            clean[q.question] = ""
        else:
            raise AskUserError(f"the answer to {q.question!r} must be a string or a list of "
                               f"strings, got {type(value).__name__}")
    return clean


class TerminalAsker:
    """The plain terminal asking port: questions on ``output`` (stderr), answers read line by
    line from ``input`` (stdin) in a worker thread. A number picks an option (``1,3`` for
    several); anything else is the user's own answer; end of input declines."""

    def __init__(self, input: IO[str] | None = None, output: IO[str] | None = None) -> None:
        self.input = input if input is not None else sys.stdin
        self.output = output if output is not None else sys.stderr

    async def __call__(self, questions: Sequence[Question]) -> Mapping[str, Any]:
        import anyio

        answers: dict[str, Any] = {}
        for q in questions:
            self.output.write(shown(self.render(q), self.output, exact=True))
            self.output.flush()
            line = await anyio.to_thread.run_sync(self.input.readline, abandon_on_cancel=True)
            if not line:
                raise NobodyToAsk("the terminal closed its input before the user answered")
            answers[q.question] = self.parse(q, line.strip())
        return answers

    @staticmethod
    def render(q: Question) -> str:
        lines = [f"\n[{q.header}] {q.question}" if q.header else f"\n{q.question}"]
        lines += [f"  {i}. {o.label}" + (f" - {o.description}" if o.description else "")
                  for i, o in enumerate(q.options, 1)]
        if q.options:
            how = "numbers separated by commas" if q.multi_select else "a number"
            lines.append(f"Answer with {how}, or type your own answer: ")
        else:
            lines.append("Your answer: ")
        return "\n".join(lines)

    @staticmethod
    def parse(q: Question, line: str) -> str | list[str]:
        picks = [p.strip() for p in line.split(",")] if q.options else []
        if picks and all(p.isdigit() and 1 <= int(p) <= len(q.options) for p in picks):
            labels = [q.options[int(p) - 1].label for p in picks]
            return labels if q.multi_select else labels[0]
        return line


@attrs.frozen(repr=False, eq=False, slots=False)
class HostPorts(FrozenFieldsEq):
    """What the embedding program gives the session's services.

    ``ask_user``: how to ask the user (None: nobody can answer). ``terminal``: a text stream
    shown on the user's terminal, for a bell or an OSC 9 notification (None: not on a
    terminal).
    """

    ask_user: AskUser | None = None
    terminal: IO[str] | None = None

    def __attrs_post_init__(self) -> None:
        if self.ask_user is not None and not callable(self.ask_user):
            raise UsageError(f"ports.ask_user must be an async callable, got "
                           f"{type(self.ask_user).__name__}")


class ModelPort:
    """Side requests (a title, a summary, a web page's prompt) to the session's model or
    another one; the conversation never sees them. Their usage counts in the session's
    usage and against its budget (``agent/spend.py``), like the loop's requests."""

    def __init__(self, session: SessionState) -> None:
        self._session = session

    @property
    def model(self) -> str:
        return f"{self._session.provider.name}:{self._session.provider.model}"

    def can_answer(self, purpose: str, model: str | None = None) -> bool:
        """False when a request of ``purpose`` must not be sent to the session's model: a
        scripted model whose script holds no turn for it. A model named explicitly (a
        setting) is always asked."""
        if model is not None and model != self.model:
            return True
        answers = getattr(self._session.provider, "answers", None)
        return bool(answers(purpose)) if callable(answers) else True

    async def complete(self, *, system: str, prompt: str, purpose: str,
                       model: str | None = None, max_tokens: int = 200) -> str:
        """The text of one answer to ``prompt``; raises the provider's errors, and
        BudgetExhaustedError when the session tree's budget is spent (it is checked before
        the request, as the loop's are). The usage counts in the session's totals, priced
        by the catalog entry of the model that answered."""
        from ..providers.base import ModelRequest, TextDelta, UsageReport
        from ..providers.messages import UserMessage

        session = self._session
        provider, entry, own = session.provider, None, True
        if model is not None and model != self.model:
            (provider, entry), own = await open_model(session, model), False
        request = ModelRequest(model=provider.model, system_prompt=system,
                               messages=[UserMessage.text(prompt)],
                               options={"max_tokens": max_tokens}, purpose=purpose)
        parts: list[str] = []
        try:
            async with session.spend.request() as spend:
                async for event in provider.stream(request):
                    if isinstance(event, TextDelta):
                        parts.append(event.text)
                    elif isinstance(event, UsageReport):
                        spend.add(session.record_usage(event.usage, entry))
        finally:
            if not own:
                await provider.aclose()
        return "".join(parts)


async def open_model(session: SessionState, model: str) -> tuple[Any, Any]:
    """A new provider for ``model`` (a catalog name or ``PROVIDER:MODEL``), made by the
    session's provider plugins with its settings, and its catalog entry. The caller closes
    the provider (``aclose``)."""
    import os

    from ..providers.catalog import resolve_model

    entry = resolve_model(model, session.settings)
    factories = await collect_providers(session.host, session.settings)
    if entry.provider not in factories:
        raise ZpiError(f"model {model!r}: unknown provider {entry.provider!r}")
    provider = factories[entry.provider].create(from_environment(entry, os.environ),
                                                session.settings)
    return provider, entry


class StoragePort:
    """The session's own records a service may read and add: its title and plugin data."""

    def __init__(self, session: SessionState) -> None:
        self._session = session

    @property
    def persistent(self) -> bool:
        """Whether the session is saved (an in-memory session is never listed)."""
        return not self._session.store.in_memory_only

    @property
    def title(self) -> str | None:
        return self._session.store.title  # type: ignore[no-any-return]

    def set_title(self, title: str) -> None:
        self._session.store.set_title(title)

    def append_custom(self, namespace: str, data: Any) -> None:
        self._session.store.append_custom(namespace, data)

    def custom(self, namespace: str) -> list[Any]:
        """The data of the session's ``custom`` records of ``namespace``, oldest first (what
        a service recorded in earlier runs of a resumed session)."""
        from ..transcript.records import CustomRecord

        return [r.data for r in self._session.store.records
                if isinstance(r, CustomRecord) and r.namespace == namespace]


class TaskError(UsageError):
    """A background task cannot be found or stopped (an unknown id, another session's task,
    a session that was closed): a mistake of the caller, so a :class:`UsageError`."""


class UnknownTaskError(TaskError):
    """No background task of this id in this session."""


class TaskRegistry(Protocol):
    """What a background-task service gives the host (``TaskPort.attach``)."""

    def tasks(self) -> Sequence[TaskInfo]: ...

    async def stop(self, task_id: str, reason: str) -> TaskInfo: ...

    async def stop_all(self, reason: str) -> list[TaskInfo]: ...


#: task id -> the session that started it (this process), so that a stop naming another
#: session's task says so instead of "unknown"
_task_owners: dict[str, str] = {}


class TaskPort:
    """The session's background tasks as the host sees them (``SessionView.ports.tasks``).

    The task service (``builtins:tasks``) attaches its registry when it is made; the host
    (the SDK's ``stop_task``, the end of a plain run, the Claude adapter's Stop input) reaches
    the same registry through this port, and services publish task events and context for
    the model through it. Without a task service there are no tasks: every id is unknown.
    """

    def __init__(self, session: SessionState) -> None:
        self._session = session
        self._registry: TaskRegistry | None = None

    def attach(self, registry: TaskRegistry) -> None:
        self._registry = registry

    def claim(self, task_id: str) -> None:
        """Record that ``task_id`` belongs to this session."""
        _task_owners[task_id] = self._session.session_id

    def tasks(self) -> list[TaskInfo]:
        """Every task of the session, oldest first."""
        return list(self._registry.tasks()) if self._registry is not None else []

    def running(self) -> list[TaskInfo]:
        return [t for t in self.tasks() if t.running]

    def get(self, task_id: str) -> TaskInfo:
        """The task ``task_id`` of this session; a :class:`TaskError` says why there is
        none."""
        if not isinstance(task_id, str) or not task_id:
            raise UnknownTaskError(f"a task id must be a non-empty string, got {task_id!r}")
        for info in self.tasks():
            if info.task_id == task_id:
                return info
        owner = _task_owners.get(task_id)
        if owner is not None and owner != self._session.session_id:
            raise TaskError(f"task {task_id!r} belongs to session {owner}, not to this "
                            f"session ({self._session.session_id}); stop it from there")
        known = ", ".join(t.task_id for t in self.tasks()) or "none"
        raise UnknownTaskError(f"there is no background task {task_id!r} in this session "
                               f"(its tasks: {known})")

    async def stop(self, task_id: str, reason: str = "stopped on request") -> TaskInfo:
        """Stop ``task_id`` (its whole process group) and wait until it is gone. Stopping a
        task that already ended succeeds and returns how it ended."""
        if self._session._disposed:
            raise TaskError(f"cannot stop task {task_id!r}: the session was closed (its tasks "
                            "were stopped with it)")
        info = self.get(task_id)
        if not info.running or self._registry is None:
            return info
        return await self._registry.stop(task_id, reason)

    async def stop_all(self, reason: str) -> list[TaskInfo]:
        """Stop every running task and wait until they are gone (the end of a plain run)."""
        if self._registry is None:
            return []
        return await self._registry.stop_all(reason)

    async def publish(self, event: Any) -> None:
        """Emit a task event (``events.TaskStarted`` ...) to the session's subscribers."""
        session = self._session
        if session.wants_event(event.type):
            await session.emit(event)

    def add_context(self, text: str | Callable[[], str | None], source: str) -> None:
        """Tell the model something at its next turn (a task ended); a callable is asked at
        delivery (None: no longer news)."""
        self._session.add_context(text, source)


class SubagentPort:
    """Child sessions for a tool that delegates work (:mod:`zpi_host.session.subagents`)."""

    def __init__(self, session: SessionState) -> None:
        self._session = session

    def agent_types(self) -> list[Any]:
        """Each :class:`~zpi_host.session.subagents.AgentType` (name, description, tools),
        ``general-purpose`` first."""
        from ..agent.agent_types import agent_types

        return agent_types(self._session.resources)

    def definition(self, agent_type: str) -> Any:
        """The :class:`~zpi_host.resources.AgentDefinition` of ``agent_type`` (None:
        ``general-purpose`` or an unknown type)."""
        resources = self._session.resources
        return resources.agent(agent_type) if resources is not None else None

    async def run(self, agent_type: str, prompt: str, *, description: str = "",
                  tool_call_id: str = "", max_turns: int | None = None,
                  extra_tools: Sequence[Any] = ()) -> Any:
        """Run a child to its end: a :class:`~zpi_host.session.subagents.SubagentResult`; raises
        :class:`~zpi_host.session.subagents.SubagentError` when it cannot start.
        ``extra_tools``: tools the child gets besides its definition's (the tools of the MCP
        servers its definition names; the caller owns what they hold)."""
        return await self._session.run_subagent(agent_type, prompt, max_turns=max_turns,
                                                description=description,
                                                tool_call_id=tool_call_id,
                                                extra_tools=extra_tools)


class SearchBackend(Protocol):
    """Where a search tool sends its queries (``zpi_register_search_backends``)."""

    name: str

    async def search(self, query: str, limit: int) -> Sequence[SearchHit]: ...


class SearchBackendError(ZpiError):
    """A search backend that was registered wrongly or failed to answer; the message names
    it and says why."""


class SearchPort:
    """The search backends plugins register for this session, asked for once
    (``zpi_register_search_backends`` with the session's settings)."""

    def __init__(self, session: SessionState) -> None:
        self._session = session
        self._backends: dict[str, SearchBackend] | None = None

    async def backends(self) -> dict[str, SearchBackend]:
        """Name -> backend, in the hook's call order; raises :class:`SearchBackendError` for a
        backend without a name or a ``search`` method, or a name registered twice."""
        if self._backends is None:
            session = self._session
            found: dict[str, tuple[str, SearchBackend]] = {}
            for answer in await session.host.hooks.register_search_backends(session.settings):
                backend, plugin = answer.value, answer.plugin
                name = getattr(backend, "name", None)
                if not isinstance(name, str) or not name or \
                        not callable(getattr(backend, "search", None)):
                    raise SearchBackendError(
                        f"plugin {plugin!r} registered a search backend without a name or an "
                        f"async search(query, limit) method: {backend!r:.100}")
                if name in found:
                    raise SearchBackendError(
                        f"search backend {name!r} is registered by both {found[name][0]!r} and "
                        f"{plugin!r}; disable one of the plugins")
                found[name] = (plugin, backend)
            self._backends = {name: backend for name, (_, backend) in found.items()}
        return dict(self._backends)


class SessionPorts:
    """The ports of one session, as ``SessionView.ports`` gives them to plugins."""

    __slots__ = ("ask_user", "conversation", "mcp", "model", "search", "storage", "subagents",
                 "tasks", "terminal")

    def __init__(self, session: SessionState, given: HostPorts | None) -> None:
        given = given if given is not None else HostPorts()
        self.ask_user: AskUser | None = given.ask_user
        self.terminal: IO[str] | None = given.terminal
        self.model = ModelPort(session)
        self.storage = StoragePort(session)
        self.tasks = TaskPort(session)
        self.subagents = SubagentPort(session)
        self.search = SearchPort(session)
        self.mcp = McpPort(session)
        from .conversation_port import ConversationPort

        self.conversation = ConversationPort(session)
