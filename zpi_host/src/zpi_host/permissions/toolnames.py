"""The one table between this host's tool names and Claude Code's (``bash`` and ``Bash``).

A permission rule names a tool in either spelling and matches it in every front end: the CLI
and chat run the kernel's ``bash``, an SDK session runs the standard ``Bash`` standing in for
it, and ``deny: ["bash(rm:*)"]`` in the user's settings must stop both (as must
``Bash(rm:*)``). The table lives here, below the tools, the SDK layer and the Claude adapter,
because rules are matched here; ``zpi_host.sdk.tools`` takes its standard names from it and
``zpi_compat_claude.hooks.toolnames`` its hook names, so there is one list to keep.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["CLAUDE_SPELLINGS", "same_tool"]

#: this host's tool name -> Claude Code's names for it, the current one first. The kernel's
#: tools, then the builtins' services (``task`` is Claude Code's ``Agent``, formerly ``Task``).
CLAUDE_SPELLINGS: Mapping[str, tuple[str, ...]] = {
    "read": ("Read",),
    "write": ("Write",),
    "edit": ("Edit",),
    "bash": ("Bash",),
    "glob": ("Glob",),
    "grep": ("Grep",),
    "ls": ("LS",),
    "web_fetch": ("WebFetch",),
    "web_search": ("WebSearch",),
    "task": ("Agent", "Task"),
    "ask_user": ("AskUserQuestion",),
    "todo_write": ("TodoWrite",),
    "notebook_edit": ("NotebookEdit",),
    "task_output": ("TaskOutput",),
    "task_stop": ("TaskStop",),
    "skill": ("Skill",),
    "list_mcp_resources": ("ListMcpResourcesTool",),
    "read_mcp_resource": ("ReadMcpResourceTool",),
}


def _classes() -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for host, claude in CLAUDE_SPELLINGS.items():
        names = (host, *claude)
        for name in names:
            out[name] = names
    return out


_SAME_TOOL = _classes()


def same_tool(name: str) -> tuple[str, ...]:
    """Every spelling of the tool ``name`` names (``bash`` -> ``("bash", "Bash")``); a name
    outside the table (a plugin's own tool, ``mcp__*``) is only itself."""
    return _SAME_TOOL.get(name, (name,))
