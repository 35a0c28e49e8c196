"""Sub-agents: a child session that works on one task for its parent and reports back.

A tool such as ``task`` (the ``builtins:subagents`` service) calls :func:`run_subagent`. The
child uses an agent definition (``agents/*.md``, a plugin's agents folder, or one given in code
with ``create_session(agents=...)``: its system prompt and tool list) or the parent's prompt
for ``general-purpose``; it shares the parent's model connection, plugins, permission policy
and working directory, and never gets a tool that starts sub-agents itself.

Records. A saved parent's child is saved too, as ``<parent id>/subagents/agent-<id>.jsonl``
beside the parent's file (same writer, lock and fsync policy as the parent's transcript); its
first record links it to the parent (:data:`NAMESPACE`: parent session id, tool call id,
agent type). The parent records ``start`` and ``stop`` records of the same namespace; the
``stop`` record holds the child's usage per model, which is the one place a child's spend is
recorded (``sdk.accounting.restore_totals`` reads it on resume; a child cut off by a crash,
``start`` without ``stop``, is counted from its own transcript). An in-memory parent's
children are in memory too. Usage also counts live in the parent's totals (budgets see it).

``zpi_subagent_start`` adds context for the child, and ``zpi_subagent_stop`` decides whether it
may stop, in place of the session start and stop hooks.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from ..agent.agent_types import GENERAL_PURPOSE, agent_types
from ..agent.agent_types import (
    GENERAL_PURPOSE_DESCRIPTION as GENERAL_PURPOSE_DESCRIPTION,  # re-exported
)
from ..agent.agent_types import AgentType as AgentType  # re-exported
from ..agent.state import SessionState, SubagentLink
from ..errors import UsageError, ZpiError
from ..support.attrs_methods import FrozenFieldsEq
from ..transcript.paths import SUBAGENT_NAMESPACE, is_agent_id

if TYPE_CHECKING:
    from ..providers.messages import Usage
    from ..resources import AgentDefinition
#: the namespace of the custom records that link a parent and its sub-agents
NAMESPACE = SUBAGENT_NAMESPACE


class SubagentError(UsageError):
    """A sub-agent cannot be started: unknown type, denied by a rule, a tool it lacks."""


@attrs.frozen(repr=False, eq=False, slots=False)
class SubagentResult(FrozenFieldsEq):
    agent_type: str
    agent_id: str
    result: str
    is_error: bool
    num_turns: int
    stop_reason: str
    #: the child's own usage per ``provider/model`` (what the parent's ``stop`` record holds)
    model_usage: Mapping[str, Usage] = attrs.field(factory=dict)


class SubagentObserver(Protocol):
    """Told about each child of a session (``AgentSession.subagent_observers``): the SDK
    mirrors a child's records to a session store from ``started`` until ``stopped``."""

    async def subagent_started(self, child: SessionState, link: SubagentLink) -> None: ...

    async def subagent_stopped(self, child: SessionState, link: SubagentLink) -> None: ...


def subagent_file(parent_path: Path, agent_id: str) -> Path:
    """Where a saved parent's child lives: ``<parent id>/subagents/agent-<id>.jsonl`` in the
    folder of the parent's file."""
    from ..transcript.paths import subagents_folder

    return subagents_folder(parent_path) / f"agent-{agent_id}.jsonl"


def _definition(parent: SessionState, agent_type: str) -> AgentDefinition | None:
    resources = parent.resources
    definition = resources.agent(agent_type) if resources is not None else None
    hidden = agent_type == GENERAL_PURPOSE and resources is not None and \
        resources.hides("agent", GENERAL_PURPOSE)
    if definition is None and resources is not None:
        _refuse_withheld(parent, agent_type)
    if definition is None and (agent_type != GENERAL_PURPOSE or hidden):
        known = ", ".join(t.name for t in agent_types(resources))
        raise SubagentError(f"unknown agent type {agent_type!r} (agents: {known}); add "
                            f"agents/{agent_type}.md or pick one of these")
    return definition


def _refuse_withheld(parent: SessionState, agent_type: str) -> None:
    """Say why an agent type the session withholds cannot start (rather than 'unknown')."""
    from ..permissions.agent_permissions import denied_outright
    from .disclosure import agent_permissions, owner_of

    rule = denied_outright(parent.permissions.rules, "agents", agent_type)
    if rule is not None:
        raise SubagentError(f"starting the {agent_type!r} sub-agent was denied: denied by "
                            f"{rule.describe()}")
    own = parent.agent_definition
    granted = agent_permissions(own) if own is not None else None
    if granted is not None and not granted.admits("subagents", agent_type):
        raise SubagentError(f"starting the {agent_type!r} sub-agent was denied: "
                            f"{owner_of(own)} does not grant it (permissions.subagents)")


