"""``zpi-host --list-plugins``: what is loaded, from where, and why not."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ..errors import PluginLoadError
from . import EXIT_FAILED, EXIT_OK


def list_plugins(
    blocked: Sequence[str], *, as_json: bool, strict: bool, cwd: str | None
) -> int:
    from ..diagnostics import format_table, plugin_rows
    from ..plugins import PluginConfig, PluginHost

    host = PluginHost(PluginConfig.from_env(blocked=blocked))
    try:
        host.load()
    except PluginLoadError as exc:
        print(f"zpi-host: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    rows = plugin_rows(host, Path(cwd).resolve() if cwd else None)
    if as_json:
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_table(rows))
    if strict and any(row["status"] == "failed" for row in rows):
        return EXIT_FAILED
    return EXIT_OK
