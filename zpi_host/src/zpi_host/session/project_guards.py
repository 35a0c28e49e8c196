"""What a project's files may make a session do: the guards between them and the user.

A repository is not the user (docs/reliability.md, "What makes a program run"). Before any
plugin sees the merged settings, the project's files lose what only the user may set (where
provider keys go, user-only settings) and, until the project is trusted, what would run a
program or loosen the user's protections; the plugin host is built under those guards, and the
trust decision is asked for, refused or recorded here. :mod:`.assembly` calls these in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract.plugin_names import block_name_sources, unmatched_block_names
from ..contract.plugins import PluginConfig, PluginHost
from ..errors import UsageError
from ..settings.plugin_dirs import with_plugin_dirs
from .options import SessionOptions

if TYPE_CHECKING:
    from ..settings.manager import Scope, SettingsManager


#: the settings files that live in the project folder (a repository may ship them)
PROJECT_SCOPES: tuple[Scope, ...] = ("project", "local")


def project_trusted(options: SessionOptions, manager: SettingsManager, cwd: Path) -> bool:
    """Whether what the project ships may run (:mod:`zpi_host.settings.trust`): the caller's
    ``trust_project`` (``--trust-project``, recorded with ``remember_trust``; the SDK's
    explicit project sources), else the user's recorded decision."""
    from ..settings.trust import is_trusted, trust

    recorded = is_trusted(manager.layer("user"), cwd)
    if options.trust_project is None:
        return recorded
    if options.trust_project and options.remember_trust and not recorded:
        trust(manager, cwd)
    return bool(options.trust_project)


def reads_project_files(options: SessionOptions) -> bool:
    """Whether adapters may read the project's own files (``.claude/``, ``.zcode/``): not
    when ``setting_sources`` leaves both project sources out."""
    return bool(project_scopes_read(options))


def project_scopes_read(options: SessionOptions) -> frozenset[str]:
    """The project's settings scopes ``setting_sources`` names (None: both). As in
    claude-agent-sdk, ``local`` is ``.claude/settings.local.json`` (and ``CLAUDE.local.md``)
    alone: the project's folders, ``CLAUDE.md``, ``.claude/settings.json`` and
    ``.mcp.json`` come with ``project``."""
    sources = options.setting_sources
    if sources is None:
        return frozenset(PROJECT_SCOPES)
    return frozenset(s for s in sources if s in PROJECT_SCOPES)


def reads_user_files(options: SessionOptions) -> bool:
    """Whether adapters may read the user's own folders and settings (``~/.claude``,
    ``~/.zcode``): not when ``setting_sources`` leaves ``user`` out."""
    sources = options.setting_sources
    return sources is None or "user" in sources


def plugins_for(
    options: SessionOptions, environ: Mapping[str, str], manager: SettingsManager, cwd: Path,
    trusted: bool,
) -> tuple[dict[str, Any], PluginHost, list[str], list[str]]:
    """The settings plugins see and the plugin host, for a project ``trusted`` or not;
    the warnings of the guards, and what an untrusted project would have run."""
    settings = manager.snapshot()
    guarded: list[str] = []
    keep_keys_home(manager, settings, guarded)  # before any plugin sees them
    keep_user_only(manager, settings, guarded)
    from ..settings.trust import hold_back_gated, hold_back_loosening

    withheld = [] if trusted else hold_back_gated(manager, settings, cwd)
    if not trusted:
        loosened = hold_back_loosening(manager, settings, cwd)
        guarded += [loosened] if loosened else []
    if options.plugin_dirs or options.zcode_plugin_dirs:
        settings = with_plugin_dirs(settings, options.plugin_dirs, options.zcode_plugin_dirs)
    from ..settings.mcp_sources import MCP_SOURCES, gather_mcp_sources

    settings[MCP_SOURCES], held = gather_mcp_sources(
        manager, cwd, given=options.mcp_servers, strict=options.strict_mcp_config,
        trusted=trusted, read_project="project" in project_scopes_read(options))
    withheld += held
    if options.host is not None:
        return settings, options.host, guarded, withheld
    host = make_host(options, environ, settings, cwd, guarded, trusted=trusted)
    return settings, host, guarded, withheld + host.withheld


async def decide_trust(options: SessionOptions, manager: SettingsManager, cwd: Path,
                       withheld: list[str]) -> bool:
    """The project is not trusted and would run ``withheld``: ask (``ask_trust``, chat; yes
    is recorded), refuse (``refuse_untrusted``: a non-interactive run) or go on without.
    ``trust_project=False`` has decided already: without."""
    from ..settings.trust import UntrustedProjectError, project_root, trust

    root = project_root(cwd)
    if options.trust_project is False:
        return False
    if options.ask_trust is not None:
        if await options.ask_trust(root, tuple(withheld)):
            trust(manager, cwd)
            return True
        return False
    if options.refuse_untrusted:
        raise UntrustedProjectError(root, withheld)
    return False


