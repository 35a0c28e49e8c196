"""PluginHost: the pluggy manager, isolated entry-point loading, blocking and diagnostics.

Every plugin, whether it is part of the kernel, an installed distribution or a folder found by
a compat adapter, goes through :meth:`PluginHost.register_plugin`, which validates it against
the contract and records where it came from. A plugin that fails is recorded with the reason and
removed with everything it registered; the others keep working.
"""

from __future__ import annotations

import importlib
import os
import types
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from ..errors import PluginHostSealedError, PluginLoadError, docs_url
from ..support.env_flags import env_flag
from . import hookspecs

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from .hookcalls import HookCalls

ENTRY_POINT_GROUP = "zpi.plugins"
SOURCES = ("kernel", "entrypoint", "claude", "zcode", "local")

#: Kernel plugins: stable name -> module. Imported on demand, registered before entry points.
KERNEL_PLUGINS: tuple[tuple[str, str], ...] = (
    ("zpi.tools", "zpi_host.tools.plugin"),
    ("zpi.models", "zpi_host.providers.plugin"),
)


#: Plugins every PluginHost of this process registers (source ``local``), after the kernel
#: plugins: for embedding programs and for the ``zpi_plugins`` test fixture.
_PROCESS_PLUGINS: dict[str, object] = {}


def register_process_plugin(plugin: object, name: str) -> Callable[[], None]:
    """Make every PluginHost created from now on load ``plugin`` as ``name`` (source
    ``local``). Returns a function that undoes the registration."""
    if name in _PROCESS_PLUGINS:
        raise ValueError(f"a process plugin named {name!r} is already registered")
    _PROCESS_PLUGINS[name] = plugin

    def undo() -> None:
        if _PROCESS_PLUGINS.get(name) is plugin:
            del _PROCESS_PLUGINS[name]

    return undo


def env_list(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


class PluginConfig:
    """Which plugins to load, from the environment, the CLI (``-p no:NAME``) and settings."""

    __slots__ = ("autoload", "cwd", "disabled", "load_only", "project_files", "project_scopes",
                 "settings", "strict", "trace", "trusted", "user_files")

    def __init__(
        self,
        *,
        load_only: Iterable[str] | None = None,
        disabled: Iterable[str] = (),
        autoload: bool = True,
        strict: bool = False,
        trace: bool = False,
        settings: Mapping[str, Any] | None = None,
        cwd: Path | None = None,
        trusted: bool = True,
        project_files: bool = True,
        user_files: bool = True,
        project_scopes: Iterable[str] | None = None,
    ) -> None:
        self.load_only = None if load_only is None else frozenset(load_only)
        self.disabled = frozenset(disabled)
        self.autoload = autoload
        self.strict = strict
        self.trace = trace
        #: the merged settings and working directory the plugins are loaded for: adapters read
        #: their folders from here in ``zpi_load_plugins`` (e.g. ``compat.claude.plugin_dirs``)
        self.settings: Mapping[str, Any] = settings if settings is not None else {}
        self.cwd = cwd
        #: whether what the project at ``cwd`` ships may run programs (its hooks, its plugin
        #: folders; see :mod:`zpi_host.settings.trust`). A session's assembly decides; a
        #: program building a host itself is the user and gets True unless it says otherwise.
        #: Untrusted, adapters give what they hold back to :meth:`PluginHost.withhold`.
        self.trusted = trusted
        #: whether adapters may read the project's own files at all (``.claude/``, ``.zcode/``,
        #: ``.agents/``): False when the SDK's ``setting_sources`` leaves the project out
        self.project_files = project_files
        #: which of the project's settings scopes are read: ``project`` (``.claude/
        #: settings.json`` and the project's folders: ``.claude/`` commands, skills, agents,
        #: ``CLAUDE.md``; ``.zcode/``; ``.mcp.json``) and ``local`` (``.claude/
        #: settings.local.json`` alone), as claude-agent-sdk's ``setting_sources`` name them;
        #: by default both when ``project_files``, else none
        self.project_scopes: frozenset[str] = (
            frozenset(project_scopes) if project_scopes is not None
            else frozenset(("project", "local") if project_files else ()))
        #: whether adapters may read the user's own folders and settings files (``~/.claude``,
        #: ``~/.zcode``): False when the SDK's ``setting_sources`` leaves ``user`` out
        self.user_files = user_files

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        blocked: Iterable[str] = (),
        settings_disabled: Iterable[str] = (),
        settings: Mapping[str, Any] | None = None,
        cwd: Path | None = None,
        trusted: bool = True,
        project_files: bool = True,
        user_files: bool = True,
        project_scopes: Iterable[str] | None = None,
    ) -> PluginConfig:
        env = os.environ if environ is None else environ
        load = env.get("ZPI_LOAD_PLUGINS")
        return cls(
            load_only=None if load is None else env_list(load),
            disabled=[*env_list(env.get("ZPI_DISABLE_PLUGINS")), *blocked, *settings_disabled],
            autoload=not env_flag(env.get("ZPI_DISABLE_PLUGIN_AUTOLOAD")),
            strict=env_flag(env.get("ZPI_STRICT_PLUGINS")),
            trace=env_flag(env.get("ZPI_TRACE_PLUGINS")),
            settings=settings, cwd=cwd, trusted=trusted, project_files=project_files,
            user_files=user_files, project_scopes=project_scopes,
        )


