"""What the ResourceLoader finds: sources, skills, commands, agent definitions, context files.

Frozen attrs types, so a session snapshot can hold them and several sessions can share them.
Name rules live here too, because a command a plugin builds in code is checked by the same rules
as one read from a file.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from ..support.attrs_methods import FrozenFieldsEq

#: The kinds a :class:`ResourceSource` may hold.
ALL_KINDS: frozenset[str] = frozenset({"skills", "commands", "agents", "context"})

SKILL_NAME_MAX = 64
SKILL_DESCRIPTION_MAX = 1024
_SKILL_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# One segment of a command or agent name: a file or folder name without ".md".
_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def skill_name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid skill name (Claude Code's rule), or None."""
    if len(name) > SKILL_NAME_MAX:
        return f"skill name {name!r} is {len(name)} characters long; the limit is 64"
    if not _SKILL_NAME.fullmatch(name):
        return (f"skill name {name!r} must be lowercase letters, digits and single hyphens, "
                "not starting or ending with a hyphen")
    return None


def segment_problem(kind: str, name: str) -> str | None:
    """Why ``name`` cannot be one part of a command or agent name, or None."""
    if not _SEGMENT.fullmatch(name):
        return (f"{kind} name {name!r} may only use letters, digits, '_', '.' and '-' "
                "(and ':' between parts), starting with a letter, digit or '_'")
    return None


