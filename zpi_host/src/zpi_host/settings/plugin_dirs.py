"""Where ``--plugin-dir`` folders go: to the Claude or the ZCode adapter's settings, and the
check that the adapter is there to read them. Kept apart from assembly so that
``zpi-host --list-plugins`` does not import what a session needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import UsageError

#: a plugin folder holding this folder is a ZCode plugin: ``--plugin-dir`` gives it to the
#: ``zcode`` adapter (a dual Claude/ZCode folder has both manifests and goes there too)
ZCODE_MARKER = ".zcode-plugin"

#: per settings section: the adapter plugin that reads its folders, the distribution that
#: ships that plugin, and the kind of folder, as a user calls it
ADAPTERS: dict[str, tuple[str, str, str]] = {
    "claude": ("claude", "zpi-compat-claude", "a Claude Code plugin folder"),
    "zcode": ("zcode", "zpi-compat-zcode", "a ZCode plugin folder"),
}


def route_plugin_dirs(dirs: Any, zcode_dirs: Any = ()) -> dict[str, list[tuple[str, str]]]:
    """Per adapter section, the folders given (absolute) with the option that gave each:
    ``dirs`` go to ``claude``, or to ``zcode`` when the folder has ``.zcode-plugin/``;
    ``zcode_dirs`` always to ``zcode``."""
    for value, option in ((dirs, "plugin_dirs"), (zcode_dirs, "zcode_plugin_dirs")):
        if isinstance(value, str | Path):
            raise UsageError(f"{option} must be a list of folders")
    routed: dict[str, list[tuple[str, str]]] = {"claude": [], "zcode": []}
    for raw in dirs:
        path = Path(raw).expanduser().resolve()
        section = "zcode" if (path / ZCODE_MARKER).is_dir() else "claude"
        routed[section].append((str(path), "--plugin-dir"))
    routed["zcode"] += [(str(Path(d).expanduser().resolve()), "--zcode-plugin-dir")
                        for d in zcode_dirs]
    return routed


def with_plugin_dirs(settings: dict[str, Any], dirs: Any,
                     zcode_dirs: Any = ()) -> dict[str, Any]:
    """``plugin_dirs`` (``--plugin-dir``) go first in ``compat.claude.plugin_dirs``, or in
    ``compat.zcode.plugin_dirs`` when the folder has ``.zcode-plugin/``; ``zcode_dirs``
    (``--zcode-plugin-dir``) always go to ZCode's."""
    compat = dict(settings.get("compat") or {})
    for key, given in route_plugin_dirs(dirs, zcode_dirs).items():
        if given:
            section = dict(compat.get(key) or {})
            section["plugin_dirs"] = [p for p, _ in given] + list(section.get("plugin_dirs")
                                                                  or [])
            compat[key] = section
    return {**settings, "compat": compat}


def check_adapters(dirs: Any, zcode_dirs: Any, plugins: Mapping[str, tuple[str, str | None]],
                   *, autoload: bool) -> None:
    """Refuse folders no adapter will read, rather than ignore them (a blocking hook that
    never runs): ``plugins`` maps each plugin the host saw to its status and reason."""
    for section, given in route_plugin_dirs(dirs, zcode_dirs).items():
        if not given:
            continue
        name, distribution, kind = ADAPTERS[section]
        path, option = given[0]
        status, reason = plugins.get(name, ("absent", None))
        if status == "ok":
            continue
        if status == "absent" and not autoload:
            why = ("plugins from distributions are not loaded (ZPI_DISABLE_PLUGIN_AUTOLOAD is "
                   "set): unset it")
        elif status == "absent":
            why = f"{distribution} is not installed: pip install {distribution}"
        else:
            why = f"the plugin {name!r} of {distribution} is {status} ({reason}): load it"
        raise UsageError(f"{option} {path}: {kind} needs the plugin {name!r} of "
                         f"{distribution}, and {why}, or leave out {option}")
