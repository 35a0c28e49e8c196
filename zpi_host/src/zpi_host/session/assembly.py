"""create_session(): options -> agent dir -> session store -> cwd -> settings -> context to
restore -> model -> tools -> resources and the main agent (whose definition may name the model)
-> prepared tools -> selection -> what the model is shown -> prompt -> reasoning.

The CLI, embedding programs and previews build sessions only through this function, so what a
preview shows is what a run uses. Each step is a small function named for the step.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract.plugins import (
    PluginHost,
)
from ..errors import AssemblyError, UsageError, docs_url
from ..providers.factories import collect_providers, from_environment
from ..providers.reasoning import level_for_budget, reasoning_kind
from ..settings.plugin_dirs import check_adapters
from .disclosure import (
    agent_permissions,
    check_definitions,
    hidden_resources,
    main_agent,
    shown_tools,
)
from .options import REASONING_LEVELS, SessionOptions
from .project_guards import (
    PROJECT_SCOPES,
    decide_trust,
    plugins_for,
    project_trusted,
)
from .tool_selection import KERNEL_TOOL_NAMES, collect_tools, select_tools
from .transcript_choice import new_store, open_store, recorded_cwd_warning

if TYPE_CHECKING:
    from ..permissions import PermissionPolicy
    from ..providers.base import Provider
    from ..providers.catalog import ModelEntry
    from ..resources import ResourceLoader
    from ..settings.manager import SettingsManager
    from ..support.redaction import Redactor
    from ..transcript import SessionManager
    from .agent_session import AgentSession

__all__ = ["KERNEL_TOOL_NAMES", "AssemblyError", "collect_providers", "create_session"]

BASE_PROMPT = """\
You are a coding agent working in the directory {cwd}. You read and change the workspace only \
through your tools. Read a file before you change it; prefer edit for small changes; use bash \
to run commands. When the task is done, answer briefly with what you did."""


def resolve_agent_dir(explicit: str | Path | None, environ: Mapping[str, str]) -> Path:
    """Explicit, then ``ZPI_AGENT_DIR``, then ``~/.zpi/agent``."""
    from ..settings.manager import agent_dir

    return Path(explicit).expanduser().resolve() if explicit is not None else agent_dir(environ)


def resolve_cwd(explicit: str | Path | None) -> Path:
    """Explicit, then the process's: the user chooses where a session works. A resumed
    session's recorded directory is data (a transcript or a store may say anything), never
    obeyed; :func:`recorded_cwd_warning` reports it when it differs."""
    raw = explicit if explicit is not None else Path.cwd()
    root = Path(raw).expanduser().resolve()
    if not root.is_dir():
        raise UsageError(f"working directory {root} does not exist or is not a directory")
    return root


def load_settings(options: SessionOptions, agent_dir: Path, cwd: Path) -> SettingsManager:
    """An injected manager as is; a mapping as in-memory user settings; else the files
    (those of ``setting_sources``: None, all of them)."""
    from ..settings.manager import SettingsManager

    if isinstance(options.settings, SettingsManager):
        return options.settings
    if options.settings is not None:
        if not isinstance(options.settings, Mapping):
            raise UsageError("settings must be a SettingsManager or a mapping, got "
                             f"{type(options.settings).__name__}")
        return SettingsManager.in_memory(options.settings)
    return SettingsManager(agent_dir, cwd, options.setting_sources)


def prepare_spill(agent_dir: Path, store: SessionManager) -> Path:
    """The session's private spill folder (see :mod:`zpi_host.fs.spill`): the model may read
    its own cut tool output there (:func:`allow_reading_host_files`), and in no other spill
    folder. Old folders are pruned."""
    from ..fs.spill import spill_folder
    from .housekeeping import prune_spill

    folder = spill_folder(agent_dir, store.session_id, in_memory=store.in_memory_only)
    prune_spill(agent_dir, keep=folder.name)
    return folder


def make_permissions(
    options: SessionOptions, manager: SettingsManager, settings: dict[str, Any], cwd: Path,
    warnings: list[str], trusted: bool = True,
) -> PermissionPolicy:
    """The session's permission policy. A project's settings may not switch the checks off:
    ``bypass`` from ``.zpi/settings.json`` is ignored with a warning (choose it in user
    settings or with ``--permission-mode``)."""
    from ..permissions import build_policy

    for scope in PROJECT_SCOPES:
        project = manager.layer(scope).get("permissions")
        if isinstance(project, Mapping) and project.get("mode") == "bypass" and \
                options.permission_mode is None:
            user = manager.layer("user").get("permissions")
            mode = user.get("mode") if isinstance(user, Mapping) else None
            settings = {**settings, "permissions": {**settings["permissions"], "mode": mode
                                                    or "default"}}
            warnings.append(f"{manager.path(scope)}: a project may not set permissions.mode "
                            "to bypass (it would switch off permission checks for whoever "
                            f"opens it); using {mode or 'default'}. Choose bypass with "
                            "--permission-mode bypass or in your user settings.")
    from .claude_rules import claude_permissions, with_claude_permissions

    claude = claude_permissions(options, manager, settings, cwd, trusted, warnings)
    mode = options.permission_mode
    if mode is None and claude is not None and claude.mode is not None and \
            not _mode_set(settings, manager):
        mode = claude.mode
    policy = build_policy(settings, cwd=cwd, mode=mode, allow=options.allow,
                          deny=options.deny, add_dirs=options.add_dirs,
                          can_use_tool=options.can_use_tool, interactive=options.interactive,
                          default=options.permission_default,
                          no_approver_hint=options.no_approver_hint)
    return policy if claude is None else with_claude_permissions(policy, claude, warnings)


def _mode_set(settings: Mapping[str, Any], manager: SettingsManager) -> bool:
    """Whether this host's own settings files choose a permission mode (it wins over the
    ``defaultMode`` of Claude's files)."""
    return any(isinstance(manager.layer(s).get("permissions"), Mapping) and
               "mode" in manager.layer(s)["permissions"] for s in ("user", *PROJECT_SCOPES))


