"""Where Claude plugin folders come from, and which Claude settings files may run hooks.

Sources, in the order their plugins are registered (the first folder holding a name keeps it):

1. ``compat.claude.plugin_dirs`` (``zpi-host run --plugin-dir DIR`` puts its folders first);
2. the plugins Claude Code installed and enabled (``~/.claude/plugins/installed_plugins.json``
   and ``enabledPlugins`` in Claude's settings files), when ``compat.claude.use_installed`` is
   true;
3. the ``skills/``, ``commands/`` and ``agents/`` of ``~/.claude`` and of the project's
   ``.claude`` (plugins ``claude:user`` and ``claude:project``, not namespaced).

Hooks in Claude's ``settings.json`` files are commands someone else wrote, so they run only for
the files named in ``compat.claude.settings_sources``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from zpi_host.errors import ZpiError

from .manifest import ManifestError, read_json
from .records import field, record

SETTINGS_SOURCES = ("user", "project", "local")


class ClaudeSettingsError(ZpiError):
    """A ``compat.claude.*`` setting of the wrong shape; names the key and the fix."""


@record
class FolderRef:
    """A plugin folder to load, and how it was found (for messages)."""

    path: Path
    origin: str
    #: ``name@marketplace`` for a plugin Claude Code installed
    plugin_id: str | None = None
    version: str | None = None


@record
class Broken:
    """Something found that cannot become a plugin: listed as failed under ``name``."""

    name: str
    reason: str


@record
class ClaudeSettings:
    """The ``compat.claude`` settings, type-checked."""

    plugin_dirs: tuple[Path, ...] = ()
    use_installed: bool = False
    settings_sources: tuple[str, ...] = ()
    #: plugin name -> its ``options`` mapping (``compat.claude.plugins.<name>.options``)
    plugin_options: Mapping[str, Mapping[str, Any]] = field(factory=dict)
    #: default hook handler timeout in seconds (``compat.claude.hook_timeout``; None: the
    #: hook engine's default)
    hook_timeout: float | None = None

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], cwd: Path,
                      key: str = "claude") -> ClaudeSettings:
        """Read ``compat.<key>`` (``claude``; ``zcode`` for that dialect); relative folders
        are relative to ``cwd``."""
        compat = settings.get("compat") or {}
        claude = compat.get(key) if isinstance(compat, Mapping) else None
        if claude is None:
            return cls()
        if not isinstance(claude, Mapping):
            raise ClaudeSettingsError(f"setting compat.{key} must be an object")
        dirs = _or(claude.get("plugin_dirs"), [])
        if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
            raise ClaudeSettingsError(f"setting compat.{key}.plugin_dirs must be a list of "
                                      f"folder paths, got {dirs!r}")
        use_installed = claude.get("use_installed", False)
        if not isinstance(use_installed, bool):
            raise ClaudeSettingsError(f"setting compat.{key}.use_installed must be true or "
                                      f"false, got {use_installed!r}")
        sources = _or(claude.get("settings_sources"), [])
        if not isinstance(sources, list) or any(s not in SETTINGS_SOURCES for s in sources):
            raise ClaudeSettingsError(
                f"setting compat.{key}.settings_sources must be a list of "
                f"{', '.join(repr(s) for s in SETTINGS_SOURCES)}, got {sources!r}")
        plugins = _or(claude.get("plugins"), {})
        if not isinstance(plugins, Mapping):
            raise ClaudeSettingsError(f"setting compat.{key}.plugins must be an object: "
                                      "plugin name -> {\"options\": {...}}")
        options: dict[str, Mapping[str, Any]] = {}
        for name, entry in plugins.items():
            values = entry.get("options", {}) if isinstance(entry, Mapping) else None
            if not isinstance(values, Mapping):
                raise ClaudeSettingsError(f"setting compat.{key}.plugins.{name} must be an "
                                          "object with an \"options\" object")
            options[name] = values
        timeout = claude.get("hook_timeout")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(
                timeout, int | float) or timeout <= 0):
            raise ClaudeSettingsError(f"setting compat.{key}.hook_timeout must be a number of "
                                      f"seconds above 0, got {timeout!r}")
        root = Path(cwd)
        return cls(
            plugin_dirs=tuple(_absolute(root, d) for d in dirs),
            use_installed=use_installed,
            settings_sources=tuple(dict.fromkeys(sources)),
            plugin_options=options,
            hook_timeout=None if timeout is None else float(timeout),
        )


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _absolute(cwd: Path, raw: str) -> Path:
    path = Path(raw).expanduser()
    return Path(os.path.abspath(path if path.is_absolute() else cwd / path))


def claude_home(environ: Mapping[str, str] | None = None) -> Path:
    """Claude Code's user folder: ``CLAUDE_CONFIG_DIR`` if set, else ``~/.claude``."""
    env = os.environ if environ is None else environ
    raw = env.get("CLAUDE_CONFIG_DIR") or "~/.claude"
    return Path(os.path.abspath(Path(raw).expanduser()))


def settings_file(source: str, home: Path, cwd: Path) -> Path:
    """The Claude settings file of ``source`` (``user``, ``project`` or ``local``)."""
    if source == "user":
        return home / "settings.json"
    name = "settings.json" if source == "project" else "settings.local.json"
    return cwd / ".claude" / name


