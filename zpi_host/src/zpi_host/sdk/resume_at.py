"""``resume_session_at`` (and ``resume_drops_turn``): resume a local session as it was at one
of its entries.

A local session is one chain of records, so the conversation up to and including the entry
is copied into a new session (:func:`~zpi_host.transcript.fork_session` with ``up_to``), which
is then resumed: the source stays as it was, and the messages that follow carry the copy's
session id, with or without ``fork_session`` (``session_id`` names the copy when given). A
session store's mirror is refused before anything starts (``AgentOptions.check``): the store
is not the authority a truncated copy could be made from.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError

__all__ = ["ResumeRejectedError", "fork_at"]


class ResumeRejectedError(UsageError):
    """``resume_drops_turn`` found entries after the resume point that are not of that turn.
    The message starts with claude-agent-sdk's ``Resume rejected by --resume-drops-turn:``."""


def fork_at(source: str, at: str, drops_turn: str | None, *,
            agent_dir: Path | str | None, new_id: str | None) -> str:
    """The id of a new session holding ``source`` up to and including entry ``at``; with
    ``drops_turn``, refused unless every user message after ``at`` is that prompt (the one
    turn being dropped)."""
    from ..providers.messages import UserMessage
    from ..transcript import fork_session, get_session_entries

    if drops_turn is not None:
        entries = get_session_entries(source, agent_dir=agent_dir)
        uuids = [uuid for uuid, _ in entries]
        if at in uuids:
            after = [uuid for uuid, message in entries[uuids.index(at) + 1:]
                     if isinstance(message, UserMessage) and message.text_content]
            if after != [drops_turn]:
                others = [u for u in after if u != drops_turn]
                why = (f"the entries after {at} hold other user messages ({', '.join(others)})"
                       if others else f"no user message {drops_turn} follows {at}")
                raise ResumeRejectedError(
                    f"Resume rejected by --resume-drops-turn: {why}; resume without "
                    "resume_session_at (or at the last entry of the turn you keep)")
    return fork_session(source, up_to=at, agent_dir=agent_dir, new_id=new_id)
