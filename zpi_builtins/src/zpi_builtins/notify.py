"""Service ``builtins:notify``: deliver notifications to the platform.

A notification (``zpi_notification``: a permission prompt, a question from ``ask_user``, a
plugin's) rings the terminal (a bell, or an OSC 9 desktop notification, setting
``plugins.builtins.notify.terminal``) when the session has a terminal port, and runs the
configured command (``plugins.builtins.notify.command``, e.g. ``["notify-send"]``) with the
title and message as its last arguments. A run that took longer than
``plugins.builtins.notify.min_run_seconds`` notifies when it ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zpi_host import hookimpl

from .runtime import BuiltinPluginRuntime, runtime_for
from .settings import enabled, service_settings

__all__ = ["Notifier", "zpi_notification", "zpi_run_end"]

#: shown by ``zpi-host --list-plugins``
contributes = {"notifications": ["terminal bell/OSC 9", "notification command"]}

#: kinds that mean the user is needed now (the command runs for these and for long runs)
INPUT_KINDS = frozenset({"permission_prompt", "idle_prompt", "input_needed", "run_finished"})
COMMAND_TIMEOUT = 10.0


def terminal_sequence(style: str, title: str | None, message: str) -> str:
    """What to write to the terminal: BEL, or OSC 9 with the text (control characters out)."""
    if style == "osc9":
        text = f"{title}: {message}" if title else message
        clean = "".join(c if c.isprintable() else " " for c in text)[:200]
        return f"\x1b]9;{clean}\x07"
    return "\a" if style == "bell" else ""


class Notifier:
    """The notify service of one session."""

    def __init__(self, runtime: BuiltinPluginRuntime) -> None:
        self.runtime = runtime
        config = service_settings(runtime.settings, "notify")
        self.style: str = config["terminal"]
        self.command: Sequence[str] | None = config["command"] or None
        self.min_run_seconds = float(config["min_run_seconds"])

    def deliver(self, message: str, title: str | None, kind: str) -> None:
        terminal = self.runtime.ports.terminal
        sequence = terminal_sequence(self.style, title, message)
        if terminal is not None and sequence:
            try:
                terminal.write(sequence)
                terminal.flush()
            except (OSError, ValueError):  # a closed terminal: nothing to ring
                pass
        if self.command and kind in INPUT_KINDS:
            self.runtime.spawn(f"notification command {self.command[0]}",
                               self.run_command(message, title))

    async def run_command(self, message: str, title: str | None) -> None:
        import os
        import subprocess

        import anyio

        hidden = self.runtime.session.hidden_variables
        env = {k: v for k, v in os.environ.items() if k not in hidden}
        argv = [*(self.command or ()), title or "zpi", message]
        with anyio.fail_after(COMMAND_TIMEOUT):
            result = await anyio.run_process(argv, env=env, check=False,
                                             stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL)
        if result.returncode != 0:
            self.runtime.session.warn(f"notification command {argv[0]} exited with "
                                      f"{result.returncode}")

    def run_ended(self, seconds: float, failed: bool) -> None:
        """At the end of a run: notify when it took longer than the threshold."""
        if seconds >= self.min_run_seconds:
            how = "failed" if failed else "finished"
            self.deliver(f"the run {how} after {seconds:.0f} s", "zpi", "run_finished")


def _notifier(session: Any) -> Notifier | None:
    if not enabled(session.settings, "notify"):
        return None
    return runtime_for(session).service("notify", Notifier)


@hookimpl
def zpi_notification(session: Any, message: str, title: str | None, kind: str) -> None:
    notifier = _notifier(session)
    if notifier is not None:
        notifier.deliver(message, title, kind)


@hookimpl
def zpi_run_end(session: Any, result: Any) -> None:
    notifier = _notifier(session)
    if notifier is not None:
        notifier.run_ended(result.duration_ms / 1000, result.is_error)
