"""The loopback model server itself: routes, recording, turns and fault queueing."""

from __future__ import annotations

import json

import httpx
import pytest

from zpi_host.testing import ModelServer
from zpi_host.testing.model_server import error_body, sse_frames


def post(server: ModelServer, path: str, body: dict | None = None) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{server.port}{path}", json=body or {"model": "m"},
                      headers={"authorization": "Bearer k"}, timeout=10)


def text_of(body: bytes) -> str:
    """The answer text in an OpenAI or Anthropic event stream."""
    text = []
    for line in body.decode().splitlines():
        if line.startswith("data: {"):
            data = json.loads(line[6:])
            delta = data.get("delta") or (data.get("choices") or [{}])[0].get("delta") or {}
            text.append(delta.get("content") or delta.get("text") or "")
    return "".join(text)


def test_routes_with_and_without_v1_and_recording(zpi_model_server):
    zpi_model_server.add_turns(["one", "two"], "three")
    assert zpi_model_server.remaining == 3
    first = post(zpi_model_server, "/v1/chat/completions")
    second = post(zpi_model_server, "/messages")
    assert first.headers["content-type"] == "text/event-stream"
    assert text_of(first.content) == "one" and first.content.endswith(b"data: [DONE]\n\n")
    assert b"event: message_stop" in second.content and text_of(second.content) == "two"
    recorded = zpi_model_server.requests
    assert [(r.path, r.format) for r in recorded] == [("/v1/chat/completions", "openai"),
                                                      ("/messages", "anthropic")]
    assert recorded[0].headers["authorization"] == "Bearer k"
    assert recorded[0].json == {"model": "m"}
    assert zpi_model_server.remaining == 1


def test_unknown_path_and_no_turn_left_are_clear(zpi_model_server):
    missing = post(zpi_model_server, "/v1/embeddings")
    assert missing.status_code == 404 and "/v1/chat/completions" in missing.text
    empty = post(zpi_model_server, "/v1/messages")
    assert empty.status_code == 400
    assert empty.json()["error"]["message"].startswith("ModelServer has no scripted turn left")


def test_faults_are_queued_and_do_not_use_up_turns(zpi_model_server):
    zpi_model_server.add_turns("kept")
    zpi_model_server.fail_next(429, retry_after=2, times=2)
    zpi_model_server.fail_next(context_overflow=True)
    for _ in range(2):
        limited = post(zpi_model_server, "/v1/messages")
        assert (limited.status_code, limited.headers["retry-after"]) == (429, "2")
        assert limited.json() == error_body("anthropic", 429, "injected HTTP 429")
    overflow = post(zpi_model_server, "/v1/chat/completions")
    assert overflow.json()["error"]["code"] == "context_length_exceeded"
    assert text_of(post(zpi_model_server, "/v1/chat/completions").content) == "kept"


def test_raw_bytes_are_served_as_they_are(zpi_model_server):
    zpi_model_server.fail_next(raw=b"data: anything\n\n")
    assert post(zpi_model_server, "/v1/chat/completions").content == b"data: anything\n\n"


def test_frames_split_strings_into_pieces():
    from zpi_host.providers.script import ScriptedTurn

    frames = sse_frames("openai", ScriptedTurn(text="abcdefg"), pieces=3)
    contents = [json.loads(f[6:])["choices"][0]["delta"].get("content")
                for f in frames if f.startswith(b"data: {") and b'"choices":[{' in f]
    assert contents == ["", "abc", "def", "g", None]


def test_server_lifecycle():
    server = ModelServer(["x"])
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.base_url
    with server:
        assert server.base_url.startswith("http://127.0.0.1:") and \
            server.base_url.endswith("/v1")
    server.close()  # closing twice is fine


def test_responses_stream_has_the_services_event_sequence(zpi_model_server):
    """``POST /v1/responses``: the events and shapes of OpenAI's Responses stream."""
    zpi_model_server.add_turns({"thinking": "hmm", "text": "hi", "tool_calls": [
        {"name": "read", "arguments": {"path": "a"}}],
        "usage": {"input_tokens": 5, "output_tokens": 7, "cache_read_tokens": 3}}, "plain")
    answer = post(zpi_model_server, "/v1/responses",
                  {"model": "m", "include": ["reasoning.encrypted_content"]})
    events = [json.loads(line[6:]) for line in answer.content.decode().splitlines()
              if line.startswith("data: ")]
    names = [line[7:] for line in answer.content.decode().splitlines()
             if line.startswith("event: ")]
    assert names == [e["type"] for e in events]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert names[:2] == ["response.created", "response.in_progress"]
    assert names[-1] == "response.completed"
    for name in ("response.reasoning_summary_text.delta", "response.output_text.delta",
                 "response.function_call_arguments.delta", "response.output_item.done"):
        assert name in names
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [i["type"] for i in done] == ["reasoning", "message", "function_call"]
    assert done[0]["encrypted_content"] in zpi_model_server.issued_reasoning
    assert (done[2]["call_id"], done[2]["arguments"]) == ("call_1_0", '{"path": "a"}')
    completed = events[-1]["response"]
    assert completed["output"] == done and completed["status"] == "completed"
    assert completed["usage"] == {"input_tokens": 8, "input_tokens_details": {
        "cached_tokens": 3}, "output_tokens": 7, "output_tokens_details": {
        "reasoning_tokens": 1}, "total_tokens": 15}
    # without include, no encrypted content; a reasoning item not issued is refused
    plain = post(zpi_model_server, "/responses", {"model": "m", "input": []})
    assert b"encrypted_content" not in plain.content
    refused = post(zpi_model_server, "/v1/responses", {"model": "m", "input": [
        {"type": "reasoning", "id": "rs_x", "summary": []}]})
    assert refused.status_code == 400 and "not persisted" in refused.json()["error"]["message"]


def test_keep_bodies_records_every_request_but_only_the_last_bodies():
    with ModelServer(["one", "two", "three"], keep_bodies=2) as server:
        for n in range(3):
            post(server, "/v1/messages", {"model": "m", "n": n})
        assert [r.path for r in server.requests] == ["/v1/messages"] * 3
        assert server.requests[0].body == b""
        assert [r.json["n"] for r in server.requests[1:]] == [1, 2]
        assert server.requests[0].headers["authorization"] == "Bearer k"
    with pytest.raises(ValueError, match="keep_bodies must be at least 1"):
        ModelServer(keep_bodies=0)
