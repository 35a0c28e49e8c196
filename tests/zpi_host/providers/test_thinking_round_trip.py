"""Thinking blocks go back to Anthropic as they came: the signed block with its signature
unchanged and a redacted block with its data, on the next request of the run and after a
resume (through the transcript). Against the loopback server."""

from __future__ import annotations

import json

import pytest

from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.providers.messages import AssistantMessage, ThinkingContent
from zpi_host.session.assembly import create_session

from .conftest import ENV, KEYS, settings_for

pytestmark = pytest.mark.anyio

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+signature/unchanged=="
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP+redacted=="


def event(payload: dict) -> str:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n"


def first_answer() -> bytes:
    """Thinking in two pieces, its signature, a redacted block, then a tool call."""
    parts = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 50}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "thinking_delta", "thinking": "I should read "}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "thinking_delta", "thinking": "the notes."}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "signature_delta", "signature": SIGNATURE}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "redacted_thinking", "data": REDACTED}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {
            "type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}},
        {"type": "content_block_delta", "index": 2, "delta": {
            "type": "input_json_delta", "partial_json": '{"path": "notes.txt"}'}},
        {"type": "content_block_stop", "index": 2},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
         "usage": {"output_tokens": 20}},
        {"type": "message_stop"},
    ]
    return "".join(map(event, parts)).encode()


EXPECTED_BLOCKS = [
    {"type": "thinking", "thinking": "I should read the notes.", "signature": SIGNATURE},
    {"type": "redacted_thinking", "data": REDACTED},
    {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "notes.txt"}},
]


async def test_signed_and_redacted_thinking_round_trip_across_turns_and_resume(
        zpi_env, zpi_model_server, tmp_path):
    zpi_env.set(ENV["anthropic"], KEYS["anthropic"])
    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    zpi_model_server.fail_next(raw=first_answer())
    zpi_model_server.add_turns("The answer is 42.", "Still 42.")
    settings = settings_for(zpi_model_server.base_url, "anthropic")

    async def session(**options):
        return await create_session(model="anthropic:claude-test", cwd=tmp_path,
                                    agent_dir=tmp_path / "agent", settings=settings,
                                    host=PluginHost(PluginConfig(autoload=False)).load(),
                                    **options)

    first = await session()
    try:
        result = await first.run("what is in notes.txt?")
    finally:
        await first.dispose()
    assert result.result == "The answer is 42."
    answer = first.messages[1]
    assert isinstance(answer, AssistantMessage)
    assert answer.content[:2] == (ThinkingContent("I should read the notes.", SIGNATURE),
                                  ThinkingContent("", redacted=REDACTED))
    second = zpi_model_server.requests[1].json
    assert second["messages"][1] == {"role": "assistant", "content": EXPECTED_BLOCKS}

    resumed = await session(resume=first.session_id)
    try:
        await resumed.run("and now?")
    finally:
        await resumed.dispose()
    third = zpi_model_server.requests[2].json
    assert third["messages"][1] == {"role": "assistant", "content": EXPECTED_BLOCKS}


async def test_a_redacted_block_without_data_is_a_stream_error(zpi_env, connect,
                                                               zpi_model_server):
    from zpi_host.providers.base import ProviderStreamError

    from .conftest import collect

    zpi_model_server.fail_next(raw="".join(map(event, [
        {"type": "message_start", "message": {"usage": {"input_tokens": 5}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "redacted_thinking"}}])).encode())
    with pytest.raises(ProviderStreamError, match="redacted_thinking block without its data"):
        await collect(connect("anthropic"))
