"""Hooks in ZCode's config files: ``~/.zcode/cli/config.json`` and the workspace's
``.zcode/config.json``, key ``hooks``::

    {"hooks": {"enabled": true, "timeoutMs": 30000, "maxOutputBytes": 65536,
               "events": {"PreToolUse": [{"matcher": "Bash", "hooks": [...]}]}}}

A file's hooks run only when its ``enabled`` is true (ZCode's default is false). Its
``timeoutMs`` is the default timeout of its handlers and ``maxOutputBytes`` how much of their
stdout is read (ZCode's default: 32 KiB). Both files together are one plugin, ``zcode:config``,
the user file's handlers first. Parsing never raises for bad content: each problem is a
diagnostic and only the bad part is left out, as for plugin folders.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from zpi_compat_claude.hooks.config import HookConfig, parse_hooks
from zpi_compat_claude.manifest import ManifestError, read_json
from zpi_compat_claude.records import evolve
from zpi_host.support.attrs_methods import FrozenFieldsEq

from .dialect import ZCODE

KEYS = frozenset({"enabled", "timeoutMs", "maxOutputBytes", "events"})


@attrs.frozen(repr=False, eq=False, slots=False)
class ConfigHooks(FrozenFieldsEq):
    """The hooks of one config file. ``config`` is empty unless the file enables them."""

    path: Path
    enabled: bool
    config: HookConfig
    diagnostics: tuple[str, ...] = ()


def _positive(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def read_config_hooks(path: Path, root: Path | None = None) -> ConfigHooks | None:
    """The ``hooks`` of the config file ``path``; None when the file or the key is missing.
    Raises ManifestError when the file is not readable JSON (a ZCode config file it cannot
    read is an error the user must see), and when it is not a regular file of at most 1 MiB
    inside ``root`` (the workspace, for its ``.zcode/config.json``)."""
    if not os.path.lexists(path) or path.is_dir():
        return None
    data = read_json(path, root)
    if not isinstance(data, Mapping):
        raise ManifestError(f"{path}: a ZCode config file must be a JSON object")
    raw = data.get("hooks")
    if raw is None:
        return None
    where = f"{path}: hooks"
    if not isinstance(raw, Mapping):
        return ConfigHooks(path, False, HookConfig(), (
            f"{where} must be an object with \"enabled\" and \"events\"; no hook of this file "
            "runs",))
    problems: list[str] = [f"{where}: unknown field {key!r} ignored"
                           for key in sorted(str(k) for k in raw if k not in KEYS)]
    enabled = raw.get("enabled", False)
    if not isinstance(enabled, bool):
        problems.append(f"{where}.enabled must be true or false, got {enabled!r}; the hooks "
                        "of this file do not run")
        enabled = False
    timeout_s = None
    if raw.get("timeoutMs") is not None:
        ms = _positive(raw["timeoutMs"])
        if ms is None:
            problems.append(f"{where}.timeoutMs must be a number of milliseconds above 0, got "
                            f"{raw['timeoutMs']!r}; the default (60000) is used")
        else:
            timeout_s = ms / 1000
    cap = None
    if raw.get("maxOutputBytes") is not None:
        size = raw["maxOutputBytes"]
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            problems.append(f"{where}.maxOutputBytes must be a whole number of bytes above 0, "
                            f"got {size!r}; the default (32768) is used")
        else:
            cap = size
    if not enabled:
        if raw.get("events") and not problems:
            problems.append(f"{where}.enabled is not true, so its hooks do not run (ZCode's "
                            "default); set \"enabled\": true to run them")
        return ConfigHooks(path, False, HookConfig(), tuple(problems))
    events = raw.get("events")
    if events is None:
        return ConfigHooks(path, True, HookConfig(), tuple(problems))
    if not isinstance(events, Mapping):
        problems.append(f"{where}.events must be an object mapping event names to lists of "
                        "matcher groups; no hook of this file runs")
        return ConfigHooks(path, True, HookConfig(), tuple(problems))
    config, parsed = parse_hooks(events, f"{where}.events", ZCODE)
    problems.extend(parsed)
    return ConfigHooks(path, True, with_defaults(config, timeout_s, cap), tuple(problems))


def with_defaults(config: HookConfig, timeout_s: float | None, cap: int | None) -> HookConfig:
    """``config`` with the file's ``timeoutMs`` and ``maxOutputBytes`` given to each handler
    that does not set its own timeout."""
    if timeout_s is None and cap is None:
        return config
    events = {}
    for event, groups in config.events.items():
        events[event] = tuple(evolve(group, handlers=tuple(
            evolve(handler,
                   timeout_s=timeout_s if handler.timeout_s is None else handler.timeout_s,
                   output_cap=cap if handler.output_cap is None else handler.output_cap)
            for handler in group.handlers)) for group in groups)
    return HookConfig(events, config.description)
