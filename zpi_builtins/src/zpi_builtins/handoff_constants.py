"""The name of ``builtins:handoff``, for :mod:`.handoff` (the plugin module) and
:mod:`.handoff_service`: the service module must not import the plugin module, which imports
it on first use."""

from __future__ import annotations

__all__ = ["SERVICE"]

#: its settings section (``plugins.builtins.handoff``), its runtime key and its skill's name
SERVICE = "handoff"
