"""Shared helpers for the ZCode tests: the corpus, loaded hosts, listing rows, and a ZCode
home and project laid out from the corpus' config files and personal folders."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from zpi_host.contract.plugins import PluginConfig, PluginHost

CORPUS = Path(__file__).resolve().parents[1] / "zpi_compat_zcode" / "corpus"


def copy_plugin(name: str, where: Path, as_name: str | None = None) -> Path:
    """A fresh copy of corpus folder ``name`` under ``where`` (named ``as_name``)."""
    target = where / (as_name or name)
    shutil.copytree(CORPUS / name, target, symlinks=True)
    return target


def zcode_settings(dirs: Iterable[Path] = (), **zcode: Any) -> dict[str, Any]:
    """Settings with ``compat.zcode`` filled in (``plugin_dirs`` from ``dirs``)."""
    return {"compat": {"zcode": {"plugin_dirs": [str(d) for d in dirs], **zcode}}}


def load_host(settings: Mapping[str, Any], cwd: Path) -> PluginHost:
    return PluginHost(PluginConfig(settings=settings, cwd=cwd)).load()


def rows(host: PluginHost, cwd: Path, prefix: str = "zcode:") -> dict[str, dict[str, Any]]:
    """``--list-plugins --json`` rows of the plugins named ``<prefix>...``, by name."""
    from zpi_host.contract.diagnostics import plugin_rows

    return {row["name"]: row for row in plugin_rows(host, cwd, {})
            if row["name"].startswith(prefix)}


def user_config(home: Path, corpus_file: str) -> Path:
    """``~/.zcode/cli/config.json`` from a corpus config file."""
    target = home / ".zcode" / "cli" / "config.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(CORPUS / "config-files" / corpus_file, target)
    return target


def workspace_config(project: Path, corpus_file: str) -> Path:
    """``<project>/.zcode/config.json`` from a corpus config file."""
    target = project / ".zcode" / "config.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(CORPUS / "config-files" / corpus_file, target)
    return target


def personal_folders(home: Path, project: Path) -> None:
    """The corpus' ``~/.zcode``, ``~/.agents``, ``.zcode`` and ``.agents`` folders."""
    shutil.copytree(CORPUS / "personal" / "home", home, dirs_exist_ok=True)
    shutil.copytree(CORPUS / "personal" / "project", project, dirs_exist_ok=True)
