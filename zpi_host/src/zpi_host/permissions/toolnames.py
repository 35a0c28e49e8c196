"""The one table between this host's tool names and Claude Code's (``bash`` and ``Bash``).

A permission rule names a tool in either spelling and matches it in every front end: the CLI
and chat run the kernel's ``bash``, an SDK session runs the standard ``Bash`` standing in for
it, and ``deny: ["bash(rm:*)"]`` in the user's settings must stop both (as must
``Bash(rm:*)``). The table lives here, below the tools, the SDK layer and the Claude adapter,
because rules are matched here; ``zpi_host.sdk.tools`` takes its standard names from it and
``zpi_compat_claude.hooks.toolnames`` its hook names, so there is one list to keep.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping

__all__ = ["CLAUDE_SPELLINGS", "pick_tools", "same_tool"]

#: this host's tool name -> Claude Code's names for it, the current one first. The kernel's
#: tools, then the builtins' services (``task`` is Claude Code's ``Agent``, formerly ``Task``;
#: ``task_output`` and ``task_stop`` were ``BashOutput`` and ``KillShell``, before that
#: ``KillBash``; ``edit`` takes several edits, all or none, as Claude's ``MultiEdit`` does).
CLAUDE_SPELLINGS: Mapping[str, tuple[str, ...]] = {
    "read": ("Read",),
    "write": ("Write",),
    "edit": ("Edit", "MultiEdit"),
    "bash": ("Bash",),
    "glob": ("Glob",),
    "grep": ("Grep",),
    "ls": ("LS",),
    "web_fetch": ("WebFetch",),
    "web_search": ("WebSearch",),
    "task": ("Agent", "Task"),
    "ask_user": ("AskUserQuestion",),
    "todo_write": ("TodoWrite",),
    "notebook_read": ("NotebookRead",),
    "notebook_edit": ("NotebookEdit",),
    "task_output": ("TaskOutput", "BashOutput"),
    "task_stop": ("TaskStop", "KillShell", "KillBash"),
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


def pick_tools(names: Iterable[str], available: Container[str]
               ) -> tuple[list[str], list[str]]:
    """The tools of ``available`` that ``names`` (an agent's ``tools:``, in this host's
    spelling or Claude Code's) mean, in their order and without repeats, and the names that
    mean none of them. A name is taken as it is when the session has it, else its other
    spellings are tried (``Read`` is ``read`` in the CLI, ``bash`` is ``Bash`` in the SDK);
    a rule's argument (``Bash(git:*)``) is not part of the name."""
    picked: dict[str, None] = {}
    missing: list[str] = []
    for entry in names:
        name = entry.split("(", 1)[0].strip()
        if name in available:
            picked[name] = None
            continue
        found = next((n for n in same_tool(name) if n in available), None)
        if found is None:
            missing.append(entry)
        else:
            picked[found] = None
    return list(picked), missing
