"""``/clear`` sent to an SDK client: the conversation replaced by a new, empty session.

As in Claude Code's streaming mode, the connection stays: the old session ends
(``zpi_session_end`` with reason ``clear``), a new one is assembled from the same options
(without what chose the old session: ``resume``, ``continue_conversation``, ``fork_session``,
``session_id``, ``resume_session_at``), its ``zpi_session_start`` source is ``clear``, the
budget and the totals of later results start from zero, and the input's messages are a
:class:`~.messages.ConversationResetMessage` and a result of no turns.
"""

from __future__ import annotations

import uuid as uuids
from typing import Any

import attrs

from .messages import ConversationResetMessage, Message, ResultMessage

__all__ = ["clear_conversation"]


async def clear_conversation(client: Any) -> list[Message]:
    """End the ``SDKClient``'s session, start a new one in its place; the messages to send
    (``client`` is untyped here: the client imports this module, not the other way)."""
    from .accounting import Budget

    old = client.session
    await client._close_mirror(old)
    await old.dispose("clear")
    client.options = attrs.evolve(client.options, resume=None, continue_conversation=False,
                                  fork_session=False, session_id=None, resume_session_at=None,
                                  resume_drops_turn=None)
    client._session = None
    client._resume_choice = None  # the store holds nothing of the new session
    session = await client._create_session()
    session.start_source = "clear"
    await client._adopt(session)
    client._budget = Budget(client.options.max_budget_usd)
    client._start_mirrors()
    return [
        ConversationResetMessage(new_conversation_id=str(uuids.uuid4()),
                                 uuid=str(uuids.uuid4()), session_id=old.session_id),
        ResultMessage(subtype="success", duration_ms=0, duration_api_ms=0, is_error=False,
                      num_turns=0, session_id=session.session_id, stop_reason=None,
                      total_cost_usd=0.0, result="", uuid=str(uuids.uuid4())),
    ]
