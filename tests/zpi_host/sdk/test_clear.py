"""``/clear`` in an SDK client: a ConversationResetMessage, and a new empty session."""

from __future__ import annotations

import pytest

from zpi_host.sdk import ConversationResetMessage, HookMatcher, ResultMessage, SDKClient

pytestmark = pytest.mark.anyio


async def test_clear_replaces_the_conversation_and_keeps_the_client(scripted):
    seen = []

    async def record(data, tool_use_id, context):
        seen.append((data["hook_event_name"], data.get("source") or data.get("reason")))
        return {}

    usage = {"input_tokens": 10, "output_tokens": 5}
    scripted.turns({"text": "first", "usage": usage}, {"text": "after clear", "usage": usage})
    hooks = {event: [HookMatcher(hooks=[record])] for event in ("SessionStart", "SessionEnd")}
    async with SDKClient(scripted.options(hooks=hooks)) as client:
        await client.query("remember the word apple")
        before = [m async for m in client.receive_response()]
        await client.query("/clear")
        cleared = [m async for m in client.receive_response()]
        await client.query("what was the word?")
        after = [m async for m in client.receive_response()]
    old_id = before[-1].session_id
    reset, result = cleared
    assert isinstance(reset, ConversationResetMessage) and reset.session_id == old_id
    assert reset.new_conversation_id and reset.new_conversation_id != result.session_id
    assert isinstance(result, ResultMessage) and result.num_turns == 0
    assert result.session_id != old_id and after[-1].session_id == result.session_id
    history = scripted.requests()[-1].messages
    assert [m.role for m in history] == ["user"]  # nothing of the old conversation
    assert "apple" not in str(history)
    assert ("SessionEnd", "clear") in seen and ("SessionStart", "clear") in seen


async def test_clear_with_a_session_store_mirrors_the_new_session(scripted):
    from zpi_host.sdk import InMemorySessionStore, project_key_for_directory

    store = InMemorySessionStore()
    scripted.turns("first", "second")
    async with SDKClient(scripted.options(session_store=store)) as client:
        await client.query("one")
        before = [m async for m in client.receive_response()]
        await client.query("/clear")
        cleared = [m async for m in client.receive_response()]
        await client.query("two")
        [m async for m in client.receive_response()]
    project = project_key_for_directory(scripted.cwd)
    new = await store.load({"project_key": project, "session_id": cleared[-1].session_id})
    old = await store.load({"project_key": project, "session_id": before[-1].session_id})
    assert [e["type"] for e in new].count("user") == 1 and "two" in str(new)
    assert "two" not in str(old)