def command_name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid command name (``a``, ``a:b``, ``ns:a:b``), or None."""
    if name.startswith("/"):
        return f"command name {name!r} must be given without the leading '/'"
    for part in name.split(":"):
        problem = segment_problem("command", part)
        if problem:
            return f"command name {name!r}: {problem}" if part != name else problem
    return None


def _check_namespace(instance: Any, attribute: Any, value: str | None) -> None:
    if value is not None and not _NAMESPACE.fullmatch(value):
        raise ValueError(f"namespace {value!r} must be 1-128 letters, digits, '.', '_' or '-', "
                         "starting with a letter or digit")


def _kinds(value: Iterable[str]) -> frozenset[str]:
    if isinstance(value, str):  # "skills" would otherwise become a set of letters
        value = (value,)
    return frozenset(value)


def _check_kinds(instance: Any, attribute: Any, value: frozenset[str]) -> None:
    unknown = sorted(value - ALL_KINDS)
    if unknown:
        raise ValueError(f"unknown resource kind(s) {', '.join(unknown)}; "
                         f"use some of {', '.join(sorted(ALL_KINDS))}")


@attrs.frozen(repr=False, eq=False, slots=False)
class ResourceSource(FrozenFieldsEq):
    """A folder laid out like ``.zpi/`` (``skills/``, ``commands/``, ``agents/``, a context
    file) that a plugin adds through ``zpi_register_resources``.

    ``namespace`` prefixes every name found there (``ns:skill``, ``/ns:cmd``) so two plugins
    cannot shadow each other by accident. ``origin`` says who contributed the folder in
    diagnostics: ``"agent"``, ``"project"`` or a plugin name; the host sets it to the plugin's
    name (with ``attrs.evolve``) when a plugin returns the source. ``confine``: the folder
    every file of the source must resolve inside (a project's files, which its repository
    ships, may not link out of the project); None: anywhere (the user's own files).
    ``skills_named_by_frontmatter``: a skill's frontmatter ``name`` names it even when it
    differs from its folder's, as Claude Code names skills (the Claude adapter's folders);
    otherwise the two must be equal (the Agent Skills rule).
    """

    root: Path = attrs.field(converter=Path)
    namespace: str | None = attrs.field(default=None, validator=_check_namespace)
    kinds: frozenset[str] = attrs.field(
        default=frozenset({"skills", "commands", "agents"}), converter=_kinds,
        validator=_check_kinds,
    )
    origin: str = "plugin"
    confine: Path | None = attrs.field(default=None, kw_only=True)
    skills_named_by_frontmatter: bool = attrs.field(default=False, kw_only=True)


def qualified(namespace: str | None, name: str) -> str:
    return f"{namespace}:{name}" if namespace else name


@attrs.frozen(repr=False, eq=False, slots=False)
class Skill(FrozenFieldsEq):
    """A skill: its name, description and location are listed to the model; the model reads
    the body itself (with the read tool) when a task matches, so bodies are never kept."""

    name: str
    description: str
    path: Path
    root: Path
    namespace: str | None = None
    origin: str = "plugin"
    metadata: Mapping[str, Any] = attrs.field(factory=dict, hash=False, repr=False)

    @property
    def model_invocable(self) -> bool:
        """False when the frontmatter says ``disable-model-invocation: true``: such a skill is
        not listed to the model."""
        return self.metadata.get("disable-model-invocation") is not True

    @property
    def user_invocable(self) -> bool:
        return self.metadata.get("user-invocable") is not False

    def body(self) -> str:
        """The instructions below the frontmatter, read from disk now (they may have changed).

        Raises :class:`~zpi_host.resources.frontmatter.FrontmatterError` if the file became
        unreadable.
        """
        from .frontmatter import read_frontmatter

        return read_frontmatter(self.path)[1]


#: compiled on first use (re's own cache): only a command that is run expands it
_PLACEHOLDER = (
    r"\$ARGUMENTS\[(?P<index>\d+)\]|\$ARGUMENTS(?![A-Za-z0-9_])|\$(?P<short>\d+)(?![A-Za-z0-9_])"
)


def split_arguments(arguments: str) -> list[str]:
    """Shell-like words (quotes group, as in ``/cmd "two words" x``); on unbalanced quotes the
    text is split on whitespace instead of failing the command."""
    try:
        return shlex.split(arguments)
    except ValueError:
        return arguments.split()


def expand_template(template: str, arguments: str) -> str:
    """Fill Claude Code's placeholders in ``template``.

    ``$ARGUMENTS`` is the whole argument text; ``$ARGUMENTS[N]`` and its shorthand ``$N`` are
    single words, 0-based as Claude Code documents (``$0`` is the first word). A missing word is
    empty. Substituted text is not scanned again. A template without any placeholder gets
    ``ARGUMENTS: <text>`` appended when arguments were given, as Claude Code does, so they are
    never lost.
    """
    arguments = arguments.strip()
    words: list[str] | None = None
    found = False

    def fill(match: re.Match[str]) -> str:
        nonlocal words, found
        found = True
        index = match.group("index") or match.group("short")
        if index is None:
            return arguments
        if words is None:
            words = split_arguments(arguments)
        position = int(index)
        return words[position] if position < len(words) else ""

    text = re.sub(_PLACEHOLDER, fill, template)
    if not found and arguments:
        text = f"{text.rstrip()}\n\nARGUMENTS: {arguments}"
    return text


@attrs.frozen(repr=False, eq=False, slots=False)
class Command(FrozenFieldsEq):
    """A slash command: ``/name args`` expands ``template`` into a prompt, or calls ``handler``.

    Commands from files have a ``path`` and a template. A plugin may build one in code and
    return it from ``zpi_register_commands``, with either a ``template`` or a ``handler``: a
    callable taking the argument text (and, if it takes two parameters, a
    ``CommandContext``) and returning the prompt to send, a non-empty ``str`` or an awaitable
    of one; anything else is a ``CommandError``, and a handler refuses by raising a
    ``ZpiError`` (its message reaches the user).
    """

    name: str
    description: str = ""
    template: str | None = attrs.field(default=None, kw_only=True)
    handler: Callable[..., Any] | None = attrs.field(default=None, kw_only=True)
    argument_hint: str | None = attrs.field(default=None, kw_only=True)
    path: Path | None = attrs.field(default=None, kw_only=True)
    origin: str = attrs.field(default="plugin", kw_only=True)
    namespace: str | None = attrs.field(default=None, kw_only=True)
    allowed_tools: tuple[str, ...] | None = attrs.field(default=None, kw_only=True)
    model: str | None = attrs.field(default=None, kw_only=True)
    disable_model_invocation: bool = attrs.field(default=False, kw_only=True)
    metadata: Mapping[str, Any] = attrs.field(factory=dict, hash=False, repr=False, kw_only=True)

    @property
    def body(self) -> str | None:
        """The template (for a command file: the text below the frontmatter)."""
        return self.template

    def expand(self, arguments: str = "") -> str:
        """The prompt for ``/name arguments``; see :func:`expand_template` for placeholders."""
        if self.template is None:
            raise TypeError(f"command /{self.name} runs code, it has no template; "
                            "call its handler instead")
        return expand_template(self.template, arguments)


@attrs.frozen(repr=False, eq=False, slots=False)
class AgentDefinition(FrozenFieldsEq):
    """An agent type (a sub-agent, or a session's main agent): the body is its system prompt;
    ``tools`` None means all tools; ``mcp_servers`` the MCP servers its sub-agents get besides
    (Claude Code's ``mcpServers``: each the name of a session's server, or ``{name: config}``
    of servers started for the sub-agent alone). ``permissions``: the definition's own four
    dimensions as written (``zpi_host.permissions.agent_permissions`` reads them); None: no
    such limits."""

    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None = None
    model: str | None = None
    permissions: Mapping[str, Any] | None = attrs.field(default=None, hash=False)
    path: Path | None = None
    origin: str = "plugin"
    namespace: str | None = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict, hash=False, repr=False)
    mcp_servers: tuple[Any, ...] | None = attrs.field(default=None, hash=False)


@attrs.frozen(repr=False, eq=False, slots=False)
class ContextFile(FrozenFieldsEq):
    """An ``AGENTS.md`` (or ``CLAUDE.md``) whose text goes into the system prompt."""

    path: Path
    text: str
    origin: str


@attrs.frozen(repr=False, eq=False, slots=False)
class ResourceDiagnostic(FrozenFieldsEq):
    """A file that was skipped, and why; the load itself never fails on file content."""

    path: Path | None
    kind: str
    problem: str
    origin: str

    def __str__(self) -> str:
        where = str(self.path) if self.path is not None else f"{self.kind} from {self.origin}"
        return f"{where}: {self.problem}"