def redactor_for(settings: Mapping[str, Any], environ: Mapping[str, str]) -> Redactor:
    """The provider keys this session's settings and environment may use: kept out of
    everything it prints and records (see :mod:`zpi_host.support.redaction`)."""
    from ..support.redaction import Redactor

    return Redactor.from_settings(settings, environ)


def command_secrets(manager: SettingsManager, settings: Mapping[str, Any],
                    warnings: list[str]) -> frozenset[str]:
    """The key variables kept out of the commands the session starts (setting
    ``secrets.pass_to_commands``, from the user's settings only: a repository's project
    settings must not hand the keys to the commands its model runs). A bad value is a
    warning, and all of them are kept out."""
    from ..support.redaction import SecretsSettingError, hidden_variables, key_variables

    for scope in PROJECT_SCOPES:
        project = manager.layer(scope).get("secrets")
        if isinstance(project, Mapping) and "pass_to_commands" in project:
            warnings.append(f"{manager.path(scope)}: a project may not set "
                            "secrets.pass_to_commands (it would give the provider keys to the "
                            "commands its model runs); ignored. Set it in your user settings.")
            user = manager.layer("user").get("secrets")
            settings = {**settings, "secrets": dict(user) if isinstance(user, Mapping) else {}}
    try:
        return hidden_variables(settings)
    except SecretsSettingError as exc:
        warnings.append(f"{exc}; passing none of them (see {docs_url('permissions', 'secrets')})")
        return key_variables(settings)


#: the sources of the allow rules the host adds itself (not the user's)
INTERNAL_RULE_SOURCES = ("spill folder", "loaded skills")


def allow_reading_host_files(permissions: PermissionPolicy, resources: ResourceLoader,
                             tools: list[Any], spill: Path) -> None:
    """The file-reading tools of the session (``READ_TOOLS``) may read what the host hands the
    model: its own cut tool output in the session's ``spill`` folder, and a skill's body (and
    the files beside it) wherever it is (a plugin's folder, the agent dir). One rule per
    folder holding skills, not per skill: every tool call walks the rules."""
    from ..permissions import READ_TOOLS, parse_rule

    readers = [t.name for t in tools if t.name in READ_TOOLS]
    folders = sorted({Path(skill.root).resolve().parent for skill in resources.skills})
    spill_source, skills_source = INTERNAL_RULE_SOURCES
    for name in readers:
        permissions.rules.add("allow", parse_rule(f"{name}({spill}/**)", source=spill_source))
        for folder in folders:
            permissions.rules.add("allow", parse_rule(f"{name}({folder}/**)",
                                                      source=skills_source))