class PluginRecord:
    """What diagnostics know about one plugin, whether it loaded or not."""

    __slots__ = (
        "contributes",
        "distribution",
        "error",
        "name",
        "plugin",
        "registered_by",
        "source",
        "status",
        "version",
    )

    def __init__(
        self,
        name: str,
        source: str,
        *,
        distribution: str | None = None,
        version: str | None = None,
        status: str = "ok",
        error: str | None = None,
        plugin: object | None = None,
        registered_by: str | None = None,
        contributes: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        if source not in SOURCES:
            raise ValueError(f"plugin source must be one of {SOURCES}, got {source!r}")
        self.name = name
        self.source = source
        self.distribution = distribution
        self.version = version
        self.status = status
        self.error = error
        self.plugin = plugin
        self.registered_by = registered_by
        self.contributes: dict[str, list[str]] = {
            kind: sorted(names) for kind, names in (contributes or {}).items()
        }

    def fail(self, reason: str) -> None:
        self.status, self.error, self.plugin = "failed", reason, None

    def __repr__(self) -> str:
        return f"<PluginRecord {self.name} {self.source} {self.status}>"


def _describe_validation_error(exc: pluggy.PluginValidationError) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return ("hook implementation does not match the contract: " + "; ".join(lines)
            + f" (see {docs_url('hooks')} for each hook's arguments)")


_ABSENT = object()
#: what pluggy would find on a module for a name that is not a function: no hook
#: implementation unless it is one of these
_HOOKABLE = (staticmethod, classmethod, types.MethodType, types.FunctionType)


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager, quicker to read a module plugin's hook implementations: registering
    looks at every name of the plugin, and pluggy's own lookup
    (``inspect.getattr_static``, which walks the module type's MRO) is most of a plugin's
    registration; most plugins are modules. For a plain module, the value in its namespace is
    what ``getattr_static`` finds; a function's marker options are read from it directly, a
    value pluggy cannot hook (a class, a module, a constant) is skipped, and anything else
    (another plugin type, a name the module does not hold, a dunder) is pluggy's to read."""

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if type(plugin) is types.ModuleType and not name.startswith("__"):
            value = vars(plugin).get(name, _ABSENT)
            if type(value) is types.FunctionType:
                opts = value.__dict__.get(self._marker)
                return opts if isinstance(opts, dict) else None
            if value is not _ABSENT and not isinstance(value, _HOOKABLE):
                return None
        return super().parse_hookimpl_opts(plugin, name)

    @property
    def _marker(self) -> str:
        return self.project_name + "_impl"


class PluginHost:
    """Owns the pluggy manager and the record of every plugin it was asked to load."""

    def __init__(self, config: PluginConfig | None = None) -> None:
        self.config = config if config is not None else PluginConfig.from_env()
        self.pm = _PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self._records: dict[str, PluginRecord] = {}
        self._loading_parent: str | None = None
        self._hooks: HookCalls | None = None
        self._loaded = False
        #: what adapters held back because the project is not trusted: one line each, naming
        #: the program or folder (``PreToolUse hook: ./x.sh (from .zcode/config.json)``)
        self.withheld: list[str] = []
        #: why the host takes no more registrations (its session started), None while open
        self.sealed_because: str | None = None
        self.released: list[str] = []

    # ----------------------------------------------------------------------------- queries

    @property
    def records(self) -> list[PluginRecord]:
        """Every plugin seen, in registration order (failed and blocked ones included)."""
        return list(self._records.values())

    def get(self, name: str) -> PluginRecord | None:
        return self._records.get(name)

    @property
    def hooks(self) -> HookCalls:
        """The typed facade: one method per hook (never call ``pm.hook.*`` directly)."""
        if self._hooks is None:
            from .hookcalls import HookCalls

            self._hooks = HookCalls(self)
        return self._hooks

    def implemented_hooks(self, name: str) -> list[str]:
        record = self._records.get(name)
        if record is None or record.plugin is None:
            return []
        return sorted(hc.name for hc in self.pm.get_hookcallers(record.plugin) or ())

    # ----------------------------------------------------------------------------- loading

    def load(self) -> PluginHost:
        """Register the kernel plugins, the entry points, then run ``zpi_load_plugins``."""
        if self._loaded:
            return self
        self._loaded = True
        for name, module in KERNEL_PLUGINS:
            blocked = self._blocked_reason(name, None)
            if blocked is not None:
                self._block(PluginRecord(name, "kernel", **self._kernel_dist()), blocked)
                continue
            self.register_plugin(importlib.import_module(module), name, source="kernel",
                                 **self._kernel_dist())
        for name, plugin in list(_PROCESS_PLUGINS.items()):
            self.register_plugin(plugin, name, source="local")
        if self.config.autoload:
            for ep, dist, version in self._entry_points():
                self._load_entry_point(ep, dist, version)
        self._run_load_plugins()
        return self

    @staticmethod
    def _kernel_dist() -> dict[str, Any]:
        from ..support.distinfo import kernel_version

        return {"distribution": "zpi-host", "version": kernel_version()}

    @staticmethod
    def _entry_points() -> list[tuple[EntryPoint, str | None, str | None]]:
        """The plugin entry points, each with its distribution's name and version, sorted.
        Each distribution's metadata is read once: ``Distribution.name`` and ``.version`` read
        and parse the METADATA file again at every access (28 parses for 9 entry points), and
        only its head (:mod:`.distinfo`)."""
        from importlib.metadata import entry_points

        from ..support import distinfo

        identities: dict[int, tuple[str | None, str | None]] = {}

        def identity(ep: EntryPoint) -> tuple[str | None, str | None]:
            dist = ep.dist
            if dist is None:
                return None, None
            if id(dist) not in identities:
                identities[id(dist)] = distinfo.identity(dist)
            return identities[id(dist)]

        found = [(ep, *identity(ep)) for ep in entry_points(group=ENTRY_POINT_GROUP)]
        return sorted(found, key=lambda item: (item[1] or "", item[0].name))

    def _blocked_reason(self, name: str, distribution: str | None) -> str | None:
        cfg = self.config
        if name in cfg.disabled or (distribution and distribution in cfg.disabled):
            return "blocked by ZPI_DISABLE_PLUGINS, -p no:NAME or settings plugins.disabled"
        return None

    def _load_entry_point(self, ep: EntryPoint, dist: str | None, version: str | None) -> None:
        record = PluginRecord(ep.name, "entrypoint", distribution=dist, version=version)
        load_only = self.config.load_only
        if load_only is not None and ep.name not in load_only and dist not in load_only:
            record.status, record.error = "blocked", "not listed in ZPI_LOAD_PLUGINS"
            self._records.setdefault(ep.name, record)
            return
        blocked = self._blocked_reason(ep.name, dist)
        if blocked is not None:
            self._block(record, blocked)
            return
        if ep.name in self._records and self._records[ep.name].status == "ok":
            other = self._records[ep.name]
            self._fail(record, f"the name {ep.name!r} is already used by "
                               f"{other.distribution or other.source}; block the one not "
                               f"wanted by its distribution (-p no:DISTRIBUTION)")
            return
        try:
            plugin = ep.load()
        except Exception as exc:
            self._fail(record, f"import of {ep.value!r} failed: {type(exc).__name__}: {exc}")
            return
        self._register(plugin, record)

    def register_plugin(
        self,
        plugin: object,
        name: str,
        *,
        source: str = "local",
        distribution: str | None = None,
        version: str | None = None,
        contributes: Mapping[str, Iterable[str]] | None = None,
    ) -> PluginRecord:
        """Register ``plugin`` under ``name`` after validating it against the contract.

        Returns the record; its ``status`` says whether it loaded. In strict mode a failure
        raises :class:`~zpi_host.errors.PluginLoadError` instead. Called from
        ``zpi_load_plugins``, the new plugin is attributed to the caller (removed with it if the
        caller fails).
        """
        self._check_open(name)
        record = PluginRecord(
            name, source, distribution=distribution, version=version,
            registered_by=self._loading_parent, contributes=contributes,
        )
        if name in self._records and self._records[name].status == "ok":
            self._fail(record, f"the name {name!r} is already registered")
            return record
        blocked = self._blocked_reason(name, distribution)
        if blocked is not None:
            self._block(record, blocked)
            return record
        self._register(plugin, record)
        return record

    def withhold(self, items: Iterable[str]) -> None:
        """Note what a plugin did not load because the project is not trusted
        (``config.trusted`` is False): the session asks, refuses or says it was not run."""
        self.withheld.extend(item for item in items if item not in self.withheld)

    def report_failed_plugin(
        self, name: str, reason: str, *, source: str = "local",
        contributes: Mapping[str, Iterable[str]] | None = None,
    ) -> PluginRecord:
        """Record a plugin that could not even be built (a Claude folder with a broken
        manifest): listed as failed with ``reason``; raises in strict mode."""
        self._check_open(name)
        record = PluginRecord(name, source, registered_by=self._loading_parent,
                              contributes=contributes)
        blocked = self._blocked_reason(name, None)
        if blocked is not None:
            self._block(record, blocked)
        else:
            self._fail(record, reason)
        return record

    def seal(self, reason: str) -> None:
        """Take no more registrations or removals (a session this host serves has started)."""
        self.sealed_because = self.sealed_because or reason

    def _check_open(self, name: str) -> None:
        if self.sealed_because is not None:
            raise PluginHostSealedError(name, self.sealed_because)

    def release(self) -> None:
        """At the end of the session it served: seal, then unregister every plugin, the last
        registered first (``released`` keeps that order). Idempotent."""
        self.seal("its session was disposed")
        for record in reversed(list(self._records.values())):
            if record.plugin is not None and self.pm.is_registered(record.plugin):
                self.pm.unregister(record.plugin)
            self.released.append(record.name)
        self._records.clear()

    def unregister(self, name: str) -> None:
        """Remove a plugin and everything it registered through ``zpi_load_plugins``."""
        self._check_open(name)
        for child in [r.name for r in self._records.values() if r.registered_by == name]:
            self.unregister(child)
        record = self._records.pop(name, None)
        if record is not None and record.plugin is not None and self.pm.is_registered(
            record.plugin
        ):
            self.pm.unregister(record.plugin)

    def fail_plugin(self, name: str, reason: str) -> None:
        """Fail a loaded plugin found at fault after loading (a tool name another plugin
        registered first): it is removed with everything it registered and listed as failed
        with ``reason``; in strict mode this raises."""
        record = self._records.get(name)
        if record is None or record.status != "ok":
            return
        self.unregister(name)
        self._fail(record, reason)

    def _block(self, record: PluginRecord, reason: str) -> None:
        record.status, record.error = "blocked", reason
        if record.name in self.config.disabled:  # the name itself: no plugin may take it
            self.pm.set_blocked(record.name)
        self._keep(record)

    def _fail(self, record: PluginRecord, reason: str) -> None:
        record.fail(reason)
        self._keep(record)
        if self.config.strict:
            raise PluginLoadError(record.name, reason)

    def _keep(self, record: PluginRecord) -> None:
        """Record a plugin that did not load, beside (not over) a plugin of the same name. Only
        a loaded plugin holds its name: one that did not (blocked by its distribution, failed)
        gives way to a plugin that loads under its name later (:meth:`_register`)."""
        existing = self._records.get(record.name)
        if existing is not None and existing is not record:
            record.name = self._aside_name(record.name)
        self._records[record.name] = record

    def _aside_name(self, name: str) -> str:
        taken = sum(1 for other in self._records if other.startswith(name))
        return f"{name} (duplicate {taken})"

    def _register(self, plugin: object, record: PluginRecord) -> None:
        problem = self._unmarked_hooks(plugin)
        if problem is None:
            try:
                self.pm.register(plugin, name=record.name)
            except pluggy.PluginValidationError as exc:
                problem = _describe_validation_error(exc)
            except ValueError as exc:
                problem = str(exc)
        if problem is None:
            problem = self._check_hookimpls(plugin)
        if problem is not None:
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            self._fail(record, problem)
            return
        record.plugin = plugin
        held = self._records.get(record.name)
        if held is not None and held is not record and held.status != "ok":  # it gives way
            aside = self._aside_name(record.name)
            del self._records[record.name]
            held.name = aside
            self._records[held.name] = held
        self._records[record.name] = record

    @staticmethod
    def _unmarked_hooks(plugin: object) -> str | None:
        marker = f"{hookspecs.PROJECT_NAME}_impl"
        for attr in dir(plugin):
            if attr.startswith("zpi_") and attr in hookspecs.__dict__:
                func = getattr(plugin, attr, None)
                if callable(func) and not hasattr(func, marker):
                    return (f"{attr} is not decorated with @zpi_host.hookimpl, so it would "
                            "never be called; add the decorator")
        return None

    def _check_hookimpls(self, plugin: object) -> str | None:
        for caller in self.pm.get_hookcallers(plugin) or ():
            impls = [i for i in caller.get_hookimpls() if i.plugin is plugin]
            if caller.spec is None:
                return self._unknown_hook(caller.name)
            if any(i.hookwrapper or i.wrapper for i in impls):
                return (f"{caller.name} is declared as a hook wrapper; zpi calls implementations "
                        "one by one to await them, so wrappers are not supported")
        return None

    @staticmethod
    def _unknown_hook(name: str) -> str:
        import difflib

        known = [n for n in vars(hookspecs) if n.startswith("zpi_")]
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return f"{name} is not a zpi hook{hint}; see {docs_url('hooks')} for the contract"

    def _run_load_plugins(self) -> None:
        """Call each plugin's ``zpi_load_plugins`` once, including plugins it adds, until none
        is new."""
        from .hookcalls import run_sync

        done: set[str] = set()
        while True:
            pending = [
                r for r in list(self._records.values())
                if r.status == "ok" and r.name not in done
            ]
            if not pending:
                return
            for record in pending:
                done.add(record.name)
                if record.status != "ok":
                    continue
                impls = [
                    impl for impl in self.pm.hook.zpi_load_plugins.get_hookimpls()
                    if impl.plugin is record.plugin
                ]
                for impl in impls:
                    self._loading_parent = record.name
                    try:
                        run_sync(impl.function(**{a: self for a in impl.argnames}))
                    except Exception as exc:
                        if isinstance(exc, PluginLoadError) and self.config.strict:
                            raise
                        self.unregister(record.name)
                        self._fail(record, f"zpi_load_plugins raised {type(exc).__name__}: {exc}")
                    finally:
                        self._loading_parent = None

