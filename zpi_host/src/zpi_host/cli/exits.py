"""How a ``zpi-host`` command ends: its exit codes, and the usage error that exits 2.

A module of its own because both sides use them: the dispatcher in :mod:`zpi_host.cli` and
every command module it imports.
"""

from __future__ import annotations

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT; a run stopped by SIGTERM exits 143 (cli/signals.py)
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: the reader of stdout went away (``| head``)


class CliUsageError(Exception):
    """Bad command-line usage (exit 2)."""