def make_host(
    options: SessionOptions, environ: Mapping[str, str], settings: Mapping[str, Any],
    cwd: Path, warnings: list[str], *, trusted: bool = True,
) -> PluginHost:
    """Plugins from the environment's controls, ``-p no:NAME`` and ``plugins.disabled``;
    adapters see the settings and cwd (``host.config``) to find their folders. A name given
    to block that matches no plugin is a warning."""
    disabled = settings.get("plugins", {}).get("disabled", [])
    if not isinstance(disabled, list) or not all(isinstance(d, str) for d in disabled):
        raise UsageError(f"setting plugins.disabled must be a list of plugin names, got "
                         f"{disabled!r}")
    host = PluginHost(PluginConfig.from_env(environ, blocked=options.blocked_plugins,
                                            settings_disabled=disabled, settings=settings,
                                            cwd=cwd, trusted=trusted,
                                            project_files=reads_project_files(options),
                                            user_files=reads_user_files(options),
                                            project_scopes=project_scopes_read(options)
                                            )).load()
    for name, plugin in options.plugins.items():
        record = host.register_plugin(plugin, name)
        if record.status != "ok":
            raise UsageError(f"the plugin {name!r} given in plugins= could not be registered: "
                             f"{record.error}")
    warnings += unmatched_block_names(host, block_name_sources(
        environ, options.blocked_plugins, disabled))
    return host


#: settings of ``providers.<name>`` and ``models.<name>`` that choose where a key is sent
KEY_ROUTES = ("base_url", "api_key_env")


def keep_keys_home(manager: SettingsManager, settings: dict[str, Any],
                   warnings: list[str]) -> None:
    """A project's settings may not choose where the user's provider keys go: ``base_url``
    and ``api_key_env`` of ``providers.*``, ``models.*`` and ``services.*`` in the project's
    files are
    ignored with a warning (a repository could otherwise send the user's key to a server of
    its choosing, or another variable's value as the key); the user's values stay. Like
    ``permissions.mode: bypass`` and ``secrets.pass_to_commands`` (see below)."""
    user = manager.layer("user")
    for scope in PROJECT_SCOPES:
        project = manager.layer(scope)
        for section in ("providers", "models", "services"):
            entries = project.get(section)
            if not isinstance(entries, Mapping):
                continue
            for name, entry in entries.items():
                chosen = [k for k in KEY_ROUTES if isinstance(entry, Mapping) and k in entry]
                if chosen:
                    _restore_user_routes(settings[section][name], user, section, name, chosen)
                    warnings.append(
                        f"{manager.path(scope)}: a project may not set {section}.{name}."
                        f"{' or '.join(chosen)} (it would decide where your provider key is "
                        "sent); ignored. Set it in your user settings, or use --base-url for "
                        "one run.")


def _restore_user_routes(target: dict[str, Any], user: Mapping[str, Any], section: str,
                         name: str, chosen: list[str]) -> None:
    """Put the user's values of ``chosen`` back into the merged entry (or drop them)."""
    user_entries = user.get(section)
    user_entry = user_entries.get(name) if isinstance(user_entries, Mapping) else None
    for key in chosen:
        if isinstance(user_entry, Mapping) and key in user_entry:
            target[key] = user_entry[key]
        else:
            target.pop(key, None)


_PRIVATE_NETWORK = "it would let the model reach your private network"
#: settings that open the host up beyond the workspace, which only the user may choose, and
#: what a project's files could otherwise do with them
USER_ONLY_SETTINGS = {
    "plugins.builtins.web.allow_private_addresses": _PRIVATE_NETWORK,
    "plugins.builtins.web.allowed_networks": _PRIVATE_NETWORK,
    "plugins.builtins.web.searxng_url": "it would choose the server your search queries are "
                                        "sent to, on your private network too",
    "plugins.builtins.notify.command": "it would run a program of the repository's choosing "
                                       "on your machine, without asking",
    "compat.claude.settings_sources": "it would switch on the hooks of the Claude settings "
                                      "files the repository ships",
    "compat.claude.read_permissions": "it would switch off the deny rules of your Claude "
                                      "settings files",
    "trusted_projects": "it would trust a project in your stead",
}


def keep_user_only(manager: SettingsManager, settings: dict[str, Any],
                   warnings: list[str]) -> None:
    """:data:`USER_ONLY_SETTINGS` set in the project's files are ignored with a warning; the
    user's value (or none) stays."""
    from ..settings.manager import restore_user_value

    for scope in PROJECT_SCOPES:
        for dotted, why in USER_ONLY_SETTINGS.items():
            *parents, leaf = dotted.split(".")
            if not _has(manager.layer(scope), [*parents, leaf]):
                continue
            restore_user_value(manager, settings, dotted)
            warnings.append(f"{manager.path(scope)}: a project may not set {dotted} ({why}); "
                            "ignored. Set it in your user settings.")


def _has(layer: Mapping[str, Any], path: list[str]) -> bool:
    for key in path:
        if not isinstance(layer, Mapping) or key not in layer:
            return False
        layer = layer[key]
    return True
