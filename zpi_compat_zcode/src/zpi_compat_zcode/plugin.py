"""Entry-point plugin ``zcode``: finds ZCode plugin folders, config-file hooks, skills and
commands, and registers them through ``zpi_compat_claude``'s engine with ZCode's dialect.

Each plugin folder becomes ``zcode:<name>``; ``~/.zcode``, ``~/.agents``, the project's
``.zcode`` and ``.agents`` become ``zcode:user``, ``zcode:user-agents``, ``zcode:project`` and
``zcode:project-agents`` (not namespaced); the hooks of ZCode's config files are
``zcode:config``. See ``docs/zcode-plugins.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from zpi_host import hookimpl

if TYPE_CHECKING:
    from zpi_compat_claude.folder import LoadContext


@hookimpl
def zpi_load_plugins(host: Any) -> None:
    """Register, in this order: ``compat.zcode.plugin_dirs`` (``--zcode-plugin-dir`` and
    ``--plugin-dir`` folders with ``.zcode-plugin/``), ZCode's installed plugins
    (``compat.zcode.use_installed``), the personal folders, the config-file hooks (registered
    last, so they run before plugin hooks, as in ZCode)."""
    if _nothing_to_load(host):
        return  # a few stat calls, not the folder machinery's imports
    from zpi_compat_claude.adapter import load_dialect
    from zpi_compat_claude.discovery import ClaudeSettings
    from zpi_compat_claude.folder import LoadContext
    from zpi_host.settings.manager import agent_dir

    from .dialect import ZCODE
    from .discovery import installed_folders, zcode_home

    cwd = Path(host.config.cwd or Path.cwd()).resolve()
    config = ClaudeSettings.from_settings(host.config.settings, cwd, key="zcode")
    ctx = LoadContext(cwd, agent_dir(), zcode_home(), config, ZCODE)
    from zpi_compat_claude.adapter import project_scopes

    # ZCode's workspace files are the project's own (no local file): the ``project`` source
    project = host.config.trusted and "project" in project_scopes(host)

    def installed(home: Path, cwd: Path) -> Any:
        return installed_folders(home, cwd, project=project)

    load_dialect(host, ctx, installed, lambda: load_config_hooks(host, ctx))


def _nothing_to_load(host: Any) -> bool:
    """True when no ``compat.zcode`` setting exists and none of ZCode's folders or config
    files does (standard library only)."""
    import os

    compat = host.config.settings.get("compat")
    if compat is not None and (not isinstance(compat, dict) or compat.get("zcode") is not None):
        return False
    home = Path(os.path.expanduser("~"))
    cwd = Path(host.config.cwd or os.getcwd())
    folders = [(home / ".zcode", ("skills", "commands")), (home / ".agents", ("skills",)),
               (cwd / ".zcode", ("skills", "commands")), (cwd / ".agents", ("skills", "commands"))]
    if any((folder / part).is_dir() for folder, parts in folders for part in parts):
        return False
    # lexists: a config file that is a FIFO or a device is loaded, to be reported as such
    return not any(os.path.lexists(path) for path in (home / ".zcode" / "cli" / "config.json",
                                                      cwd / ".zcode" / "config.json"))


def load_config_hooks(host: Any, ctx: LoadContext) -> None:
    """``zcode:config``: the hooks of ZCode's config files, user first. Listed with the files
    whose hooks run (``files``); a file that cannot be read is a warning, or the reason the
    plugin failed when no file is usable. The workspace file's hooks wait for the project's
    trust (``host.config.trusted``): its own ``hooks.enabled`` does not enable them alone."""
    from zpi_compat_claude.adapter import (
        project_scopes,
        register_hooks,
        report,
        withhold_hooks,
    )
    from zpi_compat_claude.hooks import HookConfig
    from zpi_compat_claude.manifest import ManifestError

    from .config_hooks import read_config_hooks
    from .discovery import config_files

    name = ctx.dialect.plugin("config")
    config = HookConfig()
    diagnostics: list[str] = []
    errors: list[str] = []
    files: list[str] = []
    found = False
    for scope, path in config_files(ctx.home, ctx.cwd):
        in_project = scope == "workspace"
        if in_project and "project" not in project_scopes(host):
            continue
        if not in_project and not getattr(host.config, "user_files", True):
            continue
        try:
            hooks = read_config_hooks(path, ctx.cwd if scope == "workspace" else None)
        except ManifestError as exc:
            errors.append(str(exc))
            continue
        if hooks is None:
            continue
        if in_project and not host.config.trusted:
            withhold_hooks(host, hooks.config, str(path))
            continue
        found = True
        diagnostics.extend(hooks.diagnostics)
        if hooks.enabled:
            files.append(str(path))
            config = config.merged(hooks.config)
    if errors and not files:
        report(host, ctx, name, "; ".join(errors))
        return
    if not found:
        return
    register_hooks(host, ctx, name, config, [*errors, *diagnostics],
                   root=ctx.cwd / ".zcode", data_key="config", where=" + ".join(files),
                   extra={"files": files})
