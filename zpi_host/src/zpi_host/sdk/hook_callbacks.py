"""Where the ``hooks`` option's Python callbacks run: on the Claude adapter's hook engine,
which ``zpi-compat-claude`` offers through the ``zpi.sdk_hooks`` entry point (the kernel does
not import a plugin distribution). Without it the option is refused by name."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .unsupported import UnsupportedOptionError

__all__ = ["ENTRY_POINT_GROUP", "callback_hooks_plugin"]

#: the entry-point group whose ``claude`` entry makes the plugin running the callbacks
ENTRY_POINT_GROUP = "zpi.sdk_hooks"
_INSTALL = "Python hook callbacks are run by the Claude adapter; install zpi-compat-claude"


def callback_hooks_plugin(hooks: Mapping[str, Sequence[Any]]) -> Any:
    """The plugin that runs ``hooks`` (event -> ``HookMatcher`` list), made by the
    ``zpi.sdk_hooks`` entry point named ``claude``."""
    return _factory()(hooks)


@functools.cache
def _factory() -> Callable[[Mapping[str, Sequence[Any]]], Any]:
    """The entry point's factory, looked up once per process (the metadata scan is not
    repeated for every session); a failed lookup is not kept, so a later one tries again."""
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == "claude"]
    if not found:
        raise UnsupportedOptionError("hooks", _INSTALL)
    try:
        factory: Callable[[Mapping[str, Sequence[Any]]], Any] = found[0].load()
    except ImportError as exc:
        raise UnsupportedOptionError(
            "hooks", f"{_INSTALL} (it is installed but could not be imported: {exc})") from None
    return factory