def _child_tools(parent: SessionState, agent_type: str, definition: AgentDefinition | None,
                 exclude: Collection[str]) -> list[Any]:
    """The child's tools: the parent's (never one that starts sub-agents), or those its
    definition names, in either spelling (:func:`~zpi_host.permissions.toolnames.pick_tools`:
    ``Read`` is ``read`` in the CLI). A name the child cannot have (no such tool here, or
    the parent lacks it) is left out with a warning naming it, as Claude Code leaves out a
    tool it does not know, so the agent still starts. A definition with ``permissions``
    picks from what the session may show (``available_tools``), never limited by its
    parent's (permissions are not inherited)."""
    from ..permissions.agent_permissions import AgentPermissionsError
    from ..permissions.toolnames import pick_tools
    from .disclosure import agent_permissions

    try:
        granted = agent_permissions(definition)
    except AgentPermissionsError as exc:
        raise SubagentError(str(exc)) from None
    pool = parent.tools if granted is None else {
        n: t for n, t in parent.available_tools.items() if granted.admits_tool(n)}
    tools = {n: t for n, t in pool.items()
             if n not in exclude and not t.metadata.spawns_subagents}
    if definition is None or definition.tools is None:
        return list(tools.values())
    picked, missing = pick_tools(definition.tools, tools)
    if missing:
        where = definition.path or f"defined by {definition.origin}"
        parent.warnings.append(
            f"agent {agent_type!r} ({where}) names tool(s) {', '.join(missing)} that this "
            f"session's sub-agents cannot have; it runs without them (available: "
            f"{', '.join(sorted(tools)) or 'none'})")
    return [tools[n] for n in picked]


INHERIT = "inherit"


async def _child_model(parent: SessionState, agent_type: str,
                       definition: AgentDefinition | None) -> tuple[Any, Any, bool]:
    """The child's provider, catalog entry, and whether the child opened it (then it closes
    it): the parent's, unless the definition names another ``model``."""
    model = definition.model if definition is not None else None
    if model is None or model == INHERIT or model == parent.view.model:
        return parent.provider, parent.model_entry, False
    from .ports import open_model

    try:
        provider, entry = await open_model(parent, model)
    except ZpiError as exc:
        raise SubagentError(f"agent {agent_type!r} cannot use model {model!r}: {exc}") \
            from None
    return provider, entry, True


def _child_store(parent: SessionState, agent_id: str) -> Any:
    from ..transcript import SessionManager

    store = parent.store
    in_store = getattr(store, "subagent_manager", None)  # native storage: the same store
    if in_store is not None:
        return in_store(agent_id)
    if store.path is None:
        return SessionManager.in_memory(parent.cwd, session_id=agent_id)
    return SessionManager.create(parent.cwd, session_id=agent_id, fsync=store.fsync,
                                 path=subagent_file(store.path, agent_id))


def usage_to_json(model_usage: Mapping[str, Usage]) -> dict[str, dict[str, int]]:
    return {key: attrs.asdict(usage) for key, usage in model_usage.items()}


def usage_from_json(data: Any) -> dict[str, Usage]:
    """A ``stop`` record's ``usage``; a value that is not one is skipped (the record came
    from a file, so it may have been edited)."""
    from ..providers.messages import Usage

    out: dict[str, Usage] = {}
    if not isinstance(data, Mapping):
        return out
    fields = {a.name for a in attrs.fields(Usage)}
    for key, counts in data.items():
        if isinstance(key, str) and isinstance(counts, Mapping) and set(counts) <= fields and \
                all(isinstance(v, int) and not isinstance(v, bool) for v in counts.values()):
            out[key] = Usage(**counts)
    return out


def recorded_usage(store: Any, records: Sequence[Any] | None = None
                   ) -> list[tuple[str, Usage]]:
    """The spend of a session's sub-agents as its transcript (``store``: its SessionManager;
    ``records``: its records, when the caller has read them already) records it:
    (``provider/model``, usage) from each ``stop`` record. A child whose parent ended before
    recording its ``stop`` (a crash) is read from its own transcript, when there is one: the
    answers it recorded are what it spent."""
    from ..transcript import AssistantRecord, CustomRecord, read_transcript
    from ..transcript.errors import TranscriptError

    out: list[tuple[str, Usage]] = []
    started: dict[str, None] = {}
    for record in store.records if records is None else records:
        if not isinstance(record, CustomRecord) or record.namespace != NAMESPACE or \
                not isinstance(record.data, Mapping):
            continue
        agent_id = record.data.get("agent_id")
        if record.data.get("event") == "start" and is_agent_id(agent_id):
            started[agent_id] = None
        elif record.data.get("event") == "stop":
            started.pop(str(agent_id), None)
            out.extend(usage_from_json(record.data.get("usage")).items())
    if store.path is None:
        return out
    for agent_id in started:
        path = subagent_file(store.path, agent_id)
        try:
            child = read_transcript(path)
        except (OSError, TranscriptError):
            continue  # never written, or unreadable: nothing to count
        out.extend((f"{r.message.provider}/{r.message.model}", r.message.usage)
                   for r in child.records if isinstance(r, AssistantRecord))
    return out


