"""Where ``--plugin-dir`` folders go: to the Claude or the ZCode adapter's settings. Kept
apart from assembly so that ``zpi-host --list-plugins`` does not import what a session needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UsageError

#: a plugin folder holding this folder is a ZCode plugin: ``--plugin-dir`` gives it to the
#: ``zcode`` adapter (a dual Claude/ZCode folder has both manifests and goes there too)
ZCODE_MARKER = ".zcode-plugin"


def with_plugin_dirs(settings: dict[str, Any], dirs: Any,
                     zcode_dirs: Any = ()) -> dict[str, Any]:
    """``plugin_dirs`` (``--plugin-dir``) go first in ``compat.claude.plugin_dirs``, or in
    ``compat.zcode.plugin_dirs`` when the folder has ``.zcode-plugin/``; ``zcode_dirs``
    (``--zcode-plugin-dir``) always go to ZCode's."""
    for value, option in ((dirs, "plugin_dirs"), (zcode_dirs, "zcode_plugin_dirs")):
        if isinstance(value, str | Path):
            raise UsageError(f"{option} must be a list of folders")
    routed: dict[str, list[str]] = {"claude": [], "zcode": []}
    for raw in dirs:
        path = Path(raw).expanduser().resolve()
        routed["zcode" if (path / ZCODE_MARKER).is_dir() else "claude"].append(str(path))
    routed["zcode"] += [str(Path(d).expanduser().resolve()) for d in zcode_dirs]
    compat = dict(settings.get("compat") or {})
    for key, given in routed.items():
        if given:
            section = dict(compat.get(key) or {})
            section["plugin_dirs"] = given + list(section.get("plugin_dirs") or [])
            compat[key] = section
    return {**settings, "compat": compat}
