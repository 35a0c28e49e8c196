"""Skills of loaded Claude plugins usable in every permission mode.

Two parts, as in Claude Code: the ``skill`` tool (``Skill`` in Claude's names) loads a skill's
instructions by name, and reading the files of a loaded plugin's frozen copy (the SKILL.md the
system prompt lists, the scripts and references a skill points to) does not need approval:
those files are the plugin's own, copied when it loaded, and outside the workspace, where a
read would otherwise be asked about (and denied with no approver). Writing there still asks.

:class:`PluginFilesAccess` is one plugin, ``claude/skills`` (no folder plugin can have that
name), registered after the folders load when at least one of them has skills.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

from zpi_host import hookimpl
from zpi_host.tools import Tool, ToolContext, ToolMetadata

from .hookable import Hookable

#: the tool's name in this host (hooks see ``Skill``)
SKILL_TOOL = "skill"

SKILL_DESCRIPTION = (
    "Load a skill's instructions by name (a skill listed in the system prompt; a plugin's "
    "skill is named plugin:skill). The instructions come back as the result: follow them. "
    "Files the skill mentions are relative to its base directory, which may be read.")


def render_skill(skill: Any, args: str, session_id: str) -> str:
    """What the tool returns: the skill's base directory, then its instructions with
    ``${CLAUDE_SKILL_DIR}``, ``${CLAUDE_SESSION_ID}`` and the argument placeholders
    (``$ARGUMENTS``, ``$ARGUMENTS[N]``, ``$N``) filled in."""
    from zpi_host.resources import expand_template

    from .commands import substitute

    # the folder of the SKILL.md the system prompt lists (its files are linked from the
    # frozen copy; text variables were filled in when the plugin loaded)
    folder = str(skill.root)
    body = substitute(skill.body(), {"CLAUDE_SKILL_DIR": folder,
                                     "CLAUDE_SESSION_ID": session_id})
    body = expand_template(body, args) if args or "$ARGUMENTS" in body else body
    return f"Base directory for this skill: {folder}\n\n{body.strip()}"


#: what the two parameters say to the model
SKILL_NAME_HELP = "The skill's name, as listed (plugin:skill for a plugin's skill)."
SKILL_ARGS_HELP = "Arguments for the skill, if it takes any."

#: the tool's parameters: what ``@tool`` reads from :func:`load_skill`'s signature, written
#: out so that listing plugins builds the tool without the decorator (a test keeps them equal)
SKILL_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "skill": {"type": "string", "description": SKILL_NAME_HELP},
        "args": {"type": "string", "description": SKILL_ARGS_HELP, "default": ""},
    },
    "required": ["skill"],
    "additionalProperties": False,
}


def load_skill(skill: Annotated[str, SKILL_NAME_HELP], ctx: ToolContext,
               args: Annotated[str, SKILL_ARGS_HELP] = "") -> str:
    """The ``skill`` tool's function: the named skill's instructions (:func:`render_skill`)."""
    from zpi_host.tools.base import ToolFailure

    skills = {s.name: s for s in getattr(ctx.session, "skills", ())}
    found = skills.get(skill.strip().lstrip("/"))
    if found is None:
        known = ", ".join(sorted(n for n, s in skills.items() if s.model_invocable))
        raise ToolFailure(f"unknown skill {skill!r}; available skills: {known or 'none'}")
    if not found.model_invocable:
        raise ToolFailure(f"skill {found.name!r} is for the user only "
                          "(disable-model-invocation: true); it cannot be loaded by a tool")
    try:
        return render_skill(found, args, str(getattr(ctx.session, "session_id", "")))
    except Exception as exc:  # an unreadable SKILL.md: the model is told, the run goes on
        raise ToolFailure(f"cannot read skill {found.name!r} at {found.path}: {exc}") \
            from None


@functools.cache
def decorated_skill_tool() -> Tool:
    """:func:`load_skill` through ``@tool``: its argument checks and result conversion, which
    the ``skill`` tool uses from its first call on."""
    from zpi_host.tools import tool

    return tool(name=SKILL_TOOL, description=SKILL_DESCRIPTION, read_only=True,
                concurrency_safe=True)(load_skill)


def _prepare(arguments: Mapping[str, Any]) -> Any:
    prepare = decorated_skill_tool().prepare
    assert prepare is not None  # @tool always gives one
    return prepare(arguments)


def _execute(arguments: Any, ctx: ToolContext) -> Any:
    return decorated_skill_tool().execute(arguments, ctx)


def skill_tool() -> Tool:
    """The ``skill`` tool (read-only: it reads a SKILL.md and changes nothing). Built as a
    plain :class:`Tool` with :data:`SKILL_PARAMETERS`: ``--list-plugins`` registers it, and
    reading a signature through ``@tool`` (and importing the decorator) cost more than the
    rest of the skills plugin; calls go through :func:`decorated_skill_tool`."""
    return Tool(name=SKILL_TOOL, description=SKILL_DESCRIPTION, parameters=SKILL_PARAMETERS,
                execute=_execute, metadata=ToolMetadata(read_only=True, concurrency_safe=True,
                                                          side_effects=False),
                prepare=_prepare)


def _real(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.path.expanduser(os.fspath(path)))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class PluginFilesAccess(Hookable):
    """The ``skill`` tool, and reads inside the loaded plugins' frozen copies answered
    ``allow`` when the permission check would ask (``zpi_permission_request``)."""

    def __init__(self, roots: Iterable[Path]) -> None:
        #: the folders whose files may be read (resolved: skills are linked into a layout)
        self.roots: tuple[str, ...] = tuple(dict.fromkeys(_real(r) for r in roots))

    @hookimpl
    def zpi_register_tools(self) -> Sequence[Any]:
        return [skill_tool()]

    @hookimpl
    def zpi_permission_request(self, session: Any, call: Any, tool: Any, reason: str) -> Any:
        """Allow a read-only call whose paths all lie inside a plugin's frozen copy."""
        from zpi_host.contract.decisions import ToolDecision
        from zpi_host.permissions import paths_of

        if not getattr(getattr(tool, "metadata", None), "read_only", False):
            return None
        paths = paths_of(call.name, call.arguments)
        if not paths:
            return None
        cwd = Path(getattr(session, "cwd", None) or os.getcwd())
        real = [_real(p if os.path.isabs(os.path.expanduser(p)) else cwd / p) for p in paths]
        if all(any(_inside(p, root) for root in self.roots) for p in real):
            return ToolDecision.allow("reading a loaded plugin's own files (its skills "
                                      "refer to them)")
        return None