def choose_model(
    options: SessionOptions, store: SessionManager | None, settings: Mapping[str, Any],
    environ: Mapping[str, str],
) -> ModelEntry:
    """Explicit choice, then the session's last model, then ``model`` in settings, then
    ``ZPI_MODEL``, then the first settings model that has credentials, then the built-in
    default of the first provider whose key is set. A model without credentials is refused."""
    from ..providers.catalog import credentials, default_model, resolve_model

    def usable(entry: ModelEntry, why: str) -> ModelEntry:
        credential = credentials(entry, environ)
        if options.provider is None and credential.key is None and credential.required:
            raise UsageError(f"model {entry.name!r} ({why}) has no API key: set "
                             f"{credential.source}")
        return entry

    if options.model is not None:
        return usable(resolve_model(options.model, settings), "chosen explicitly")
    last = store.last_model() if store is not None else None
    if last is not None:
        return usable(resolve_model(f"{last[0]}:{last[1]}", settings), "the session's model")
    if isinstance(settings.get("model"), str):
        return usable(resolve_model(settings["model"], settings), "the setting 'model'")
    if environ.get("ZPI_MODEL"):
        return usable(resolve_model(environ["ZPI_MODEL"], settings), "the variable ZPI_MODEL")
    entry, missing = default_model(settings, environ)
    if entry is not None:
        return entry
    why = f" The candidate models have no credentials: {', '.join(missing)}." if missing else ""
    raise UsageError("no model chosen: pass --model PROVIDER:MODEL (or model= in code), set "
                     "'model' in settings or ZPI_MODEL, or set ANTHROPIC_API_KEY or "
                     f"OPENAI_API_KEY to use the provider's default model.{why} "
                     "To try the host offline: --model scripted:PATH")




def _first_model(options: SessionOptions, store: SessionManager | None,
                 settings: Mapping[str, Any], environ: Mapping[str, str]
                 ) -> tuple[ModelEntry | None, UsageError | None]:
    """The model chosen before the main agent is known; with ``agent=`` a failure waits
    (the definition may name the model)."""
    try:
        return choose_model(options, store, settings, environ), None
    except UsageError as exc:
        if options.agent is None:
            raise
        return None, exc


def agent_model(options: SessionOptions, definition: Any, settings: Mapping[str, Any],
                environ: Mapping[str, str]) -> ModelEntry | None:
    """The main agent definition's ``model`` (a catalog name or ``PROVIDER:MODEL``), unless
    a model or provider is chosen explicitly or it says ``inherit``."""
    wanted = getattr(definition, "model", None)
    if options.model is not None or options.provider is not None or \
            not isinstance(wanted, str) or not wanted or wanted == "inherit":
        return None
    from ..providers.catalog import credentials, resolve_model

    entry = resolve_model(wanted, settings)
    credential = credentials(entry, environ)
    if credential.key is None and credential.required:
        raise UsageError(f"model {entry.name!r} (the model of agent {definition.name!r}) has "
                         f"no API key: set {credential.source}")
    return entry


async def make_provider(
    options: SessionOptions, host: PluginHost, entry: ModelEntry, settings: Mapping[str, Any],
    environ: Mapping[str, str],
) -> Provider:
    if options.provider is not None:
        return options.provider  # type: ignore[no-any-return]
    factories = await collect_providers(host, settings)
    if entry.provider not in factories:
        known = ", ".join(sorted(factories)) or "none"
        raise UsageError(f"unknown model provider {entry.provider!r} (installed: {known})")
    budget = thinking_budget(options, environ)
    if budget:  # 0 (thinking off) leaves the settings' budget alone
        settings = {**settings, "thinking_budget_tokens": max(budget, 1024)}
    return factories[entry.provider].create(from_environment(entry, environ), settings)


