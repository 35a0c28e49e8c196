"""Agent files whose frontmatter is not YAML but which Claude Code loads.

claude-code's own plugin-dev agents write ``description:`` over many lines (examples with
``Context:``, ``user:`` and ``assistant:`` lines, ``<example>`` tags) without quoting it.
YAML refuses that; Claude Code reads the agent, with the examples as part of its
description. Here such a file is read the same way: a line that starts one of the agent
fields Claude Code defines begins a field, every other line continues the field before it.
The result is written into the plugin's layout as valid frontmatter, so the kernel's
loader reads the agent as it reads any other.
"""

from __future__ import annotations

import json
import re

#: the frontmatter fields of a Claude Code agent (sub-agents reference)
AGENT_FIELDS = frozenset({
    "name", "description", "tools", "disallowedTools", "model", "permissionMode",
    "maxTurns", "skills", "mcpServers", "hooks", "memory", "background", "effort",
    "isolation", "color", "initialPrompt",
})
_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*):(?:[ \t]+(.*?))?[ \t]*$")
_BLOCK = re.compile(r"\A(\ufeff?\s*---[ \t]*\r?\n)(.*?)(\r?\n---[ \t]*(?:\r?\n|\Z))", re.S)


def repaired_agent_text(text: str) -> str | None:
    """``text`` with its frontmatter rewritten as YAML the way Claude Code reads it, or None
    when the frontmatter parses already (or there is none, or it has no agent field)."""
    from zpi_host.resources.frontmatter import FrontmatterError, parse_frontmatter

    try:
        parse_frontmatter(text, "agent")
        return None
    except FrontmatterError:
        pass
    match = _BLOCK.match(text)
    if match is None:
        return None
    fields: list[tuple[str, list[str]]] = []
    for line in match.group(2).splitlines():
        field = _FIELD.match(line)
        if field is not None and field.group(1) in AGENT_FIELDS:
            fields.append((field.group(1), [field.group(2) or ""]))
        elif fields:
            fields[-1][1].append(line)
    if not fields:
        return None
    lines = []
    for key, parts in fields:
        while len(parts) > 1 and not parts[-1].strip():
            parts.pop()
        if len(parts) == 1 and _parses(f"{key}: {parts[0]}"):
            lines.append(f"{key}: {parts[0]}".rstrip())
        elif len(parts) > 1 and _parses("\n".join([f"{key}: {parts[0]}", *parts[1:]])):
            lines.extend([f"{key}: {parts[0]}", *parts[1:]])  # an indented YAML block
        else:
            lines.append(f"{key}: {json.dumps(chr(10).join(parts).strip(), ensure_ascii=False)}")
    return match.group(1) + "\n".join(lines) + match.group(3) + text[match.end():]


def _parses(block: str) -> bool:
    from zpi_host.resources.frontmatter import FrontmatterError, parse_frontmatter

    try:
        parse_frontmatter(f"---\n{block}\n---\n", "agent")
    except FrontmatterError:
        return False
    return True
