"""Shared helpers for the Claude hook tests: the corpus folders and ClaudeHooks built from
them the way the folder loader builds them (substitution, data folder, options)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zpi_compat_claude.hooks import ClaudeHooks, parse_hooks

CORPUS = Path(__file__).resolve().parents[1] / "zpi_compat_claude" / "corpus"


def substituter(root: Path, data_dir: Path, options: Mapping[str, str] | None = None) -> Any:
    """What the folder loader's ``substitute`` does, for tests."""

    def substitute(text: str) -> str:
        text = text.replace("${CLAUDE_PLUGIN_ROOT}", str(root))
        text = text.replace("${CLAUDE_PLUGIN_DATA}", str(data_dir))
        for key, value in (options or {}).items():
            text = text.replace("${user_config." + key + "}", value)
        return text

    return substitute


def make_hooks(config: Any, tmp_path: Path, *, name: str = "inline", root: Path | None = None,
               timeout_s: float = 60, env: Mapping[str, str] | None = None,
               ) -> tuple[ClaudeHooks, list[str]]:
    """A ClaudeHooks object from a hooks configuration (a dict, as in hooks.json)."""
    root = root if root is not None else tmp_path / f"plugin-{name}"
    root.mkdir(parents=True, exist_ok=True)
    data_dir = tmp_path / "plugin-data" / name
    parsed, problems = parse_hooks(config, f"{name}/hooks/hooks.json")
    hooks = ClaudeHooks(name=f"claude:{name}", root=root, hooks=parsed, data_dir=data_dir,
                        env=dict(env or {}), substitute=substituter(root, data_dir),
                        timeout_s=timeout_s)
    return hooks, problems


def corpus_hooks(name: str, tmp_path: Path, **kwargs: Any) -> tuple[ClaudeHooks, list[str]]:
    """The hooks of ``tests/zpi_compat_claude/corpus/<name>``."""
    root = CORPUS / name
    data = json.loads((root / "hooks" / "hooks.json").read_text(encoding="utf-8"))
    return make_hooks(data, tmp_path, name=name, root=root, **kwargs)


def process_running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped counts as gone)."""
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True
