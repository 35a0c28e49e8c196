"""resume_session_at and resume_drops_turn: resuming a local session at one of its entries."""

from __future__ import annotations

import pytest

from zpi_host.errors import UsageError
from zpi_host.sdk import (
    AssistantMessage,
    InMemorySessionStore,
    ResultMessage,
    get_session_messages,
    query,
)
from zpi_host.sdk.resume_at import ResumeRejectedError

from .conftest import collect

pytestmark = pytest.mark.anyio


async def _two_turns(scripted):
    scripted.turns("first answer", "second answer")
    options = scripted.options()
    from zpi_host.sdk import SDKClient

    async with SDKClient(options) as client:
        await client.query("first question")
        first = [m async for m in client.receive_response()]
        await client.query("second question")
        second = [m async for m in client.receive_response()]
    kept = next(m for m in first if isinstance(m, AssistantMessage))
    return first[-1].session_id, kept.uuid, second


async def test_resume_at_an_entry_drops_what_follows(scripted):
    sid, kept, _ = await _two_turns(scripted)
    scripted.turns("branched")
    messages = await collect(query("another question", scripted.options(
        resume=sid, resume_session_at=kept)))
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.result == "branched"
    assert result.session_id != sid  # a copy up to the entry, resumed
    sent = [str(m) for m in scripted.requests()[-1].messages]
    assert any("first question" in s for s in sent)
    assert not any("second question" in s for s in sent)
    assert len(get_session_messages(sid)) == 4  # the source is untouched


async def test_resume_drops_turn_refuses_when_more_than_that_turn_follows(scripted):
    sid, kept, _ = await _two_turns(scripted)
    user_ids = [m.uuid for m in get_session_messages(sid) if m.type == "user"]
    with pytest.raises(ResumeRejectedError, match="Resume rejected by --resume-drops-turn:"):
        await collect(query("x", scripted.options(resume=sid, resume_session_at=kept,
                                                  resume_drops_turn=user_ids[0])))
    scripted.turns("ok")
    messages = await collect(query("x", scripted.options(
        resume=sid, resume_session_at=kept, resume_drops_turn=user_ids[1])))
    assert messages[-1].result == "ok"


async def test_resume_at_needs_a_local_session_to_resume(scripted):
    with pytest.raises(UsageError, match="give resume"):
        scripted.options(resume_session_at="u1").check()
    with pytest.raises(UsageError, match="resume_session_at too"):
        scripted.options(resume="s", resume_drops_turn="u1").check()
    with pytest.raises(UsageError, match="session_store it is refused"):
        scripted.options(resume="s", resume_session_at="u1",
                         session_store=InMemorySessionStore()).check()
