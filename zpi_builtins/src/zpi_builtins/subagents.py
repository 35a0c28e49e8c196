"""Service ``builtins:subagents``: the ``task`` tool, which hands a self-contained piece of work
to a sub-agent (a child session, :mod:`zpi_host.session.subagents`) and returns its final answer.

The agent types are ``general-purpose`` and the definitions the session loaded
(``agents/*.md`` in the agent dir, the project or a plugin, and those given in code); a
system-prompt fragment lists them. A definition's ``mcpServers`` give the sub-agent those MCP
servers' tools (:mod:`.subagent_mcp`). Several ``task`` calls of one answer run side by side: the
tool itself changes nothing (the child's own calls are checked one by one), so it is read-only
and concurrency-safe. A child is limited to its definition's tools and never gets ``task``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from zpi_host import hookimpl
from zpi_host.support.attrs_methods import FrozenFieldsEq
from zpi_host.tools import Tool, ToolArgumentError, ToolContext, ToolMetadata, ToolResult

from .settings import enabled, service_settings

if TYPE_CHECKING:
    from zpi_host.contract.decisions import Instruction

__all__ = ["TASK_TOOL", "TaskRequest", "zpi_instructions", "zpi_register_tools"]

NAME = "task"

#: shown by ``zpi-host --list-plugins``
contributes = {"tools": [NAME]}

PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "agent_type": {"type": "string",
                       "description": "the kind of agent to start (see the list of agent "
                                      "types in the instructions)"},
        "description": {"type": "string",
                        "description": "a short (3-5 word) description of the task"},
        "prompt": {"type": "string",
                   "description": "the whole task for the agent: it sees nothing of this "
                                  "conversation, so say what to do, where, and what to report"},
    },
    "required": ["agent_type", "description", "prompt"],
    "additionalProperties": False,
}

DESCRIPTION = """\
Start a sub-agent that works on one task on its own and returns its final answer. Use it for \
research across many files, or independent pieces of work that need many steps; give several \
tasks in one answer to run them in parallel. The agent starts with no knowledge of this \
conversation: the prompt must be complete. Its answer is for you, not the user: summarize what \
matters. Do not use it for a single file read or a search you can do yourself."""


@attrs.frozen(repr=False, eq=False, slots=False)
class TaskRequest(FrozenFieldsEq):
    agent_type: str
    description: str
    prompt: str


def _text(arguments: Mapping[str, Any], field: str, *, tool: str) -> str:
    value = arguments.get(field)
    if not isinstance(value, str) or not value.strip():
        raise ToolArgumentError(tool, field, "must be a non-empty string")
    return value.strip()


def parse_request(arguments: Mapping[str, Any], *, tool: str = NAME,
                  agent_field: str = "agent_type") -> TaskRequest:
    """The model's arguments; a ToolArgumentError names the field that does not fit."""
    if not isinstance(arguments, Mapping):
        raise ToolArgumentError(tool, None, "expected an object")
    extra = set(arguments) - {agent_field, "description", "prompt"}
    if extra:
        raise ToolArgumentError(tool, sorted(extra)[0], "is not a parameter of this tool")
    return TaskRequest(_text(arguments, agent_field, tool=tool),
                       _text(arguments, "description", tool=tool),
                       _text(arguments, "prompt", tool=tool))


async def run_task(request: TaskRequest, ctx: ToolContext) -> ToolResult:
    from zpi_host.session.subagents import SubagentError

    session = ctx.session
    if session is None:
        return ToolResult.error("the task tool needs a session to start sub-agents in")
    from .subagent_mcp import AgentMcpError, agent_servers

    max_turns = service_settings(session.settings, "subagents")["max_turns"]
    try:
        servers = await agent_servers(session, request.agent_type)  # its mcpServers
    except AgentMcpError as exc:
        return ToolResult.error(str(exc))
    try:
        result = await session.ports.subagents.run(
            request.agent_type, request.prompt, description=request.description,
            tool_call_id=ctx.call_id, max_turns=max_turns, extra_tools=servers.tools)
    except SubagentError as exc:
        return ToolResult.error(str(exc))
    finally:
        await servers.aclose()
    details = {"agent_id": result.agent_id, "agent_type": result.agent_type,
               "num_turns": result.num_turns, "stop_reason": result.stop_reason}
    text = result.result.strip() or "(the sub-agent finished without a final answer)"
    if result.is_error:
        return ToolResult.error(f"the {result.agent_type} sub-agent failed: {text}",
                                details=details)
    return ToolResult.text(text, details=details)


TASK_TOOL = Tool(name=NAME, description=DESCRIPTION, parameters=PARAMETERS, execute=run_task,
                 metadata=ToolMetadata(read_only=True, concurrency_safe=True,
                                       side_effects=False, spawns_subagents=True),
                 prepare=parse_request)


def agent_list(resources: Any) -> str:
    """The system-prompt fragment that lists the agent types."""
    from zpi_host.agent.agent_types import agent_types

    lines = ["# Sub-agents", "The tool that starts sub-agents takes one of these agent types:"]
    for agent in agent_types(resources):
        tools = f" (tools: {', '.join(agent.tools)})" if agent.tools is not None else ""
        lines.append(f"- {agent.name}: {' '.join(agent.description.split())}{tools}")
    return "\n".join(lines)


@hookimpl
def zpi_register_tools(cwd: Path, settings: Mapping[str, Any]) -> list[Tool] | None:
    return [TASK_TOOL] if enabled(settings, "subagents") else None


@hookimpl
def zpi_instructions(cwd: Path, settings: Mapping[str, Any], resources: Any
                     ) -> Instruction | None:
    if not enabled(settings, "subagents"):
        return None
    from zpi_host.contract.decisions import Instruction

    return Instruction(agent_list(resources), title="subagents")
