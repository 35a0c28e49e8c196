"""Field rules per kind: frontmatter metadata -> Skill, Command or AgentDefinition.

Each builder raises :class:`Invalid` with a sentence a user can act on; the loader turns it into
a diagnostic and skips the file. Syntax is not handled here (``zpi_host.resources.frontmatter`` is).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .items import (
    SKILL_DESCRIPTION_MAX,
    AgentDefinition,
    Command,
    Skill,
    command_name_problem,
    qualified,
    segment_problem,
    skill_name_problem,
)


class Invalid(Exception):
    """A field breaks its kind's rules; the message is the diagnostic's problem."""


def _text(metadata: Mapping[str, Any], key: str, *, required: bool = False) -> str | None:
    value = metadata.get(key)
    if value is None:
        if required:
            raise Invalid(f"the frontmatter has no '{key}'; add '{key}: ...'")
        return None
    if not isinstance(value, str):
        raise Invalid(f"'{key}' must be text, got {type(value).__name__}: {value!r}")
    value = value.strip()
    if required and not value:
        raise Invalid(f"'{key}' is empty")
    return value


def _flag(metadata: Mapping[str, Any], key: str) -> bool | None:
    value = metadata.get(key)
    if value is not None and not isinstance(value, bool):
        raise Invalid(f"'{key}' must be true or false, got {value!r}")
    return value


def split_tools(text: str) -> list[str]:
    """``Read, Bash(git add:*)`` -> ``["Read", "Bash(git add:*)"]``: commas (or, without any,
    whitespace) separate names, except inside parentheses."""
    separators = "," if _has_top_level(text, ",") else " \t\n"
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        depth += (char == "(") - (char == ")")
        if depth <= 0 and char in separators:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def _has_top_level(text: str, separator: str) -> bool:
    depth = 0
    for char in text:
        depth += (char == "(") - (char == ")")
        if depth <= 0 and char == separator:
            return True
    return False


def _tools(metadata: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
    value = metadata.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return tuple(split_tools(value))
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(item.strip() for item in value if item.strip())
    raise Invalid(f"'{key}' must be a comma-separated string or a list of tool names, "
                  f"got {value!r}")


def _argument_hint(metadata: Mapping[str, Any]) -> str | None:
    value = metadata.get("argument-hint")
    # ``argument-hint: [message]`` is valid YAML for a list; Claude Code means the text.
    if isinstance(value, list) and all(isinstance(item, str | int | float) for item in value):
        return " ".join(f"[{item}]" for item in value)
    return _text(metadata, "argument-hint")


def build_skill(
    folder: Path, path: Path, metadata: Mapping[str, Any], namespace: str | None, origin: str,
    *, name_may_differ: bool = False,
) -> Skill:
    """``skills/<folder>/SKILL.md``: the name defaults to the folder name and must equal it,
    unless ``name_may_differ`` (Claude Code's rule: the frontmatter ``name`` names it)."""
    name = _text(metadata, "name")
    if name is None or name == "":
        name = folder.name
    elif name_may_differ and skill_name_problem(name) is not None:
        name = folder.name  # Claude Code's names: an unusable one falls back to the folder's
    problem = skill_name_problem(name)
    if problem:
        raise Invalid(problem)
    if name != folder.name and not name_may_differ:
        raise Invalid(f"skill name {name!r} differs from its folder name {folder.name!r}; "
                      "rename one so they match")
    description = _text(metadata, "description", required=True)
    assert description is not None
    if len(description) > SKILL_DESCRIPTION_MAX:
        raise Invalid(f"'description' is {len(description)} characters long; "
                      f"the limit is {SKILL_DESCRIPTION_MAX}")
    for key in ("disable-model-invocation", "user-invocable"):
        _flag(metadata, key)
    for key in ("model", "when_to_use", "license", "compatibility"):
        _text(metadata, key)
    _argument_hint(metadata)
    _tools(metadata, "allowed-tools")
    return Skill(qualified(namespace, name), description, path, folder, namespace, origin,
                 dict(metadata))


def _first_line(body: str) -> str:
    for line in body.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line
    return ""


def build_command(
    parts: list[str], path: Path, metadata: Mapping[str, Any], body: str,
    namespace: str | None, origin: str,
) -> Command:
    """``commands/a/b.md`` (``parts`` = ``["a", "b"]``) -> ``a:b``; frontmatter optional."""
    for part in parts:
        problem = segment_problem("command", part)
        if problem:
            raise Invalid(problem)
    description = _text(metadata, "description")
    return Command(
        qualified(namespace, ":".join(parts)),
        description if description else _first_line(body),
        template=body,
        argument_hint=_argument_hint(metadata),
        path=path,
        origin=origin,
        namespace=namespace,
        allowed_tools=_tools(metadata, "allowed-tools"),
        model=_text(metadata, "model"),
        disable_model_invocation=bool(_flag(metadata, "disable-model-invocation")),
        metadata=dict(metadata),
    )


def check_code_command(command: Any) -> str | None:
    """Why a command a plugin built in code cannot be used, or None."""
    if not isinstance(command, Command):
        return f"{command!r} is not a zpi_host.resources.Command"
    problem = command_name_problem(command.name)
    if problem:
        return problem
    if (command.template is None) == (command.handler is None):
        return f"command /{command.name} needs exactly one of template= or handler="
    if command.handler is not None and not callable(command.handler):
        return f"command /{command.name} has a handler that is not callable"
    return None


def _permissions(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``permissions`` as written; its meaning is checked where it is used (a mapping here)."""
    value = metadata.get("permissions")
    if value is not None and not isinstance(value, Mapping):
        raise Invalid("permissions must be a mapping of tools, skills, mcps and subagents, "
                      "each {allow: [...]} or {deny: [...]}")
    return value


#: the origins whose agents' ``mcpServers`` apply (Claude Code ignores them for plugin agents)
MCP_AGENT_ORIGINS = ("agent", "project", "sdk option agents")


def agent_mcp_servers(value: Any, where: str) -> tuple[Any, ...] | None:
    """``mcpServers`` of an agent definition: a list whose items are server names or objects
    of ``name: config`` (an object alone is taken as one such item)."""
    if value is None:
        return None
    items = [value] if isinstance(value, Mapping) else value
    if not isinstance(items, list | tuple):
        raise Invalid(f"{where} must be a list of MCP server names or {{name: config}} "
                      f"objects, got {value!r}")
    for item in items:
        if isinstance(item, str) and item.strip():
            continue
        if isinstance(item, Mapping) and item and all(isinstance(k, str) for k in item):
            continue
        raise Invalid(f"{where}: {item!r} is neither a server name nor an object of "
                      "server name -> config")
    return tuple(item.strip() if isinstance(item, str) else dict(item) for item in items)


def build_agent(
    path: Path, metadata: Mapping[str, Any], body: str, namespace: str | None, origin: str
) -> AgentDefinition:
    """``agents/<stem>.md``: the name defaults to the file stem; the body is the prompt."""
    name = _text(metadata, "name") or path.stem
    problem = segment_problem("agent", name)
    if problem:
        raise Invalid(problem)
    description = _text(metadata, "description", required=True)
    assert description is not None
    servers = agent_mcp_servers(metadata.get("mcpServers"), "'mcpServers'") \
        if origin in MCP_AGENT_ORIGINS else None
    return AgentDefinition(
        qualified(namespace, name), description, body,
        tools=_tools(metadata, "tools"), model=_text(metadata, "model"), path=path,
        origin=origin, namespace=namespace, metadata=dict(metadata), mcp_servers=servers,
        permissions=_permissions(metadata),
    )
