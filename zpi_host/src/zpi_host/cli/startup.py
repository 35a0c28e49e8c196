"""What the start of a ``zpi-host`` command does besides parsing: garbage collection paused
until the work begins, and the ``-p MODULE`` plugin modules imported.

A module of its own because both the dispatcher in :mod:`zpi_host.cli` and ``run``
(:mod:`.run`) call it.
"""

from __future__ import annotations

import gc
import sys

from .exits import CliUsageError

TYPE_CHECKING = False  # not ``typing``'s (``--version`` imports this module)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


def import_plugin_modules(modules: Sequence[str], cwd: str | None) -> dict[str, Any]:
    """Import each ``-p MODULE``; the project folder comes first on the import path so a
    module beside the project is found. A module that cannot be imported is a usage error."""
    import importlib
    import os

    if not modules:
        return {}
    folder = os.path.abspath(os.path.expanduser(cwd or "."))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    loaded = {}
    for name in modules:
        try:
            loaded[name] = importlib.import_module(name)
        except Exception as exc:
            raise CliUsageError(f"-p {name}: cannot import the module: {type(exc).__name__}: "
                                f"{exc} (looked in {folder} and the installed packages)"
                                ) from None
    return loaded


_gc_paused = False


def pause_gc() -> None:
    """Start-up builds long-lived objects and next to no garbage: no cyclic collections
    until the work begins (see :func:`resume_gc`)."""
    global _gc_paused
    if gc.isenabled():
        gc.disable()
        _gc_paused = True


def resume_gc() -> None:
    """Collections on again (if :func:`pause_gc` turned them off): every command but ``run``
    once its arguments are parsed; ``run`` once its session is built (cli/run.py)."""
    global _gc_paused
    if _gc_paused:
        _gc_paused = False
        gc.enable()
