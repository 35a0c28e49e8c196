"""Which transcript a session writes: the one it resumes or continues, or a new one (a JSONL
file, in memory, or a native ``TranscriptStore``), and what to say when a resumed session was
recorded elsewhere (a record's cwd is data, never where the session works)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .options import SessionOptions

if TYPE_CHECKING:
    from ..transcript import SessionManager

__all__ = ["new_store", "open_store", "recorded_cwd_warning"]


def recorded_cwd_warning(store: SessionManager | None, cwd: Path) -> str | None:
    """What to tell the user when the resumed session was recorded in another directory."""
    if store is None or store.cwd == cwd:
        return None
    from ..support.terminal_text import for_terminal

    recorded = for_terminal(str(store.cwd), exact=True)
    return (f"session {store.session_id} was recorded in {recorded}; this "
            f"run works in {cwd} (the working directory comes from --cwd / cwd= or the "
            "current directory, never from a record: give --cwd to work elsewhere)")


def open_store(options: SessionOptions, agent_dir: Path) -> SessionManager | None:
    """The session to resume or continue (``None``: a new one is created once cwd is known,
    also when there is no session to continue)."""
    from ..transcript import SessionManager, list_sessions

    if options.session_manager is not None:
        return options.session_manager  # type: ignore[no-any-return]
    if options.storage is not None:
        state = options.storage["current_state"]
        if state is None:
            return None  # a new session in the store, once cwd is known
        from ..transcript.native_session import StoreSessionManager

        return StoreSessionManager.open_in(options.storage["transcript"], state.session_id,
                                           owner=options.storage.get("owner"), expected=state,
                                           reconnect_seconds=_reconnect(options.storage))
    if options.resume is not None:
        return SessionManager.open(options.resume, agent_dir=agent_dir,
                                   cwd=_explicit_cwd(options))
    if options.continue_recent:
        cwd = _explicit_cwd(options) or Path.cwd().resolve()
        recent = list_sessions(cwd, agent_dir=agent_dir)
        if not recent:
            return None  # nothing to continue: a new session (create_session warns)
        return SessionManager.open(recent[0].session_id, agent_dir=agent_dir, cwd=cwd)
    return None


def _reconnect(storage: Mapping[str, Any]) -> float:
    from ..transcript.native import DEFAULT_RECONNECT_SECONDS

    seconds = storage.get("reconnect_seconds")
    return DEFAULT_RECONNECT_SECONDS if seconds is None else float(seconds)


def _explicit_cwd(options: SessionOptions) -> Path | None:
    return Path(options.cwd).expanduser().resolve() if options.cwd is not None else None


def new_store(options: SessionOptions, agent_dir: Path, cwd: Path,
              settings: Mapping[str, Any]) -> SessionManager:
    from ..transcript import SessionManager

    if options.storage is not None:
        from ..transcript.native_session import StoreSessionManager

        return StoreSessionManager.create_in(options.storage["transcript"], cwd,
                                             session_id=options.session_id,
                                             owner=options.storage.get("owner"),
                                             reconnect_seconds=_reconnect(options.storage))
    if not options.persist:
        return SessionManager.in_memory(cwd=cwd, session_id=options.session_id)
    fsync = settings.get("sessions", {}).get("fsync", "turn")
    return SessionManager.create(cwd=cwd, agent_dir=agent_dir, session_id=options.session_id,
                                 fsync=fsync)