def configured_folders(config: ClaudeSettings, section: str = "claude") -> list[FolderRef]:
    """``compat.<section>.plugin_dirs`` (with ``--plugin-dir`` folders first), each once."""
    seen: set[Path] = set()
    refs = []
    for path in config.plugin_dirs:
        key = path.resolve()
        if key in seen:
            continue
        seen.add(key)
        refs.append(FolderRef(path, f"compat.{section}.plugin_dirs / --plugin-dir"))
    return refs


def installed_folders(home: Path, cwd: Path, *, prefix: str = "claude",
                      product: str = "Claude Code", settings_label: str = "Claude's settings",
                      enabled_files: Sequence[Path] | None = None,
                      ) -> tuple[list[FolderRef], list[Broken]]:
    """The plugins Claude Code installed (``plugins/installed_plugins.json``, format 1 or 2)
    and enabled (``enabledPlugins`` in the user, project and local settings files; a later
    file decides for a plugin it names). A project-scoped install counts only in its project.
    Another product keeping the same registry under its own ``home`` names its settings files
    in ``enabled_files``; ``prefix``, ``product`` and ``settings_label`` name it in what is
    reported.
    """
    registry = home / "plugins" / "installed_plugins.json"
    problems: list[str] = []
    files = enabled_files if enabled_files is not None else [
        settings_file(source, home, cwd) for source in SETTINGS_SOURCES]
    enabled = _enabled_plugins(files, problems, cwd)
    installed = f"{prefix}:installed"
    if not registry.exists():
        return [], [Broken(installed, "; ".join(problems))] if problems else []
    try:
        data = read_json(registry)
    except ManifestError as exc:
        return [], [Broken(installed, "; ".join([str(exc), *problems]))]
    plugins = data.get("plugins") if isinstance(data, dict) else None
    if not isinstance(plugins, dict):
        problems.append(f"{registry}: expected an object with \"plugins\" (plugin id -> "
                        "installations); is this a newer format? Load the folders with "
                        f"compat.{prefix}.plugin_dirs instead")
        return [], [Broken(installed, "; ".join(problems))]
    refs: list[FolderRef] = []
    broken: list[Broken] = []
    here = cwd.resolve()
    for plugin_id, on in enabled.items():
        if on is not True:
            continue
        short = plugin_id.split("@", 1)[0]
        entries = plugins.get(plugin_id)
        if entries is None:
            broken.append(Broken(f"{prefix}:{short}", f"{plugin_id} is enabled in "
                                 f"{settings_label} but not installed (not in {registry})"))
            continue
        entry = _pick_installation(entries, here)
        if entry is None:
            continue  # installed for another project only
        raw_path = entry.get("installPath")
        if not isinstance(raw_path, str):
            broken.append(Broken(f"{prefix}:{short}", f"{registry}: {plugin_id} has no "
                                 "installPath"))
            continue
        path = Path(raw_path).expanduser()
        if not path.is_dir():
            broken.append(Broken(f"{prefix}:{short}", f"{plugin_id} is installed at {path}, "
                                 f"which is not a folder; reinstall it with {product}"))
            continue
        version = entry.get("version")
        refs.append(FolderRef(path, f"installed by {product} ({plugin_id})", plugin_id,
                              version if isinstance(version, str) else None))
    if problems:
        broken.append(Broken(installed, "; ".join(problems)))
    return refs, broken


def _pick_installation(entries: Any, cwd: Path) -> Mapping[str, Any] | None:
    """Format 2: a list of installations (user, project, local); format 1: one object."""
    candidates = entries if isinstance(entries, list) else [entries]
    user = None
    for entry in candidates:
        if not isinstance(entry, Mapping):
            continue
        scope = entry.get("scope", "user")
        if scope in ("project", "local"):
            project = entry.get("projectPath")
            if isinstance(project, str) and Path(project).expanduser().resolve() == cwd:
                return entry
        elif user is None:
            user = entry
    return user


def _enabled_plugins(files: Sequence[Path], problems: list[str], cwd: Path
                     ) -> dict[str, Any]:
    """``enabledPlugins`` of the settings files; a project's may not link out of it."""
    enabled: dict[str, Any] = {}
    for path in files:
        if not os.path.lexists(path):
            continue
        try:
            data = read_json(path, cwd if path.is_relative_to(cwd) else None)
        except ManifestError as exc:
            problems.append(str(exc))
            continue
        value = data.get("enabledPlugins") if isinstance(data, dict) else None
        if isinstance(value, dict):
            enabled.update(value)
        elif isinstance(value, list):  # an older shape: the enabled ids
            enabled.update({item: True for item in value if isinstance(item, str)})
        elif value is not None:
            problems.append(f"{path}: enabledPlugins must be an object (plugin id -> true or "
                            "false)")
    return enabled


def claude_options(home: Path, plugin_id: str) -> Mapping[str, Any]:
    """Option values Claude Code stored for an installed plugin (``pluginConfigs`` in its user
    settings; sensitive values live in the system keychain and are not read)."""
    path = home / "settings.json"
    try:
        data = read_json(path) if path.exists() else {}
    except ManifestError:
        return {}  # already reported by installed_folders
    configs = data.get("pluginConfigs") if isinstance(data, dict) else None
    entry = configs.get(plugin_id) if isinstance(configs, dict) else None
    options = entry.get("options") if isinstance(entry, dict) else None
    return options if isinstance(options, dict) else {}
