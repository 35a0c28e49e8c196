"""A session store named on the command line (``--session-store SPEC``): ``sqlite:PATH``,
``memory:`` or a PostgreSQL URL."""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
from .postgres_store import PostgresSessionStore
from .session_store import InMemorySessionStore, hide_passwords
from .sqlite_store import SQLiteSessionStore

__all__ = ["open_store"]


def open_store(spec: str) -> Any:
    """A store from a command-line spec: ``sqlite:PATH``, ``memory:`` or a PostgreSQL URL
    (``postgresql://...``)."""
    if spec.startswith("sqlite:"):
        path = spec[len("sqlite:"):]
        if not path:
            raise UsageError("--session-store sqlite:PATH needs a path, e.g. "
                             "sqlite:~/.zpi/sessions.sqlite")
        return SQLiteSessionStore(path)
    if spec.startswith(("postgresql://", "postgres://")):
        return PostgresSessionStore(spec)
    if spec == "memory:":
        return InMemorySessionStore()
    raise UsageError(f"unknown session store {hide_passwords(spec, spec)!r}: use sqlite:PATH or "
                     "postgresql://USER@HOST/DB")
