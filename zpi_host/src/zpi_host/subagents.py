"""Sub-agents: a child session that works on one task for its parent and reports back.

A tool such as ``task`` (a built-in service) calls :func:`run_subagent`. The child uses an
agent definition (``agents/*.md``: its system prompt and tool list) or the parent's prompt
for ``general-purpose``; it shares the parent's model connection, plugins, permission policy
and working directory, has its own history (kept in memory), and its usage counts in the
parent's totals. ``zpi_subagent_start`` adds context for the child, and ``zpi_subagent_stop``
decides whether it may stop, in place of the session start and stop hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from .errors import UsageError

if TYPE_CHECKING:
    from .session import AgentSession

GENERAL_PURPOSE = "general-purpose"


@attrs.frozen
class SubagentResult:
    agent_type: str
    agent_id: str
    result: str
    is_error: bool
    num_turns: int
    stop_reason: str


async def run_subagent(
    parent: AgentSession, agent_type: str, prompt: str, *, max_turns: int | None = None,
) -> SubagentResult:
    """Run ``prompt`` in a child session of ``parent`` until it stops; the child's last text
    (or its error) is the result."""
    from .messages import ContextMessage
    from .session import AgentSession
    from .tools.file_state import FileReadState

    definition = None
    if agent_type != GENERAL_PURPOSE:
        definition = parent.resources.agent(agent_type) if parent.resources else None
        if definition is None:
            known = [GENERAL_PURPOSE] + [a.name for a in
                                         (parent.resources.agents if parent.resources else ())]
            raise UsageError(f"unknown agent type {agent_type!r} (agents: {', '.join(known)})")
    tools = dict(parent.tools)
    if definition is not None and definition.tools is not None:
        unknown = [n for n in definition.tools if n not in tools]
        if unknown:
            raise UsageError(f"agent {agent_type!r} ({definition.path}) names tool(s) "
                             f"{', '.join(unknown)} that this session does not have")
        tools = {n: tools[n] for n in definition.tools}
    child = AgentSession(
        host=parent.host, provider=parent.provider, tools=list(tools.values()),
        system_prompt=definition.prompt if definition is not None else parent.system_prompt,
        cwd=parent.cwd, file_state=FileReadState(), settings=parent.settings,
        max_turns=max_turns, reasoning_level=parent.reasoning_level,
        spill_dir=parent.spill_dir, resources=parent.resources,
        model_entry=parent.model_entry, permissions=parent.permissions,
        parent=SubagentLink(parent, agent_type), redactor=parent.redactor,
    )
    child.hidden_variables = parent.hidden_variables
    contexts = await parent.host.hooks.subagent_start(parent.view, agent_type,
                                                      child.session_id, prompt)
    for context in contexts:
        child.add_message(ContextMessage(context.value, context.plugin))
    try:
        run = await child.run(prompt)
    finally:
        await child.dispose()
    return SubagentResult(agent_type, child.session_id, run.result, run.is_error,
                          run.num_turns, run.stop_reason)


class SubagentLink:
    """What a child session knows of its parent: whom to ask about stopping, where usage
    goes. The child owns neither the model connection nor the plugins."""

    __slots__ = ("agent_type", "parent")

    def __init__(self, parent: AgentSession, agent_type: str) -> None:
        self.parent, self.agent_type = parent, agent_type

    async def stop(self, child: AgentSession, message: Any, continuation: int) -> Any:
        return await self.parent.host.hooks.subagent_stop(
            self.parent.view, self.agent_type, child.session_id, message, continuation)
