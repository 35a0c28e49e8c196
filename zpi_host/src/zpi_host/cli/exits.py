"""How a ``zpi-host`` command ends: its exit codes, the usage error that exits 2, and the
``zpi-host: warning:`` / ``zpi-host: error:`` lines it writes on stderr.

A module of its own because both sides use them: the dispatcher in :mod:`zpi_host.cli` and
every command module it imports. Those lines often carry text from files a repository ships
(a settings key, a model, plugin or command name, a path), so on a terminal every control
character in them is shown visibly (:func:`zpi_host.support.terminal_text.shown` with
``exact``, none dropped: a person reads the name to act on it): an escape sequence in a
settings key cannot retitle the window or rewrite what was shown. A pipe or a file gets the
text as it is.
"""

from __future__ import annotations

import sys

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT; a run stopped by SIGTERM exits 143 (cli/signals.py)
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: the reader of stdout went away (``| head``)


class CliUsageError(Exception):
    """Bad command-line usage (exit 2)."""


def print_message(message: object) -> None:
    """``zpi-host: MESSAGE`` on stderr, terminal-safe."""
    from ..support.terminal_text import shown

    print(shown(f"zpi-host: {message}", sys.stderr, exact=True), file=sys.stderr, flush=True)


def print_warning(message: object) -> None:
    print_message(f"warning: {message}")


def print_error(message: object) -> None:
    print_message(f"error: {message}")
