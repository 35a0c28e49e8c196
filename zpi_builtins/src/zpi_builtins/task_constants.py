"""Constants of ``builtins:tasks`` shared by :mod:`.tasks` (the plugin module) and
:mod:`.task_registry`: the registry must not import the plugin module, which imports it on
first use."""

from __future__ import annotations

__all__ = ["DEFAULT_WAIT_MS", "SERVICE"]

#: its settings section (``plugins.builtins.tasks``) and its runtime key
SERVICE = "tasks"
#: how long ``task_output`` waits for a task's end unless told otherwise
DEFAULT_WAIT_MS = 30_000