async def run_subagent(
    parent: SessionState, agent_type: str, prompt: str, *, max_turns: int | None = None,
    description: str = "", tool_call_id: str = "", exclude_tools: Collection[str] = (),
    extra_tools: Sequence[Any] = (),
) -> SubagentResult:
    """Run ``prompt`` in a child session of ``parent`` until it stops; the child's last text
    (or its error) is the result. Raises :class:`SubagentError` before anything runs when the
    agent type is unknown or denied by an ``agent:`` rule; a tool the definition names that
    the child cannot have is left out with a warning. ``extra_tools`` are added to the child's
    (the tools of the MCP servers its definition names), replacing a tool of the same name;
    never one that starts sub-agents."""
    from ..tools.file_state import FileReadState
    from ..transcript.records import new_uuid
    if not isinstance(agent_type, str) or not agent_type:
        raise SubagentError("the agent type must be a non-empty string")
    definition = _definition(parent, agent_type)
    tools = _child_tools(parent, agent_type, definition, exclude_tools)
    if extra_tools:
        from .disclosure import agent_permissions, shown_tools

        shown = shown_tools(list(extra_tools), parent.permissions.rules,
                            agent_permissions(definition))
        added = {t.name: t for t in shown if not t.metadata.spawns_subagents}
        tools = [t for t in tools if t.name not in added] + list(added.values())
    verdict = await parent.permissions.check_named("agents", agent_type, prompt,
                                                   call_id=tool_call_id)
    if not verdict.allowed:
        raise SubagentError(f"starting the {agent_type!r} sub-agent was denied: "
                            f"{verdict.reason}")
    agent_id = new_uuid()
    started_by = getattr(parent, "parent", None)  # a sub-agent's link: it started this one
    link_data = {"agent_id": agent_id, "agent_type": agent_type, "tool_call_id": tool_call_id,
                 "description": description,
                 "parent_agent_id": getattr(started_by, "agent_id", None)}
    link = SubagentLink(parent, agent_type, agent_id, tool_call_id)
    provider, entry, own_provider = await _child_model(parent, agent_type, definition)
    if own_provider:  # a model of its own decides again what the child is offered
        from ..tools.base import SessionDefinition

        offered = SessionDefinition(model=entry, agent=agent_type)
        tools = [t for t in tools if t.available(parent.settings, offered)]
    try:
        store = _child_store(parent, agent_id)
        try:
            store.append_custom(NAMESPACE, {"event": "link", "parent_session_id":
                                            parent.session_id, **link_data})
            child = parent.child_session(
                host=parent.host, provider=provider, tools=tools,
                system_prompt=(definition.prompt if definition is not None
                               else parent.system_prompt),
                cwd=parent.cwd, file_state=FileReadState(), settings=parent.settings,
                max_turns=max_turns, reasoning_level=parent.reasoning_level,
                spill_dir=parent.spill_dir, resources=parent.resources,
                model_entry=entry, permissions=parent.permissions, store=store,
                parent=link, redactor=parent.redactor,
            )
            child.agent_definition = definition
        except BaseException:
            store.close()
            raise
        child.hidden_variables = parent.hidden_variables
        run = await _run_child(parent, child, link, prompt, link_data)
    finally:
        if own_provider:
            await provider.aclose()
    return SubagentResult(agent_type, agent_id, run.result, run.is_error, run.num_turns,
                          run.stop_reason, dict(child.model_usage))


async def _run_child(parent: SessionState, child: SessionState, link: SubagentLink,
                     prompt: str, link_data: Mapping[str, Any]) -> Any:
    """Run the child between the parent's ``start`` and ``stop`` records, with the
    observers told and the start hook's context added; the child is disposed after."""
    import anyio

    from ..providers.messages import ContextMessage
    from ..transcript.offloop import commit

    await commit(parent.store, parent.store.append_custom, NAMESPACE,
                 {"event": "start", **link_data})
    started: list[SubagentObserver] = []
    run = None
    try:
        for observer in list(parent.subagent_observers):
            await observer.subagent_started(child, link)
            started.append(observer)
        contexts = await parent.host.hooks.subagent_start(parent.view, link.agent_type,
                                                          child.session_id, prompt)
        for context in contexts:
            await child.commit_message(ContextMessage(context.value, context.plugin))
        run = await child.run(prompt)
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await commit(parent.store, parent.store.append_custom, NAMESPACE, {
                    "event": "stop", **link_data, "usage": usage_to_json(child.model_usage),
                    "is_error": run.is_error if run is not None else True,
                    "num_turns": run.num_turns if run is not None else 0})
            finally:
                try:
                    await child.dispose()
                finally:
                    for observer in reversed(started):
                        await observer.subagent_stopped(child, link)
    return run
