"""Shared helpers for the Claude plugin folder tests: corpus copies, loaded hosts, listing rows.

The corpus folders that do not start with ``hooks-`` belong to the folder tests; each test
copies the folders it uses into ``tmp_path`` so it may edit them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from zpi_host.contract.plugins import PluginConfig, PluginHost

CORPUS = Path(__file__).resolve().parents[1] / "zpi_compat_claude" / "corpus"


def copy_plugin(name: str, where: Path, as_name: str | None = None) -> Path:
    """A fresh copy of corpus folder ``name`` under ``where`` (named ``as_name``)."""
    target = where / (as_name or name)
    shutil.copytree(CORPUS / name, target, symlinks=True)
    return target


def claude_settings(dirs: Iterable[Path] = (), **claude: Any) -> dict[str, Any]:
    """Settings with ``compat.claude`` filled in (``plugin_dirs`` from ``dirs``)."""
    return {"compat": {"claude": {"plugin_dirs": [str(d) for d in dirs], **claude}}}


def load_host(settings: Mapping[str, Any], cwd: Path) -> PluginHost:
    """A loaded PluginHost whose only Claude input is ``settings`` and ``cwd``."""
    return PluginHost(PluginConfig(settings=settings, cwd=cwd)).load()


def rows(host: PluginHost, cwd: Path, settings: Mapping[str, Any] | None = None
         ) -> dict[str, dict[str, Any]]:
    """``--list-plugins --json`` rows of the ``claude:*`` plugins, by name."""
    from zpi_host.contract.diagnostics import plugin_rows

    return {row["name"]: row for row in plugin_rows(host, cwd, settings or {})
            if row["name"].startswith("claude:")}


def folder_of(host: PluginHost, name: str) -> Any:
    """The LoadedFolder behind plugin ``name``."""
    record = host.get(name)
    assert record is not None and record.plugin is not None, record
    return record.plugin.folder  # type: ignore[attr-defined]