def thinking_budget(options: SessionOptions, environ: Mapping[str, str]) -> int | None:
    """The ``thinking_budget`` option, else ``MAX_THINKING_TOKENS`` (as Claude Code reads it:
    a whole number of tokens, 0 for no thinking), else None."""
    if options.thinking_budget is not None:
        return options.thinking_budget
    raw = environ.get("MAX_THINKING_TOKENS", "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise UsageError(f"MAX_THINKING_TOKENS must be a whole number of tokens (0 turns "
                         f"thinking off), got {raw!r}")
    return int(raw)


#: setting source -> the host's resource folders it also brings (claude-agent-sdk: the
#: project source brings CLAUDE.md and the project's skills; local, Claude Code's
#: CLAUDE.local.md)
RESOURCE_ORIGINS: Mapping[str, str] = {"user": "agent", "project": "project",
                                       "local": "local"}


async def load_resources(
    host: PluginHost, cwd: Path, agent_dir: Path, settings: Mapping[str, Any],
    setting_sources: Sequence[str] | None = None, agents: Sequence[Any] = (),
) -> ResourceLoader:
    """Plugins' resource sources and commands, and the host's own folders of the chosen
    setting sources (None: all)."""
    import attrs

    from ..resources import Command, ResourceLoader, ResourceSource

    sources: list[ResourceSource] = []
    for answer in await host.hooks.register_resources(cwd, settings):
        if not isinstance(answer.value, ResourceSource):
            raise AssemblyError(f"plugin {answer.plugin!r} registered {answer.value!r} as a "
                                "resource source; return zpi_host.resources.ResourceSource")
        sources.append(attrs.evolve(answer.value, origin=answer.plugin))
    commands: list[Command] = []
    for answer in await host.hooks.register_commands(cwd, settings):
        if not isinstance(answer.value, Command):
            raise AssemblyError(f"plugin {answer.plugin!r} registered {answer.value!r} as a "
                                "command; return zpi_host.resources.Command")
        if any(c.name == answer.value.name for c in commands):
            raise AssemblyError(f"plugin {answer.plugin!r} registered the command "
                                f"{answer.value.name!r}, which another plugin registered first")
        commands.append(attrs.evolve(answer.value, origin=answer.plugin))
    origins = RESOURCE_ORIGINS.values() if setting_sources is None else [
        RESOURCE_ORIGINS[s] for s in setting_sources if s in RESOURCE_ORIGINS]
    return ResourceLoader(cwd, agent_dir, sources, commands, file_origins=origins,
                          agents=agents).load()


def choose_reasoning(
    options: SessionOptions, store: SessionManager | None, entry: ModelEntry | None,
    settings: Mapping[str, Any], environ: Mapping[str, str] | None = None,
) -> str:
    """Explicit, then a thinking budget's (``thinking_budget``, ``MAX_THINKING_TOKENS``), then
    the session's (if valid), then settings, then the model's default; clamped to ``off`` for
    a model that does not reason."""
    level = options.reasoning_level
    budget = thinking_budget(options, environ or {})
    if level is None and budget is not None:
        level = level_for_budget(budget)
    if level is None and store is not None:
        restored = store.last_reasoning_level()
        level = restored if restored in REASONING_LEVELS else None
    if level is None and settings.get("reasoning_level") in REASONING_LEVELS:
        level = settings["reasoning_level"]
    supports = entry is None or reasoning_kind(entry) is not None
    if level is None:
        level = "medium" if supports and entry is not None else "off"
    return level if supports else "off"


async def build_prompt(
    host: PluginHost, cwd: Path, settings: Mapping[str, Any], resources: ResourceLoader,
    tools: list[Any], append: str | None, replace: str | None = None, base: bool = True,
    *, agent_prompt: str | None = None,
) -> tuple[str, tuple[Any, ...]]:
    """The base prompt, context files, skills, instructions and ``append``; ``replace``
    (the ``system_prompt`` option) stands instead of all but ``append``; ``base`` False
    leaves the base prompt out; ``agent_prompt`` (the main agent definition's body) stands
    in its place."""
    instructions = await host.hooks.instructions(cwd, settings, resources)
    if replace is not None:
        parts = [replace]
    else:
        if agent_prompt is not None and agent_prompt.strip():
            parts = [agent_prompt.strip()]
        else:
            parts = [BASE_PROMPT.format(cwd=cwd)] if base else []
        parts += [p for p in (resources.context_prompt(), resources.skills_prompt()) if p]
        parts += [i.text for i in instructions]
    if append:
        parts.append(append)
    prompt = await host.hooks.system_prompt("\n\n".join(parts), tools, instructions, resources)
    return prompt, instructions


async def create_session(**kwargs: Any) -> AgentSession:
    """Assemble a session from keyword options (see
    :class:`~zpi_host.session.options.SessionOptions`
    and the user guide). Bad options fail before anything is opened or connected."""
    options = SessionOptions.from_kwargs(kwargs)
    environ = options.environ if options.environ is not None else os.environ
    agent_dir = resolve_agent_dir(options.agent_dir, environ)
    store = open_store(options, agent_dir)
    opened = store is not None and options.session_manager is None
    provider = None
    settings: Mapping[str, Any] | None = None
    try:
        cwd = resolve_cwd(options.cwd)
        moved = recorded_cwd_warning(store, cwd)
        settings_manager = load_settings(options, agent_dir, cwd)
        trusted = project_trusted(options, settings_manager, cwd)
        settings, host, guarded, withheld = plugins_for(options, environ, settings_manager, cwd,
                                                        trusted)
        if withheld:
            if await decide_trust(options, settings_manager, cwd, withheld):
                trusted = True
                settings, host, guarded, _ = plugins_for(options, environ, settings_manager,
                                                         cwd, trusted=True)
            else:
                from ..settings.trust import not_run, project_root

                guarded.append(not_run(project_root(cwd), withheld))
        if options.plugin_dirs or options.zcode_plugin_dirs:
            check_adapters(options.plugin_dirs, options.zcode_plugin_dirs,
                           {r.name: (r.status, r.error) for r in host.records},
                           autoload=host.config.autoload)
        warnings = guarded + list(host.hooks.configure(settings))
        if moved is not None:
            warnings.append(moved)
        if options.continue_recent and store is None:
            warnings.append(f"no session to continue in {cwd}; started a new one")
        permissions = make_permissions(options, settings_manager, settings, cwd, warnings,
                                       trusted)
        entry, unchosen = _first_model(options, store, settings, environ)
        if entry is not None:
            provider = await make_provider(options, host, entry, settings, environ)
        found = await collect_tools(host, cwd, settings)
        resources = await load_resources(host, cwd, agent_dir, settings,
                                         options.setting_sources, options.agents)
        definition = main_agent(resources, options.agent)
        wanted = agent_model(options, definition, settings, environ)
        if wanted is not None and wanted != entry:
            if provider is not None:
                await provider.aclose()
                provider = None
            entry = wanted
            provider = await make_provider(options, host, entry, settings, environ)
        if entry is None or provider is None:
            raise unchosen or UsageError("no model chosen")
        for answer in await host.hooks.prepare_tools(list(found.tools.values()), resources,
                                                     cwd, settings):
            found.add(answer.value, answer.plugin, "prepared")
        granted = agent_permissions(definition)
        warnings += check_definitions(resources.agents)
        chosen = options.tools if options.tools is not None or definition is None \
            else definition.tools
        available = shown_tools(select_tools(
            found, tool_overrides=options.tool_overrides, custom_tools=options.custom_tools,
            no_tools=options.no_tools, tools=chosen, exclude_tools=options.exclude_tools,
            hide_tools=options.hide_tools,
            available=tools_available(settings, entry, definition)), permissions.rules)
        tools = shown_tools(available, permissions.rules, granted)
        resources.withhold(hidden_resources(permissions.rules, granted))
        prompt, instructions = await build_prompt(host, cwd, settings, resources, tools,
                                                  options.append_system_prompt,
                                                  options.system_prompt,
                                                  options.base_prompt,
                                                  agent_prompt=definition.prompt if definition
                                                  is not None else None)
        reasoning = choose_reasoning(options, store, entry if options.provider is None
                                     else getattr(provider, "entry", None), settings, environ)
        if store is None:
            store = new_store(options, agent_dir, cwd, settings)
            opened = True
        warnings += permissions.rules.unknown_tool_rules([t.name for t in tools])
        spill = prepare_spill(agent_dir, store)
        allow_reading_host_files(permissions, resources, tools, spill)
        hidden = command_secrets(settings_manager, settings, warnings)
        session = _session(options, host, provider, entry, tools, found.owners, prompt,
                           instructions, cwd, agent_dir, settings, settings_manager, store,
                           resources, reasoning, permissions, warnings, spill)
        session.hidden_variables = hidden
        session.agent_definition = definition
        session.available_tools = {t.name: t for t in available}
        session.redactor = session.store.redactor = redactor_for(settings, environ)
        return session
    except BaseException:
        from .ports import discard_mcp_registry

        await discard_mcp_registry(settings)  # MCP servers it started do not outlive it
        if provider is not None and options.provider is None:
            await provider.aclose()
        if opened and store is not None:
            store.close()
        raise


def tools_available(settings: Mapping[str, Any], entry: ModelEntry, agent: Any = None) -> Any:
    """Each tool's ``Tool.available`` for a session of this model and main agent definition
    (``tool_selection``)."""
    from ..tools.base import SessionDefinition

    definition = SessionDefinition(model=entry, agent=getattr(agent, "name", None))
    return lambda tool: tool.available(settings, definition)


def _session(
    options: SessionOptions, host: PluginHost, provider: Provider, entry: ModelEntry,
    tools: list[Any], owners: Mapping[str, str], prompt: str, instructions: tuple[Any, ...],
    cwd: Path, agent_dir: Path, settings: dict[str, Any], settings_manager: SettingsManager,
    store: SessionManager, resources: ResourceLoader, reasoning: str,
    permissions: PermissionPolicy, early_warnings: list[str], spill: Path,
) -> AgentSession:
    from ..contract.snapshot import plugin_changes, take_snapshot
    from ..tools.file_state import FileReadState
    from .agent_session import AgentSession

    snapshot = take_snapshot(host, tools, owners, instructions, resources, {
        "model": f"{provider.name}:{provider.model}", "reasoning_level": reasoning,
        "max_turns": options.max_turns, "tools": [t.name for t in tools],
    })
    from ..contract.diagnostics import plugin_warnings

    warnings = [str(p) for p in settings_manager.problems] + early_warnings
    warnings += [f"plugin {r.name!r}: {w}" for r in host.records if r.status == "ok"
                 for w in plugin_warnings(r.plugin)]
    warnings += [f"plugin {r.name!r} failed to load: {r.error} (see zpi-host --list-plugins; "
                 "--strict or ZPI_STRICT_PLUGINS=1 makes this an error)"
                 for r in host.records if r.status == "failed"]
    warnings += [str(w) for w in store.warnings]
    warnings += [str(d) for d in resources.diagnostics]
    resumed = len(store.held_records) > 1
    if resumed:  # reopened: writes a killed run left half done
        from .housekeeping import close_cut_off_subagents, sweep_touched_folders

        warnings += close_cut_off_subagents(store.path)

        swept = sweep_touched_folders(store.held_records, cwd)
        if swept:
            warnings.append(f"removed {len(swept)} temporary file(s) that a killed run left: "
                            + ", ".join(str(p) for p in swept[:5]))
    previous = store.latest_snapshot()
    if previous is not None:
        changes = plugin_changes(previous, snapshot.to_json())
        if changes:
            warnings.append("plugins changed since this session was last used: "
                            + "; ".join(changes) + " (continuing with what is installed now)")
    session = AgentSession(
        host=host, provider=provider, tools=tools, system_prompt=prompt, cwd=cwd,
        file_state=FileReadState(), settings=settings, max_turns=options.max_turns,
        reasoning_level=reasoning, spill_dir=spill,
        remove_spill_at_dispose=store.in_memory_only,
        store=store, settings_manager=settings_manager, resources=resources,
        start_source="resume" if resumed else "startup",
        permissions=permissions,
        snapshot=snapshot, warnings=warnings, agent_dir=agent_dir,
        model_entry=entry if options.provider is None else getattr(provider, "entry", None),
        ports=options.ports,
    )
    session.owns_host = options.host is None
    if options.file_checkpoints:
        from ..agent.file_checkpoints import FileCheckpoints

        session.file_checkpoints = FileCheckpoints(store, lambda: session.prompt_uuid)
    return session
