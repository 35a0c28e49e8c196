"""Answers a model service should never send: one too large, tool arguments with NaN,
Infinity or lone surrogates. Real runs against the loopback server (issue 11)."""

from __future__ import annotations

import json

import pytest

from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.providers.base import ProviderResponseTooLarge, ProviderStreamBroken
from zpi_host.providers.messages import ToolResultMessage
from zpi_host.session.assembly import create_session
from zpi_host.transcript.reader import read_transcript

from .conftest import ENV, FORMATS, KEYS, settings_for

pytestmark = pytest.mark.anyio


async def _run(fmt, zpi_env, server, tmp_path, prompt="go", **requests):
    zpi_env.set(ENV[fmt], KEYS[fmt])
    session = await create_session(
        model=f"{fmt}:gpt-test", cwd=tmp_path, agent_dir=tmp_path / "agent",
        settings=settings_for(server.base_url, fmt, **requests),
        host=PluginHost(PluginConfig(autoload=False)).load())
    try:
        return session, await session.run(prompt)
    finally:
        await session.dispose()


@pytest.mark.parametrize("fmt", FORMATS)
async def test_an_answer_past_the_cap_ends_the_turn_with_a_typed_error(
        fmt, zpi_env, zpi_model_server, tmp_path):
    zpi_model_server.add_turns({"text": "x" * 200_000})
    _, result = await _run(fmt, zpi_env, zpi_model_server, tmp_path,
                           max_response_bytes=20_000)
    assert result.is_error
    assert "exceeded 20,000 bytes" in result.result
    assert "requests.max_response_bytes" in result.result
    assert result.stop_reason == "error"
    assert len(zpi_model_server.requests) == 1  # not retried: the same answer would come


@pytest.mark.parametrize("fmt", FORMATS)
async def test_the_cap_is_raised_by_the_streamer(fmt, connect, zpi_model_server):
    from .conftest import ask

    zpi_model_server.add_turns({"text": "y" * 50_000})
    provider = connect(fmt, requests={"max_response_bytes": 4_096})
    with pytest.raises((ProviderResponseTooLarge, ProviderStreamBroken)) as caught:
        async for _ in provider.stream(ask("hi")):
            pass
    error = caught.value
    cause = error.cause if isinstance(error, ProviderStreamBroken) else error
    assert isinstance(cause, ProviderResponseTooLarge) and cause.limit == 4_096


def test_the_default_caps():
    from zpi_host.providers.catalog import RequestPolicy

    policy = RequestPolicy.from_settings({})
    assert (policy.max_answer_chars, policy.max_response_bytes) == (4_000_000, 512 * 1024 * 1024)


BAD_ARGUMENTS = [
    ({"path": "\ud800.txt"}, "path", "lone surrogate"),
    ({"path": "notes.txt", "offset": float("nan")}, "offset", "NaN is not a number"),
    ({"path": "notes.txt", "limit": float("inf")}, "limit", "Infinity is not a number"),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("arguments", "field", "words"), BAD_ARGUMENTS)
async def test_bad_json_in_arguments_is_a_tool_error_and_the_run_goes_on(
        fmt, arguments, field, words, zpi_env, zpi_model_server, tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    zpi_model_server.add_turns(
        {"tool_calls": [{"name": "read", "arguments": arguments}]},
        {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"text": "done"})
    session, result = await _run(fmt, zpi_env, zpi_model_server, tmp_path)
    assert (result.is_error, result.result, result.num_turns) == (False, "done", 3)
    bad, good = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    assert bad.is_error and f"argument {field!r}" in bad.content[0].text
    assert words in bad.content[0].text
    assert not good.is_error and "hello" in good.content[0].text
    # the next request sends the call back as strict JSON (no NaN, no unencodable text)
    second = _strict(zpi_model_server.requests[1].body)
    for message in second["messages"]:
        for call in message.get("tool_calls") or ():
            _strict(call["function"]["arguments"])
    read_transcript(session.store.path)  # the transcript holds it, as valid JSON


def _strict(text: bytes | str) -> dict:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in a request")

    data = text.decode("utf-8") if isinstance(text, bytes) else text
    return json.loads(data, parse_constant=refuse)  # type: ignore[no-any-return]


async def test_the_wire_really_carries_nan_and_surrogates(zpi_model_server):
    """The server's frames hold the raw values the test above relies on."""
    from zpi_host.providers.script import ScriptedTurn
    from zpi_host.testing.model_server import sse_frames

    turn = ScriptedTurn.parse({"tool_calls": [{"name": "read", "arguments": {
        "path": "\ud800", "offset": float("nan")}}]}, "t")
    frames = b"".join(sse_frames("openai", turn, pieces=1))
    assert b"NaN" in frames and b"\\\\ud800" in frames


@pytest.mark.parametrize("fmt", FORMATS)
async def test_two_calls_with_one_id_are_a_provider_error_not_a_crash(
        fmt, zpi_env, zpi_model_server, tmp_path):
    """Results are matched to calls by id: a repeated id crashed the loop with a KeyError."""
    (tmp_path / "a.txt").write_text("a\n")
    from zpi_host.providers.script import ScriptedToolCall, ScriptedTurn

    call = ScriptedToolCall("read", {"path": "a.txt"}, "same")
    zpi_model_server.add_turns(ScriptedTurn(tool_calls=(call, call)))  # not via parse()
    _, result = await _run(fmt, zpi_env, zpi_model_server, tmp_path)
    assert result.is_error and "two tool calls with the same id 'same'" in result.result


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("payload", [b"[" * 20_000 + b"]" * 20_000, b"1" * 5_000],
                         ids=["deep", "long-int"])
async def test_an_event_python_cannot_decode_is_a_stream_error(fmt, payload, connect,
                                                               zpi_model_server):
    from zpi_host.providers.base import ProviderStreamError

    from .conftest import ask

    event = b"event: message_start\n" if fmt == "anthropic" else b""
    zpi_model_server.fail_next(raw=event + b"data: " + payload + b"\n\n")
    provider = connect(fmt)
    with pytest.raises(ProviderStreamError, match="not valid JSON"):
        async for _ in provider.stream(ask("hi")):
            pass


@pytest.mark.parametrize("settings", [
    {"models": {"m": {"provider": "openai", "price": {"input": 10**400}}}},
    {"models": {"m": {"provider": "openai", "price": {"input": float("nan")}}}},
    {"requests": {"read_timeout": 10**400}},
])
def test_numbers_too_large_for_a_float_are_catalog_errors(settings):
    from zpi_host.providers.catalog import CatalogError, RequestPolicy, list_models

    with pytest.raises(CatalogError, match="must be a number"):
        list_models(settings)
        RequestPolicy.from_settings(settings)
