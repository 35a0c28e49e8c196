"""SessionOptions: everything ``create_session`` accepts, validated before anything is built.

Unknown names and conflicting combinations are reported together with what to do, so a caller
never gets half a session (an open transcript, a connected client) from a bad call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from ..errors import UsageError
from ..support.attrs_methods import FrozenFieldsEq

REASONING_LEVELS = ("off", "minimal", "low", "medium", "high", "max")


@attrs.frozen(kw_only=True, repr=False, eq=False, slots=False)
class SessionOptions(FrozenFieldsEq):
    """The options of :func:`zpi_host.create_session`; see the user guide for each."""

    model: str | None = None
    provider: Any = None
    cwd: str | Path | None = None
    agent_dir: str | Path | None = None
    host: Any = None
    settings: Any = None
    #: which settings files are read: ``user``, ``project``, ``local`` (None: all)
    setting_sources: Sequence[str] | None = None
    session_manager: Any = None
    #: native storage (docs/session-stores.md): ``{"transcript": TranscriptStore,
    #: "current_state": CurrentState | None}`` (None: a new session), optionally ``owner``
    #: (the lease's name for this worker) and ``reconnect_seconds``
    storage: Mapping[str, Any] | None = None
    resume: str | None = None
    continue_recent: bool = False
    persist: bool = True
    session_id: str | None = None
    max_turns: int | None = None
    tools: Sequence[str] | None = None
    exclude_tools: Sequence[str] = ()
    #: removed when the session has them; a name it lacks is not an error (for a layer that
    #: stands in for tools a session may or may not have, as the SDK's ``Skill``)
    hide_tools: Sequence[str] = ()
    no_tools: bool = False
    custom_tools: Sequence[Any] = ()
    tool_overrides: Sequence[Any] = ()
    reasoning_level: str | None = None
    #: the thinking budget (tokens) of Anthropic models that take one (``MAX_THINKING_TOKENS``
    #: in ``environ`` when None; the ``thinking_budget_tokens`` setting after that)
    thinking_budget: int | None = None
    append_system_prompt: str | None = None
    environ: Mapping[str, str] | None = None
    blocked_plugins: Sequence[str] = ()
    permission_mode: str | None = None
    allow: Sequence[str] = ()
    deny: Sequence[str] = ()
    add_dirs: Sequence[str | Path] = ()
    can_use_tool: Any = None
    interactive: bool = False
    #: the mode the name ``default`` stands for (from ``permission_mode`` or settings, or when
    #: neither chooses one): the CLI passes ``ask``, as Claude Code's default asks before
    #: edits and commands
    permission_default: str = "default"
    #: ``(PermissionContext) -> str``: how to allow a call that needs approval when there is
    #: no approver to ask (the CLI names its flags); None: the host's generic wording
    no_approver_hint: Any = None
    plugin_dirs: Sequence[str | Path] = ()
    #: ZCode plugin folders (``--zcode-plugin-dir``): loaded as ZCode's whatever they hold
    zcode_plugin_dirs: Sequence[str | Path] = ()
    system_prompt: str | None = None
    #: False: the host's own coding prompt is left out; the context files, skill list,
    #: plugins' instructions and ``append_system_prompt`` still go in (the SDK's
    #: ``system_prompt=None``, as claude-agent-sdk sends no system prompt of its own then)
    base_prompt: bool = True
    plugins: Mapping[str, Any] = attrs.field(factory=dict)
    #: a :class:`~zpi_host.session.ports.HostPorts`: how services ask the user and reach a terminal
    ports: Any = None
    #: sub-agent types given in code (:class:`~zpi_host.resources.AgentDefinition`); they win
    #: over ``agents/*.md`` files of the same name
    agents: Sequence[Any] = ()
    #: the agent definition (by name) that is this session's main agent: its body is the
    #: base prompt, its ``tools`` and ``permissions`` choose what the model is shown
    agent: str | None = None
    #: MCP servers given by the caller (``--mcp-config``, the SDK's ``mcp_servers``): name ->
    #: a Claude Code server entry, or the path of a JSON file holding ``mcpServers``; they win
    #: over every configured server of the same name (docs/mcp.md)
    mcp_servers: Mapping[str, Mapping[str, Any]] | str | Path | None = None
    #: only the servers of ``mcp_servers`` (``--strict-mcp-config``)
    strict_mcp_config: bool = False
    #: whether what the project ships (its hooks, the plugin folders its settings name) may
    #: run: True or False decide for this session; None: the user's ``trusted_projects``
    trust_project: bool | None = None
    #: with ``trust_project=True``: also record the trust in the user settings
    remember_trust: bool = False
    #: ``async (project folder, what would run) -> bool``: ask the user (``chat``) when the
    #: project is not trusted and would run something; yes is recorded
    ask_trust: Any = None
    #: refuse to start (:class:`~zpi_host.settings.trust.UntrustedProjectError`) when the
    #: project is not trusted and would run something (a non-interactive ``run``)
    refuse_untrusted: bool = False
    #: keep each file as it was before a tool first changes it in a user message, so that
    #: ``AgentSession.rewind_files`` can put it back (docs/sessions.md, "File checkpoints")
    file_checkpoints: bool = False

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> SessionOptions:
        known = {f.name for f in attrs.fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise UsageError(f"unknown option(s) {', '.join(unknown)} for create_session; "
                             f"known: {', '.join(sorted(known))}")
        options = cls(**kwargs)
        options.validate()
        return options

    def validate(self) -> None:
        """Every problem at once, as one UsageError."""
        problems = []
        restore = [name for name, on in (("resume", self.resume is not None),
                                         ("continue_recent", self.continue_recent),
                                         ("session_manager", self.session_manager is not None),
                                         ("storage", self.storage is not None))
                   if on]
        if len(restore) > 1:
            problems.append(f"{' and '.join(restore)} each choose the session; give one")
        if not self.persist and restore:
            problems.append(f"persist=False (no session file) cannot be combined with "
                            f"{restore[0]}")
        problems += _storage_problems(self.storage)
        if self.session_id is not None and restore and not (
                restore == ["storage"] and self.storage is not None
                and isinstance(self.storage, Mapping)
                and self.storage.get("current_state") is None):
            problems.append(f"session_id names a new session; it cannot be combined with "
                            f"{restore[0]}")
        if self.max_turns is not None and (not isinstance(self.max_turns, int)
                                           or self.max_turns < 1):
            problems.append(f"max_turns must be at least 1, got {self.max_turns!r}")
        if self.no_tools and self.tools is not None:
            problems.append("no_tools and tools both choose the tool set; give one")
        for name in ("tools", "exclude_tools", "hide_tools"):
            value = getattr(self, name)
            if isinstance(value, str) or (value is not None and not all(
                    isinstance(v, str) for v in value)):
                problems.append(f"{name} must be a list of tool names, got {value!r}")
        if self.tools is not None and not isinstance(self.tools, str):
            both = sorted(set(self.tools) & set(self.exclude_tools))
            if both:
                problems.append(f"tool(s) {', '.join(both)} are both in tools and "
                                "exclude_tools")
        if self.mcp_servers is not None and not isinstance(self.mcp_servers,
                                                           Mapping | str | Path):
            problems.append("mcp_servers must be a mapping of server name -> config, or the "
                            f"path of a JSON file with mcpServers, got {self.mcp_servers!r}")
        if not isinstance(self.strict_mcp_config, bool):
            problems.append(f"strict_mcp_config must be True or False, got "
                            f"{self.strict_mcp_config!r}")
        if self.trust_project not in (None, True, False):
            problems.append(f"trust_project must be True, False or None, got "
                            f"{self.trust_project!r}")
        if self.ask_trust is not None and not callable(self.ask_trust):
            problems.append("ask_trust must be an async callable (project folder, what would "
                            "run) -> bool")
        if self.reasoning_level is not None and self.reasoning_level not in REASONING_LEVELS:
            problems.append(f"reasoning_level must be one of {', '.join(REASONING_LEVELS)}, "
                            f"got {self.reasoning_level!r}")
        if self.thinking_budget is not None and (
                type(self.thinking_budget) is not int or self.thinking_budget < 1024):
            problems.append(f"thinking_budget must be a whole number of tokens >= 1024 (the "
                            f"API's minimum), got {self.thinking_budget!r}")
        if self.system_prompt is not None and not isinstance(self.system_prompt, str):
            problems.append(f"system_prompt must be a string, got "
                            f"{type(self.system_prompt).__name__}")
        from ..resources import AgentDefinition

        if isinstance(self.agents, str | Mapping) or not all(
                isinstance(a, AgentDefinition) for a in self.agents):
            problems.append("agents must be a list of zpi_host.resources.AgentDefinition")
        if self.agent is not None and (not isinstance(self.agent, str) or not self.agent):
            problems.append(f"agent must be the name of an agent definition, got "
                            f"{self.agent!r}")
        if not isinstance(self.plugins, Mapping):
            problems.append("plugins must be a mapping of plugin name to plugin object")
        elif self.plugins and self.host is not None:
            problems.append("plugins are registered on the host create_session loads; with "
                            "host= register them on that host yourself")
        from .ports import HostPorts

        if self.ports is not None and not isinstance(self.ports, HostPorts):
            problems.append(f"ports must be a zpi_host.session.ports.HostPorts, got "
                            f"{type(self.ports).__name__}")
        if self.model is None and self.provider is not None:
            problems.append("a provider object needs a model name too (model='name:id')")
        if problems:
            raise UsageError("invalid session options: " + "; ".join(problems))


STORAGE_KEYS = frozenset({"transcript", "current_state", "owner", "reconnect_seconds"})


def _storage_problems(storage: Any) -> list[str]:
    """What is wrong with the ``storage`` option (native storage: the seed's host contract)."""
    if storage is None:
        return []
    shape = ("storage must be a mapping {'transcript': TranscriptStore, 'current_state': "
             "CurrentState or None}")
    if not isinstance(storage, Mapping):
        return [f"{shape}, got {type(storage).__name__}"]
    problems = []
    unknown = sorted(set(storage) - STORAGE_KEYS)
    if unknown:
        problems.append(f"storage has unknown key(s) {', '.join(map(str, unknown))} (known: "
                        f"{', '.join(sorted(STORAGE_KEYS))})")
    for key in ("transcript", "current_state"):
        if key not in storage:
            problems.append(f"{shape}: {key!r} is missing (current_state None: a new session)")
    store = storage.get("transcript")
    if store is not None and not all(callable(getattr(store, m, None)) for m in (
            "create", "append", "current_state", "read", "acquire", "renew", "release")):
        problems.append(f"storage['transcript'] must be a TranscriptStore (SQLiteTranscriptStore, "
                        f"PostgresTranscriptStore, ...), got {type(store).__name__}")
    state = storage.get("current_state")
    if state is not None and not isinstance(getattr(state, "session_id", None), str):
        problems.append("storage['current_state'] must be the CurrentState read from the store "
                        "(store.current_state(session_id)) or None for a new session")
    seconds = storage.get("reconnect_seconds")
    if seconds is not None and (not isinstance(seconds, int | float) or seconds < 0):
        problems.append(f"storage['reconnect_seconds'] must be seconds >= 0, got {seconds!r}")
    return problems
