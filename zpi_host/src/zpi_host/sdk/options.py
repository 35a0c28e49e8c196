"""AgentOptions: claude-agent-sdk's option names and meanings, mapped onto ``create_session``.

Each option either maps onto a session option (see :meth:`AgentOptions.session_kwargs`), is
handled by the SDK layer itself (budget, partial messages, hooks, the approver), or is refused
with :class:`UnsupportedOptionError` naming it: an option this host cannot honour is never
silently ignored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from ..errors import UsageError
from ..permissions.toolnames import same_tool
from ..support.attrs_methods import FieldsEq
from .unsupported import UnsupportedOptionError, is_unset

__all__ = [
    "PERMISSION_MODES", "AgentOptions", "ClaudeAgentOptions", "HookMatcher",
    "UnsupportedOptionError",
]

#: Claude's permission modes -> (this host's mode, extra allow rules)
PERMISSION_MODES: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "default": ("ask", ()),
    "acceptEdits": ("ask", ("Edit", "Write", "NotebookEdit")),
    "plan": ("plan", ()),
    "bypassPermissions": ("bypass", ()),
    "dontAsk": ("ask", ()),
}

#: the kernel tools the standard tools stand in for (removed from what the model sees)
KERNEL_TOOLS = ("read", "write", "edit", "bash")
#: the tools the SDK layer adds; named bare in ``disallowed_tools`` (in either spelling:
#: ``Bash`` or ``bash``) they are removed (other names there are deny rules only: a tool this
#: session may not have is not an error)
STANDARD_TOOLS = ("Read", "Write", "Edit", "MultiEdit", "Bash", "Glob", "Grep")
#: standard tools the model sees only when ``tools`` names them: ``MultiEdit`` (``edit`` with
#: several edits, all or none), which Claude Code's default set no longer has
ON_REQUEST_TOOLS = ("MultiEdit",)
#: standard tools that exist only with what they stand for (the Claude adapter's ``skill``,
#: present when a loaded plugin has skills; builtins:tasks', builtins:subagents' and
#: builtins:web's, builtins:todos', builtins:search's ``ls`` and builtins:notebooks' tools);
#: removed bare like STANDARD_TOOLS
OPTIONAL_STANDARD_TOOLS = ("Skill", "TaskOutput", "TaskStop", "Agent", "WebFetch", "WebSearch",
                           "TodoWrite", "LS", "NotebookRead", "NotebookEdit")
#: the plugin and service tools those stand in for, hidden under their own names
OPTIONAL_TOOLS = ("skill", "task_output", "task_stop", "task", "web_fetch", "web_search", "glob",
                  "grep", "list_mcp_resources", "read_mcp_resource", "todo_write", "ls",
                  "notebook_read", "notebook_edit")


@attrs.define(repr=False, eq=False, slots=False)
class HookMatcher(FieldsEq):
    """Python callbacks for one hook event: ``matcher`` (a tool name, ``A|B``, a regular
    expression, or None for all), ``hooks`` (async ``(input, tool_use_id, context) -> dict``)
    and ``timeout`` in seconds (default 60)."""

    matcher: str | None = None
    hooks: list[Callable[..., Any]] = attrs.field(factory=list)
    timeout: float | None = None
    on_failure: str | None = None


#: options refused when set (not None, not False, not empty), with the reason
UNSUPPORTED: Mapping[str, str] = {
    "betas": "Anthropic beta headers are not passed through; set them in the model's "
             "'headers' in settings",
    "permission_prompt_tool_name": "permission prompts through an MCP tool are not supported; "
                                   "use can_use_tool",
    "cli_path": "there is no Claude Code CLI: this host runs the agent in-process",
    "max_buffer_size": "there is no CLI output buffer",
    "user": "running as another user is not supported",
    "verbatim_prompts": "not applicable",
    "skills": "skill selection is not implemented; every loaded skill is listed",
    "sandbox": "sandboxing is not implemented",
    "task_budget": "task budgets are not implemented",
    "client_app": "not applicable",
}

#: the ``extra_args`` flags of Claude Code's CLI this host understands: the prompt of each
#: input is sent back as a ``UserMessage`` carrying its uuid (what ``rewind_files`` takes)
EXTRA_ARGS = ("replay-user-messages",)

#: as in Claude Code, starting a sub-agent (``Agent``) needs no approval in any mode; its tool
#: calls are checked one by one, and ``agent:NAME`` deny rules still deny
SUBAGENTS_ALLOWED = "agent:*"

#: effort -> this host's reasoning level ("xhigh" is Opus 4.7's; elsewhere the highest)
EFFORTS: Mapping[str, str] = {"low": "low", "medium": "medium", "high": "high", "xhigh": "max",
                              "max": "max"}
#: the thinking budget the Messages API accepts at least
MIN_THINKING_BUDGET = 1024


@attrs.define(kw_only=True, repr=False, eq=False, slots=False)
class AgentOptions(FieldsEq):
    """claude-agent-sdk's ``ClaudeAgentOptions``: same names, same meanings (docs/sdk.md
    lists what differs). ``provider`` and ``agent_dir`` are this host's additions."""

    tools: list[str] | Mapping[str, Any] | None = None
    allowed_tools: list[str] = attrs.field(factory=list)
    system_prompt: str | Mapping[str, Any] | None = None
    mcp_servers: Any = attrs.field(factory=dict)
    strict_mcp_config: bool = False
    permission_mode: str | None = None
    continue_conversation: bool = False
    resume: str | None = None
    session_id: str | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    disallowed_tools: list[str] = attrs.field(factory=list)
    model: str | None = None
    fallback_model: str | None = None
    betas: list[str] = attrs.field(factory=list)
    permission_prompt_tool_name: str | None = None
    cwd: str | Path | None = None
    cli_path: str | Path | None = None
    settings: str | None = None
    add_dirs: list[str | Path] = attrs.field(factory=list)
    env: dict[str, str] = attrs.field(factory=dict)
    extra_args: dict[str, str | None] = attrs.field(factory=dict)
    max_buffer_size: int | None = None
    debug_stderr: Any = None
    stderr: Callable[[str], None] | None = None
    can_use_tool: Callable[..., Any] | None = None
    hooks: Mapping[str, list[HookMatcher]] | None = None
    user: str | None = None
    include_partial_messages: bool = False
    include_hook_events: bool = False
    forward_subagent_text: bool = False
    verbatim_prompts: bool = False
    fork_session: bool = False
    resume_session_at: str | None = None
    resume_drops_turn: str | None = None
    agents: Mapping[str, Any] | None = None
    setting_sources: list[str] | None = None
    skills: Any = None
    sandbox: Any = None
    plugins: list[Mapping[str, Any]] = attrs.field(factory=list)
    max_thinking_tokens: int | None = None
    thinking: Any = None
    effort: str | None = None
    output_format: Mapping[str, Any] | None = None
    enable_file_checkpointing: bool = False
    session_store: Any = None
    session_store_flush: str = "batched"
    load_timeout_ms: int = 60_000
    task_budget: Any = None
    client_app: str | None = None
    persist_session: bool = True
    # this host's additions
    provider: Any = None
    agent_dir: str | Path | None = None
    #: the agent definition (``agents`` or ``agents/NAME.md``) the session runs as: its prompt,
    #: tools and permissions (``create_session(agent=...)``; claude-agent-sdk has no such field)
    agent: str | None = None
    #: the session store scope (default: derived from ``cwd``, see project_key_for_directory)
    project_key: str | None = None
    #: ``async (questions) -> {question: answer}``: how the ``ask_user`` tool of
    #: ``zpi-builtins`` asks the user (:mod:`zpi_host.session.ports`); None: nobody can answer
    ask_user: Callable[..., Any] | None = None
    #: a :class:`~zpi_host.sdk.host.HostSession`: drive a session the embedding host created
    #: (creation-time options are then refused)
    host_session: Any = None

    # ------------------------------------------------------------------ checking

    def check(self) -> None:
        """Refuse what cannot be honoured, each with its option name; first every option's
        type (:mod:`.option_types`), so that the checks below and the session see the types
        the annotations promise."""
        from .option_types import check_option_types

        check_option_types(self)
        if self.host_session is not None:
            from .host import check_borrowed

            check_borrowed(self)
            return
        if self.can_use_tool is not None:
            from .errors import CanUseToolShadowedWarning, shadowing

            why = shadowing(self.permission_mode, list(self.allowed_tools))
            if why is not None:
                import warnings

                warnings.warn(why, CanUseToolShadowedWarning, stacklevel=3)
        if self.session_store is not None:  # first: its conflicts say more than "unsupported"
            self._check_store()
        elif self.project_key is not None:
            raise UsageError("project_key chooses a session store's scope; it needs "
                             "session_store")
        for name, why in UNSUPPORTED.items():
            if not is_unset(getattr(self, name)):
                raise UnsupportedOptionError(name, why)
        unknown_flags = sorted(set(self.extra_args) - set(EXTRA_ARGS))
        if unknown_flags:
            raise UnsupportedOptionError(
                "extra_args", f"there is no CLI to pass {', '.join(unknown_flags)} to; only "
                f"{', '.join(EXTRA_ARGS)} is understood")
        self._mcp()
        if self.permission_mode is not None and self.permission_mode not in PERMISSION_MODES:
            raise UnsupportedOptionError(
                "permission_mode", f"{self.permission_mode!r} is not one of "
                f"{', '.join(PERMISSION_MODES)}")
        if self.effort is not None and self.effort not in EFFORTS:
            raise UnsupportedOptionError("effort", f"{self.effort!r} is not one of "
                                                   f"{', '.join(EFFORTS)}")
        self._thinking()
        if self.max_budget_usd is not None and self.max_budget_usd <= 0:
            raise UsageError(f"max_budget_usd must be a positive number of US dollars, got "
                             f"{self.max_budget_usd!r}")
        if self.resume is not None and self.continue_conversation:
            raise UsageError("resume and continue_conversation both choose the session; "
                             "give one")
        if self.resume_session_at is not None and self.resume is None \
                and not self.continue_conversation:
            raise UsageError("resume_session_at names an entry of the resumed session; give "
                             "resume (or continue_conversation) too")
        if self.resume_drops_turn is not None and self.resume_session_at is None:
            raise UsageError("resume_drops_turn checks a resume_session_at resume; give "
                             "resume_session_at too")
        if self.fork_session and self.resume is None and not self.continue_conversation:
            raise UsageError("fork_session forks the session given by resume (or "
                             "continue_conversation); give one of them")
        if self.session_id is not None and not self.fork_session and (
                self.resume is not None or self.continue_conversation):
            raise UsageError("session_id names a new session, so with resume or "
                             "continue_conversation it needs fork_session=True (it then names "
                             "the fork)")
        if self.session_id is not None and self.fork_session and self.resume is not None \
                and self.session_id.lower() == self.resume.lower():
            raise UsageError(f"fork_session never reuses the resumed session's id "
                             f"({self.resume}); give another session_id, or none")
        if self.output_format is not None:
            from .structured import StructuredOutput

            StructuredOutput(self.output_format)
        from .agents import kernel_agents

        kernel_agents(self.agents)

    def _check_store(self) -> None:
        from ..stores.mirror import check_store

        check_store(self.session_store, self.session_store_flush)
        if not self.persist_session:
            raise UsageError("session_store mirrors the local transcript, so it needs "
                             "persist_session=True (a record is mirrored after it is saved)")
        if self.resume_session_at is not None:
            raise UsageError("resume_session_at resumes a local session at an entry; with a "
                             "session_store it is refused (the store's mirror is not where a "
                             "truncated copy is made): fork_session_via_store(up_to_message_id"
                             "=...) then resume the fork")
        if self.project_key is not None and (not isinstance(self.project_key, str)
                                             or not self.project_key):
            raise UsageError(f"project_key must be a non-empty string, got "
                             f"{self.project_key!r}")

    def store_project_key(self) -> str:
        """The session store scope: ``project_key``, else derived from ``cwd``."""
        from ..stores.session_store import project_key_for_directory

        if self.project_key is not None:
            return self.project_key
        return project_key_for_directory(Path(self.cwd).expanduser() if self.cwd else None)

    # ------------------------------------------------------------------ mapping

    def session_kwargs(self) -> dict[str, Any]:
        """The ``create_session`` options these stand for (everything the kernel does);
        the SDK layer adds the tool adapters, hooks and approver."""
        self.check()
        kwargs: dict[str, Any] = {
            "cwd": self.cwd, "max_turns": self.max_turns, "add_dirs": list(self.add_dirs),
            "session_id": None if self.fork_session else self.session_id,
            "persist": bool(self.persist_session),
            "file_checkpoints": bool(self.enable_file_checkpointing),
        }
        if self.model is not None:
            kwargs["model"] = self.model
        if self.provider is not None:
            kwargs["provider"] = self.provider
        if self.agent_dir is not None:
            kwargs["agent_dir"] = self.agent_dir
        if self.agent is not None:
            kwargs["agent"] = self.agent
        if self.env:
            kwargs["environ"] = {**os.environ, **{str(k): str(v) for k, v in self.env.items()}}
        if self.agents:
            from .agents import kernel_agents

            kwargs["agents"] = kernel_agents(self.agents)
        if self.ask_user is not None:
            from ..session.ports import HostPorts

            kwargs["ports"] = HostPorts(ask_user=self.ask_user)
        if self.resume is not None:
            kwargs["resume"] = self.resume
        elif self.continue_conversation:
            kwargs["continue_recent"] = True
        kwargs.update(self._thinking())
        kwargs.update(self._prompt())
        if self.output_format is not None:
            from .structured import StructuredOutput

            parts = [kwargs.get("append_system_prompt"),
                     StructuredOutput(self.output_format).prompt()]
            kwargs["append_system_prompt"] = "\n\n".join(p for p in parts if p)
        kwargs.update(self._settings())
        if self.plugins:
            kwargs["plugin_dirs"] = self._plugin_dirs()
        kwargs.update(self._tool_selection())
        kwargs.update(self._permissions())
        kwargs.update(self._mcp())
        return kwargs

    @property
    def echo_prompts(self) -> bool:
        """Whether each input's prompt comes back as a ``UserMessage`` with its uuid: asked
        with ``extra_args={"replay-user-messages": None}``, and on with file checkpoints (the
        uuid is what ``rewind_files`` takes)."""
        return self.enable_file_checkpointing or "replay-user-messages" in self.extra_args

    def in_process_servers(self) -> dict[str, Any]:
        """The ``create_sdk_mcp_server`` servers of ``mcp_servers``, by key."""
        from .mcp_servers import split_mcp_servers

        return split_mcp_servers(self.mcp_servers)[0] if self.mcp_servers else {}

    def _mcp(self) -> dict[str, Any]:
        """``mcp_servers``: the in-process servers' tools as custom tools (``mcp__KEY__TOOL``),
        the other configs (and ``strict_mcp_config``) for the kernel
        (:func:`~.mcp_servers.external_mcp_servers`)."""
        from .mcp_servers import external_mcp_servers, split_mcp_servers

        in_process, external = split_mcp_servers(self.mcp_servers or {})
        out = external_mcp_servers(external, self.strict_mcp_config)
        if in_process:
            from .mcp_tools import host_tools

            out["custom_tools"] = [t for key, server in in_process.items()
                                   for t in host_tools(key, server)]
        return out

    def _thinking(self) -> dict[str, Any]:
        """``thinking`` (or the deprecated ``max_thinking_tokens``) and ``effort`` as the
        session's reasoning level and thinking budget: disabled is "off"; adaptive is the
        effort's level, else "high" (the API's default effort); a budget is kept as the
        budget, its level the effort's, else the one it stands for."""
        from ..providers.reasoning import level_for_budget

        effort = EFFORTS[self.effort] if self.effort is not None else None
        thinking, budget = self.thinking, self.max_thinking_tokens
        if thinking is not None:
            kind = thinking.get("type") if isinstance(thinking, Mapping) else None
            extra = sorted(set(thinking) - {"type", "budget_tokens", "display"}) \
                if isinstance(thinking, Mapping) else []
            if kind not in ("adaptive", "enabled", "disabled") or extra:
                raise UnsupportedOptionError(
                    "thinking", f"must be {{'type': 'adaptive'}}, {{'type': 'enabled', "
                    f"'budget_tokens': N}} or {{'type': 'disabled'}}, got {thinking!r:.100}")
            if thinking.get("display", "summarized") != "summarized":
                raise UnsupportedOptionError("thinking", "display 'omitted' is not supported: "
                                             "thinking text is always shown as it comes")
            if kind == "disabled":
                return {"reasoning_level": "off"}
            if kind == "adaptive":
                return {"reasoning_level": effort or "high"}
            budget = thinking.get("budget_tokens")
            where = "thinking budget_tokens"
        else:
            where = "max_thinking_tokens"
        if budget is None and thinking is None:
            return {"reasoning_level": effort} if effort else {}
        if type(budget) is not int or budget < 0 or 0 < budget < MIN_THINKING_BUDGET \
                or (budget == 0 and thinking is not None):
            raise UnsupportedOptionError(
                "thinking" if thinking is not None else "max_thinking_tokens",
                f"{where} must be a whole number of tokens >= {MIN_THINKING_BUDGET}"
                f"{' (or 0: no thinking)' if thinking is None else ''}, got {budget!r}")
        if budget == 0:
            return {"reasoning_level": "off"}
        return {"reasoning_level": effort or level_for_budget(budget),
                "thinking_budget": budget}

    def _prompt(self) -> dict[str, Any]:
        prompt = self.system_prompt
        if prompt is None:  # as claude-agent-sdk: no coding prompt (a preset asks for one);
            return {"base_prompt": False}  # the context files and skills still go in
        if isinstance(prompt, str):
            return {"system_prompt": prompt}
        if isinstance(prompt, Mapping):
            kind = prompt.get("type")
            if kind == "preset":
                append = prompt.get("append")
                return {"append_system_prompt": append} if append else {}
            if kind == "custom" and isinstance(prompt.get("prompt"), str):
                return {"system_prompt": prompt["prompt"]}
            if kind == "file" and isinstance(prompt.get("path"), str):
                path = Path(prompt["path"]).expanduser()
                try:
                    return {"system_prompt": path.read_text(encoding="utf-8")}
                except OSError as exc:
                    raise UsageError(f"system_prompt file {path} cannot be read: "
                                     f"{exc.strerror or exc}") from None
        raise UsageError(f"system_prompt must be a string or {{'type': 'preset', ...}}, "
                         f"{{'type': 'custom', 'prompt': ...}}, {{'type': 'file', 'path': ...}};"
                         f" got {prompt!r:.100}")

    def _settings(self) -> dict[str, Any]:
        """``settings`` (JSON text or a JSON file) replaces the settings files; otherwise
        ``setting_sources`` chooses which files are read: ``user`` (the agent dir's
        ``settings.json``), ``project`` (``.zpi/settings.json``), ``local``
        (``.zpi/settings.local.json``); None reads all three, ``[]`` none. Without a project
        source no project file is read at all (nor ``.claude/``, ``.zcode/``); naming one is
        the program's explicit trust in the project: its hooks and plugin folders run. With
        None they run only when the user trusted the project (docs/sdk.md, "Trust")."""
        if self.settings is not None:
            text = self.settings
            if not text.lstrip().startswith("{"):
                try:
                    text = Path(text).expanduser().read_text(encoding="utf-8")
                except OSError as exc:
                    raise UsageError(f"settings file {self.settings} cannot be read: "
                                     f"{exc.strerror or exc}") from None
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise UsageError(f"settings is not valid JSON: {exc}") from None
            if not isinstance(data, dict):
                raise UsageError("settings must be a JSON object")
            return {"settings": data}
        sources = self.setting_sources
        if sources is None:
            return {}
        if isinstance(sources, str) or not all(isinstance(s, str) for s in sources):
            raise UsageError(f"setting_sources must be a list of 'user', 'project', 'local', "
                             f"got {sources!r:.100}")
        unknown = sorted(set(sources) - {"user", "project", "local"})
        if unknown:
            raise UsageError(f"setting_sources: unknown source(s) {', '.join(unknown)}; "
                             "use user, project, local")
        chosen: dict[str, Any] = {"setting_sources": list(sources)}
        if "project" in sources or "local" in sources:
            chosen["trust_project"] = True
        return chosen

    def _plugin_dirs(self) -> list[str]:
        dirs = []
        for plugin in self.plugins:
            if not isinstance(plugin, Mapping) or plugin.get("type") != "local" or \
                    not isinstance(plugin.get("path"), str | Path):
                raise UnsupportedOptionError("plugins", f"only {{'type': 'local', 'path': ...}} "
                                                        f"is supported, got {plugin!r:.100}")
            dirs.append(str(plugin["path"]))
        return dirs

    def _tool_selection(self) -> dict[str, Any]:
        """The kernel tools are replaced by the standard ones (``tools.py``); ``tools`` picks,
        bare standard names in ``disallowed_tools`` remove."""
        named = [n for names in self._removed_tools().values() for n in names]
        removed = [n for n in named if n in STANDARD_TOOLS]
        optional = [n for n in named if n in OPTIONAL_STANDARD_TOOLS]
        tools = self.tools
        # a standard tool Claude Code's default set no longer has (MultiEdit) is there when
        # ``tools`` names it
        asked = set(tools) if isinstance(tools, list | tuple) else set()
        out: dict[str, Any] = {"exclude_tools": [*KERNEL_TOOLS, *removed],
                               "hide_tools": [*OPTIONAL_TOOLS, *optional, *(
                                   n for n in ON_REQUEST_TOOLS if n not in asked)]}
        if isinstance(tools, Mapping):
            if tools.get("type") != "preset":
                raise UsageError(f"tools must be a list of names or {{'type': 'preset', "
                                 f"'preset': 'claude_code'}}, got {tools!r:.100}")
        elif tools is not None:
            if isinstance(tools, str) or not all(isinstance(t, str) for t in tools):
                raise UsageError(f"tools must be a list of tool names, got {tools!r:.100}")
            picked = [t for t in tools if t not in removed and t not in optional]
            out["tools"] = picked
            if not picked:
                out = {"no_tools": True}  # custom tools (the MCP servers' ones) stay
            else:  # ``tools`` picks the standard tools; the MCP servers' tools stay too
                from .mcp_tools import mcp_tool_name

                out["tools"] += [mcp_tool_name(key, t.name) for key, server in
                                 self.in_process_servers().items() for t in server.tools
                                 if mcp_tool_name(key, t.name) not in picked]
        return out

    def _removed_tools(self) -> dict[str, tuple[str, ...]]:
        """The bare names in ``disallowed_tools`` that name a standard tool, in any spelling
        (``Bash`` or ``bash``; ``Edit`` also removes ``MultiEdit``, the same tool), each with
        the standard names it removes."""
        standard = {*STANDARD_TOOLS, *OPTIONAL_STANDARD_TOOLS}
        out: dict[str, tuple[str, ...]] = {}
        for entry in self.disallowed_tools:
            names = tuple(n for n in same_tool(entry) if n in standard)
            if entry in standard and entry != "Edit":
                names = (entry,)  # MultiEdit alone leaves Edit; Edit takes MultiEdit too
            if names:
                out[entry] = names
        return out

    def _permissions(self) -> dict[str, Any]:
        """The mode and the rules; a standard tool named alone in ``disallowed_tools`` is
        removed (``_tool_selection``) rather than denied. The allowances of ``acceptEdits``
        are the client's (they follow ``set_permission_mode``)."""
        mode, _ = PERMISSION_MODES[self.permission_mode or "default"]
        removed = self._removed_tools()
        deny = [r for r in self.disallowed_tools if r not in removed]
        allow = list(self.allowed_tools)
        if SUBAGENTS_ALLOWED not in deny and SUBAGENTS_ALLOWED not in allow:
            allow.append(SUBAGENTS_ALLOWED)
        out: dict[str, Any] = {"permission_mode": mode, "allow": allow, "deny": deny}
        if self.can_use_tool is None:  # a denial says how to allow it in the SDK's words
            from .no_approver import sdk_no_approver_hint

            out["no_approver_hint"] = sdk_no_approver_hint
        return out


#: claude-agent-sdk's name
ClaudeAgentOptions = AgentOptions

