"""The openai-responses provider against the loopback server: what it sends, what it reads,
and that reasoning items go back unchanged on the next turn and after a resume."""

from __future__ import annotations

import json

import pytest

from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.errors import ContextOverflowError
from zpi_host.providers.base import ProviderAuthError, ProviderHTTPError, ProviderStreamError
from zpi_host.providers.catalog import CatalogError, resolve_model
from zpi_host.providers.messages import (
    AssistantMessage,
    ContextMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCallContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from zpi_host.providers.plugin import zpi_register_providers
from zpi_host.providers.responses import REASONING_MARK, ResponsesProvider, reasoning_items
from zpi_host.session.assembly import create_session

from .conftest import KEYS, ask, collect, said, settings_for

pytestmark = pytest.mark.anyio

FMT = "openai-responses"
TURN = {"thinking": "Let me look at the file first.",
        "text": "I will read it.",
        "tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}},
                       {"name": "bash", "arguments": {"command": "ls -la", "timeout": 5}}],
        "usage": {"input_tokens": 120, "output_tokens": 30, "cache_read_tokens": 800}}


def events(*pairs: tuple[str, dict]) -> bytes:
    """An event stream of (type, fields) pairs, as the service frames it."""
    return b"".join(
        f"event: {kind}\ndata: {json.dumps({'type': kind, 'sequence_number': i, **fields})}\n\n"
        .encode() for i, (kind, fields) in enumerate(pairs))


async def test_stream_reassembles_reasoning_text_calls_and_usage(connect, zpi_model_server):
    zpi_model_server.add_turns(TURN)
    result = said(await collect(connect(FMT)))
    assert result.reasoning == "Let me look at the file first."
    assert result.text == "I will read it."
    assert result.calls == (("call_1_0", "read", {"path": "a.txt"}),
                            ("call_1_1", "bash", {"command": "ls -la", "timeout": 5}))
    assert result.argument_text == {0: '{"path": "a.txt"}',
                                    1: '{"command": "ls -la", "timeout": 5}'}
    # input_tokens (920) includes the cached 800: input is reported without them
    assert result.usage == Usage(input_tokens=120, output_tokens=30, cache_read_tokens=800)
    assert result.stop == "tool_use"
    # the completed reasoning item, with its encrypted content, is what the signature keeps
    (item,) = reasoning_items(ThinkingContent(result.reasoning, result.signature))
    assert item == {"id": "rs_zpi1", "type": "reasoning", "encrypted_content":
                    "gAAAAzpi-encrypted-1", "summary": [
                        {"type": "summary_text", "text": "Let me look at the file first."}]}


async def test_plain_answer_ends_the_turn(connect, zpi_model_server):
    zpi_model_server.add_turns("Just text.")
    result = said(await collect(connect(FMT)))
    assert (result.text, result.calls, result.signature, result.stop) == \
        ("Just text.", (), None, "end_turn")


ITEM = {"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAAAzpi-encrypted-7",
        "summary": [{"type": "summary_text", "text": "hidden"}]}
HISTORY = (
    UserMessage((TextContent("what is in a.txt?"), ImageContent("aGk=", "image/png"))),
    AssistantMessage((ThinkingContent("hidden", REASONING_MARK + json.dumps([ITEM])),
                      TextContent("Reading."), ToolCallContent("c1", "read", {"path": "a.txt"}))),
    ToolResultMessage("c1", "read", (TextContent("1\thello"),)),
    ContextMessage("the user prefers short answers", "style-plugin"),
    AssistantMessage((ThinkingContent("from another provider", "anthropic-signature"),
                      ToolCallContent("c2", "shot", {}))),
    ToolResultMessage("c2", "shot", (ImageContent("aW1n", "image/jpeg"),), is_error=True),
)


