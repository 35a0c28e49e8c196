"""Prompt caching over a whole session: every Anthropic request of a 20-turn session against
the loopback server carries at most four ``cache_control`` breakpoints, on the system prompt,
the last tool and the last block of the two latest user messages."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.session.assembly import create_session

from .conftest import ENV, KEYS, settings_for

pytestmark = pytest.mark.anyio

TURNS = 20
EPHEMERAL = {"type": "ephemeral"}


def breakpoints(body: Any, where: str = "") -> list[str]:
    """Where in ``body`` a ``cache_control`` key is, as paths like ``messages.3.content.1``."""
    found = []
    if isinstance(body, dict):
        if "cache_control" in body:
            assert body["cache_control"] == EPHEMERAL
            found.append(where)
        for key, value in body.items():
            found += breakpoints(value, f"{where}.{key}" if where else key)
    elif isinstance(body, list):
        for i, value in enumerate(body):
            found += breakpoints(value, f"{where}.{i}" if where else str(i))
    return found


def expected(body: dict[str, Any]) -> list[str]:
    messages = body["messages"]
    users = [i for i, m in enumerate(messages) if m["role"] == "user"][-2:]
    marks = [f"messages.{i}.content.{len(messages[i]['content']) - 1}" for i in users]
    return ["system.0", f"tools.{len(body['tools']) - 1}", *marks]


async def test_every_request_of_a_20_turn_session_has_its_breakpoints(zpi_env, zpi_model_server,
                                                                       tmp_path):
    zpi_env.set(ENV["anthropic"], KEYS["anthropic"])
    (tmp_path / "notes.txt").write_text("".join(f"line {i}\n" for i in range(200)))
    for turn in range(TURNS - 1):  # a read per turn, then a final answer
        zpi_model_server.add_turns({"text": f"Reading, step {turn}.", "tool_calls": [
            {"name": "read", "arguments": {"path": "notes.txt"}}]})
    zpi_model_server.add_turns("Done.")
    settings = settings_for(zpi_model_server.base_url, "anthropic")
    session = await create_session(model="anthropic:claude-test", cwd=tmp_path,
                                   settings=settings,
                                   host=PluginHost(PluginConfig(autoload=False)).load())
    try:
        result = await session.run("read notes.txt twenty times")
    finally:
        await session.dispose()
    assert (result.is_error, result.num_turns) == (False, TURNS)
    bodies = [r.json for r in zpi_model_server.requests]
    assert len(bodies) == TURNS
    for n, body in enumerate(bodies, 1):
        marks = breakpoints(body)
        assert len(marks) <= 4, f"request {n}: {marks}"
        assert sorted(marks) == sorted(expected(body)), f"request {n}"
    # from the second request on, the newest user message is the tool result just sent and
    # the previous breakpoint is the one the request before placed last (read back)
    for before, after in itertools.pairwise(bodies):
        newest = expected(before)[-1]
        assert newest in expected(after)
        assert after["messages"][-1]["content"][-1]["type"] == "tool_result"


async def test_a_session_with_caching_off_sends_none(zpi_env, zpi_model_server, tmp_path):
    zpi_env.set(ENV["anthropic"], KEYS["anthropic"])
    zpi_model_server.add_turns({"tool_calls": [{"name": "read", "arguments": {"path": "x"}}]},
                               "Done.")
    settings = {**settings_for(zpi_model_server.base_url, "anthropic"), "prompt_caching": False}
    session = await create_session(model="anthropic:claude-test", cwd=tmp_path,
                                   settings=settings,
                                   host=PluginHost(PluginConfig(autoload=False)).load())
    try:
        await session.run("read x")
    finally:
        await session.dispose()
    assert len(zpi_model_server.requests) == 2
    assert all(b"cache_control" not in r.body for r in zpi_model_server.requests)
