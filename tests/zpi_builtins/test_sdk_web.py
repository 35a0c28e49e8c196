"""WebFetch and WebSearch through the Claude-style SDK, written as a claude-agent-sdk program
would be, against the loopback model server (Anthropic format) and a loopback web server."""

from __future__ import annotations

import json

import pytest
from helpers.builtins import loopback_sdk_options
from helpers.web_server import web_server

from zpi_host.sdk import AgentOptions, ResultMessage, query

pytestmark = pytest.mark.anyio


def options(model_server, cwd, web: dict, **fields) -> AgentOptions:
    return loopback_sdk_options(model_server, cwd, builtins={"web": web}, **fields)


async def test_webfetch_with_its_prompt_and_websearch_with_domain_filters(
        zpi_env, zpi_model_server, tmp_path):
    with web_server() as web:
        web.page("/notes", "<h1>Release notes</h1><p>Version 2.0</p>")
        web.search_results = [{"title": "A", "url": "https://a.example/", "content": "a"},
                              {"title": "B", "url": "https://b.test/", "content": "b"}]
        zpi_model_server.add_turns(
            {"tool_calls": [{"name": "WebFetch", "arguments": {
                "url": web.url("/notes"), "prompt": "Which version?"}}]},
            {"text": "Version 2.0."},  # the side request that answers the prompt
            {"tool_calls": [{"name": "WebSearch", "arguments": {
                "query": "release", "blocked_domains": ["b.test"]}}]},
            {"text": "It is 2.0; see a.example."})
        opts = options(zpi_model_server, tmp_path, {"allow_private_addresses": True,
                                                    "searxng_url": web.base_url})
        messages = [m async for m in query(prompt="which version?", options=opts)]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and not result.is_error
    assert result.result == "It is 2.0; see a.example."
    first = zpi_model_server.requests[0].json
    names = {t["name"] for t in first["tools"]}
    assert {"WebFetch", "WebSearch"} <= names and not {"web_fetch", "web_search"} & names
    webfetch = next(t for t in first["tools"] if t["name"] == "WebFetch")
    assert webfetch["input_schema"]["required"] == ["url", "prompt"]
    side = zpi_model_server.requests[1].json
    assert "Release notes" in side["messages"][0]["content"][0]["text"] and "tools" not in side
    results = [json.dumps(r.json["messages"][-1]) for r in zpi_model_server.requests[2:]]
    assert "Version 2.0." in results[0]
    assert "https://a.example/" in results[1] and "b.test" not in results[1]


async def test_disallowed_websearch_is_removed_and_webfetch_domain_rules_apply(
        zpi_env, zpi_model_server, tmp_path):
    with web_server() as web:
        web.page("/", "<p>x</p>")
        zpi_model_server.add_turns(
            {"tool_calls": [{"name": "WebFetch", "arguments": {"url": web.url("/"),
                                                               "prompt": "x"}}]},
            {"text": "refused"})
        opts = options(zpi_model_server, tmp_path, {"allow_private_addresses": True},
                       disallowed_tools=["WebSearch", "WebFetch(domain:127.0.0.1)"])
        messages = [m async for m in query(prompt="fetch", options=opts)]
        assert web.requests == []
    assert messages[-1].result == "refused"
    names = {t["name"] for t in zpi_model_server.requests[0].json["tools"]}
    assert "WebFetch" in names and "WebSearch" not in names
    denied = json.dumps(zpi_model_server.requests[1].json["messages"][-1])
    assert "WebFetch(domain:127.0.0.1)" in denied