async def test_what_is_sent(connect, zpi_model_server):
    zpi_model_server.issued_reasoning.add("gAAAAzpi-encrypted-7")
    zpi_model_server.add_turns("ok")
    provider = connect(FMT, max_output=1000, reasoning=True)
    await collect(provider, ask(*HISTORY, reasoning="high",
                                options={"temperature": 0.2, "max_output_tokens": 50}))
    request = zpi_model_server.requests[0]
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == f"Bearer {KEYS['openai']}"
    body = request.json
    assert body["model"] == "test-model" and body["instructions"] == "Be brief."
    assert body["stream"] is True and body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["temperature"] == 0.2 and body["max_output_tokens"] == 50  # options win, last
    assert body["tools"] == [{"type": "function", "name": "read", "description": "Read a file",
                              "parameters": {"type": "object", "properties": {
                                  "path": {"type": "string"}}, "required": ["path"]},
                              "strict": False}]
    assert body["input"] == [
        {"role": "user", "content": [
            {"type": "input_text", "text": "what is in a.txt?"},
            {"type": "input_image", "image_url": "data:image/png;base64,aGk="}]},
        ITEM,  # unchanged
        {"role": "assistant", "content": "Reading."},
        {"type": "function_call", "call_id": "c1", "name": "read",
         "arguments": '{"path": "a.txt"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "1\thello"},
        {"role": "user", "content": "<system-reminder>\nthe user prefers short answers\n"
                                    "</system-reminder>"},
        # thinking without reasoning items (another provider's) is not sent
        {"type": "function_call", "call_id": "c2", "name": "shot", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2", "output": "(see the images below)"},
        {"role": "user", "content": [
            {"type": "input_text", "text": "(images from tool shot, call c2)"},
            {"type": "input_image", "image_url": "data:image/jpeg;base64,aW1n"}]},
    ]


@pytest.mark.parametrize("reasoning, level, sent", [
    (True, "low", {"effort": "low", "summary": "auto"}), (True, "off", None),
    (True, None, None), (False, "high", None),
])
async def test_reasoning_only_for_reasoning_models(connect, zpi_model_server, reasoning, level,
                                                   sent):
    zpi_model_server.add_turns("ok")
    await collect(connect(FMT, reasoning=reasoning), ask(reasoning=level))
    body = zpi_model_server.requests[0].json
    assert body.get("reasoning") == sent
    assert "max_output_tokens" not in body  # no max_output: the model's own limit


async def test_the_encoded_history_is_the_object_history(connect, zpi_model_server):
    """The per-session encoded fold sends exactly what the object form builds."""
    zpi_model_server.issued_reasoning.add("gAAAAzpi-encrypted-7")
    zpi_model_server.add_turns("one", "two")
    provider = connect(FMT)
    messages = list(HISTORY)
    await collect(provider, ask(*messages))
    messages.append(AssistantMessage((TextContent("one"),)))
    messages.append(UserMessage.text("again"))
    await collect(provider, ask(*messages))
    for request, sent in zip(zpi_model_server.requests, (HISTORY, messages), strict=True):
        assert request.json == provider.body(ask(*sent))


async def test_an_error_event_is_a_typed_stream_error(connect, zpi_model_server):
    zpi_model_server.fail_next(raw=events(
        ("response.created", {"response": {"id": "r", "status": "in_progress"}}),
        ("error", {"code": "rate_limit_exceeded", "message": "Slow down.", "param": None})))
    with pytest.raises(ProviderStreamError, match="Slow down") as caught:
        await collect(connect(FMT))
    assert caught.value.error_type == "rate_limit_exceeded"


async def test_a_failed_response_is_a_typed_stream_error(connect, zpi_model_server):
    zpi_model_server.fail_next(raw=events(
        ("response.created", {"response": {"id": "r", "status": "in_progress"}}),
        ("response.output_item.added", {"output_index": 0, "item": {
            "id": "msg", "type": "message", "role": "assistant", "content": []}}),
        ("response.output_text.delta", {"output_index": 0, "content_index": 0,
                                        "item_id": "msg", "delta": "Hal"}),
        ("response.failed", {"response": {"id": "r", "status": "failed", "error": {
            "code": "server_error", "message": "The model crashed."}}})))
    with pytest.raises(ProviderStreamError, match="The model crashed") as caught:
        await collect(connect(FMT))
    assert caught.value.error_type == "server_error"


async def test_an_error_status_quotes_the_service_and_is_retried(connect, zpi_model_server):
    zpi_model_server.add_turns("fine")
    zpi_model_server.fail_next(500)
    result = said(await collect(connect(FMT)))
    assert result.text == "fine" and len(zpi_model_server.requests) == 2
    zpi_model_server.fail_next(401)
    with pytest.raises(ProviderAuthError, match="OPENAI_API_KEY"):
        await collect(connect(FMT, requests={"max_retries": 0}))
    zpi_model_server.fail_next(400, body={"error": {"message": "Unsupported parameter: x",
                                                    "type": "invalid_request_error",
                                                    "param": "x", "code": None}})
    with pytest.raises(ProviderHTTPError, match="Unsupported parameter: x") as caught:
        await collect(connect(FMT))
    assert caught.value.error_type == "invalid_request_error"
    zpi_model_server.fail_next(context_overflow=True)
    with pytest.raises(ContextOverflowError):
        await collect(connect(FMT))


async def test_a_cut_off_answer_and_an_unfinished_stream(connect, zpi_model_server):
    zpi_model_server.fail_next(raw=events(
        ("response.output_text.delta", {"output_index": 0, "delta": "cut"}),
        ("response.incomplete", {"response": {"status": "incomplete", "incomplete_details": {
            "reason": "max_output_tokens"}, "usage": {"input_tokens": 3, "output_tokens": 9}}})))
    result = said(await collect(connect(FMT)))
    assert (result.text, result.stop, result.usage) == ("cut", "max_tokens", Usage(3, 9))
    zpi_model_server.fail_next(raw=events(
        ("response.output_text.delta", {"output_index": 0, "delta": "half"})))
    with pytest.raises(ProviderStreamError, match=r"without response\.completed"):
        await collect(connect(FMT))


async def test_invalid_tool_arguments_are_a_stream_error(connect, zpi_model_server):
    call = {"id": "fc", "type": "function_call", "call_id": "call_x", "name": "read"}
    zpi_model_server.fail_next(raw=events(
        ("response.output_item.added", {"output_index": 0, "item": {**call, "arguments": ""}}),
        ("response.function_call_arguments.delta", {"output_index": 0, "item_id": "fc",
                                                    "delta": "{not json"}),
        ("response.output_item.done", {"output_index": 0, "item": {
            **call, "arguments": "{not json"}})))
    with pytest.raises(ProviderStreamError, match="invalid JSON arguments for tool 'read'"):
        await collect(connect(FMT))


async def test_an_api_setting_picks_the_responses_api(zpi_model_server, keys):
    settings = {"models": {"gpt5": {"provider": "openai", "model": "gpt-5", "api": "responses",
                                    "base_url": zpi_model_server.base_url}}}
    entry = resolve_model("gpt5", settings)
    assert entry.api == "responses" and entry.provider == "openai"
    factory = next(f for f in zpi_register_providers(settings) if f.name == "openai")
    provider = factory.create(entry, settings)
    try:
        assert isinstance(provider, ResponsesProvider) and provider.name == "openai"
        zpi_model_server.add_turns("hi")
        assert said(await collect(provider)).text == "hi"
    finally:
        await provider.aclose()
    assert zpi_model_server.requests[0].path == "/v1/responses"
    chat = resolve_model("plain", {"models": {"plain": {"provider": "openai", "api": "chat"}}})
    assert chat.api == "chat"


@pytest.mark.parametrize("raw, problem", [
    ({"provider": "openai", "api": "assistants"}, "must be one of 'chat', 'responses'"),
    ({"provider": "anthropic", "api": "responses"}, "only for providers with several APIs"),
])
def test_a_bad_api_setting_names_the_setting(raw, problem):
    with pytest.raises(CatalogError, match=problem) as caught:
        resolve_model("m", {"models": {"m": raw}})
    assert caught.value.setting == "models.m.api"


async def test_reasoning_round_trips_across_turns_and_resume(zpi_env, zpi_model_server,
                                                             tmp_path):
    """A two-turn session with a tool call: turn 2's request carries turn 1's reasoning item
    unchanged; a session resumed from its transcript sends both items again (the server
    refuses reasoning it did not issue, so a changed item would fail the run)."""
    zpi_env.set("OPENAI_API_KEY", KEYS["openai"])
    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    zpi_model_server.add_turns(
        {"thinking": "I should read the notes.", "tool_calls": [
            {"name": "read", "arguments": {"path": "notes.txt"}}],
         "usage": {"input_tokens": 100, "output_tokens": 10, "cache_read_tokens": 50}},
        {"thinking": "It says 42.", "text": "The answer is 42.",
         "usage": {"input_tokens": 200, "output_tokens": 7}},
        {"text": "Still 42."},
    )
    settings = settings_for(zpi_model_server.base_url, FMT)
    home = tmp_path / "agent"

    async def session(**options):
        return await create_session(model=f"{FMT}:gpt-test", cwd=tmp_path, settings=settings,
                                    agent_dir=home, **options,
                                    host=PluginHost(PluginConfig(autoload=False)).load())

    first = await session()
    try:
        result = await first.run("what is in notes.txt?")
        session_id = first.session_id
    finally:
        await first.dispose()
    assert (result.is_error, result.result, result.usage) == \
        (False, "The answer is 42.", Usage(300, 17, 50))
    one, two = (r.json for r in zpi_model_server.requests)
    item_1 = {"id": "rs_zpi1", "type": "reasoning", "encrypted_content": "gAAAAzpi-encrypted-1",
              "summary": [{"type": "summary_text", "text": "I should read the notes."}]}
    assert [i.get("type") for i in two["input"]] == \
        [None, "reasoning", "function_call", "function_call_output"]
    assert two["input"][1] == item_1
    assert "the answer is 42" in two["input"][3]["output"]
    assert one["include"] == ["reasoning.encrypted_content"] and one["store"] is False

    resumed = await session(resume=session_id)
    try:
        assert isinstance(resumed.messages[1], AssistantMessage)
        result = await resumed.run("and now?")
    finally:
        await resumed.dispose()
    assert (result.is_error, result.result) == (False, "Still 42.")
    three = zpi_model_server.requests[2].json
    reasoning = [i for i in three["input"] if i.get("type") == "reasoning"]
    assert reasoning == [item_1, {"id": "rs_zpi2", "type": "reasoning", "encrypted_content":
                                  "gAAAAzpi-encrypted-2", "summary": [
                                      {"type": "summary_text", "text": "It says 42."}]}]


async def test_the_server_refuses_reasoning_it_did_not_issue(connect, zpi_model_server):
    """The loopback server is as strict as the service, so the round-trip test can fail."""
    zpi_model_server.add_turns("never")
    changed = {**ITEM, "encrypted_content": "gAAAA-tampered"}
    history = (UserMessage.text("hi"),
               AssistantMessage((ThinkingContent("x", REASONING_MARK + json.dumps([changed])),
                                 TextContent("hello"))),
               UserMessage.text("again"))
    with pytest.raises(ProviderHTTPError, match="could not be verified"):
        await collect(connect(FMT), ask(*history))


async def test_every_reasoning_item_of_an_answer_is_kept_in_order(connect, zpi_model_server):
    first = {"id": "rs_a", "type": "reasoning", "encrypted_content": "A",
             "summary": [{"type": "summary_text", "text": "one"},
                         {"type": "summary_text", "text": "two"}]}
    second = {"id": "rs_b", "type": "reasoning", "encrypted_content": "B",
              "summary": [{"type": "summary_text", "text": "three"}]}
    zpi_model_server.fail_next(raw=events(
        ("response.output_item.added", {"output_index": 0, "item": {
            "id": "rs_a", "type": "reasoning", "summary": []}}),
        ("response.reasoning_summary_text.delta", {"output_index": 0, "summary_index": 0,
                                                   "delta": "one"}),
        ("response.reasoning_summary_text.delta", {"output_index": 0, "summary_index": 1,
                                                   "delta": "two"}),
        ("response.output_item.done", {"output_index": 0, "item": first}),
        ("response.output_text.delta", {"output_index": 1, "delta": "Hi."}),
        # a server that sends a summary only in the completed item
        ("response.output_item.done", {"output_index": 2, "item": second}),
        ("response.completed", {"response": {"status": "completed", "usage": {
            "input_tokens": 10, "output_tokens": 50,
            "output_tokens_details": {"reasoning_tokens": 40}}}})))
    got = await collect(connect(FMT))
    result = said(got)
    assert result.text == "Hi." and result.usage == Usage(10, 50)
    assert reasoning_items(ThinkingContent("", result.signature)) == [first, second]
    kinds = [type(e).__name__ for e in got]
    # the first item's signature comes before the text, as Anthropic's signature does
    assert kinds.index("ReasoningDelta") < kinds.index("TextDelta")
    assert result.reasoning == "one\n\ntwo\n\nthree"


async def test_anthropic_leaves_out_reasoning_items_it_cannot_verify(connect, zpi_model_server):
    """A session resumed with another model: Anthropic would refuse the Responses reasoning
    items as a thinking signature, so they are not sent there."""
    zpi_model_server.add_turns("ok")
    history = (UserMessage.text("hi"), HISTORY[1], HISTORY[2], UserMessage.text("again"))
    await collect(connect("anthropic"), ask(*history))
    sent = json.dumps(zpi_model_server.requests[0].json["messages"])
    assert "encrypted" not in sent and '"thinking"' not in sent and "Reading." in sent
