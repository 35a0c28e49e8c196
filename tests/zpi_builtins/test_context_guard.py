"""builtins:context_guard: a hard ceiling before each request, relaxed during a hand-off."""

from __future__ import annotations

import pytest
from helpers.builtins import builtins_settings

from zpi_builtins.context_guard import guard_for
from zpi_host.providers.catalog import ModelEntry
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio

NO_COMPACTION = {"compaction": {"enabled": False}}


def windowed(turns, window: int = 10_000) -> ScriptedModel:
    model = ScriptedModel(turns)
    model.entry = ModelEntry(name="m", provider="t", model="m", context_window=window)
    return model


def turn(text: str, input_tokens: int) -> dict:
    return {"text": text, "usage": {"input_tokens": input_tokens, "output_tokens": 5}}


async def session_over(tmp_path, model, settings):
    session = await create_session(model="t:m", provider=model, cwd=tmp_path, settings=settings)
    first = await session.run("one")
    assert not first.is_error
    return session


async def test_over_the_ceiling_the_request_is_refused_with_size_limit_and_remedy(
        zpi_env, tmp_path):
    model = windowed([turn("first", input_tokens=9_900), "never sent"])
    session = await session_over(tmp_path, model, NO_COMPACTION)
    result = await session.run("two")
    await session.dispose()
    assert result.is_error
    assert "context guard: the request to scripted:memory would hold about 9,9" in result.result
    assert ("over the ceiling of 9,500 tokens (10,000 (the model's context window) x ratio 0.95"
            in result.result)
    assert "Compact the conversation (/compact), start a new session" in result.result
    assert "could not be compacted" in result.result
    assert len(model.requests) == 1  # the guard stopped it before the provider


async def test_the_loop_compacts_on_the_guards_overflow_and_retries(zpi_env, tmp_path):
    model = windowed([turn("first " + "x" * 400, input_tokens=9_900), "the summary",
                      turn("second", input_tokens=50)])
    settings = {"compaction": {"reserve_tokens": 0, "keep_recent_tokens": 30}}
    session = await session_over(tmp_path, model, settings)
    events = []
    session.subscribe(events.append)
    result = await session.run("two")
    await session.dispose()
    assert not result.is_error and result.result == "second"
    (compaction,) = [e.result for e in events if e.type == "compaction"]
    assert compaction.reason == "overflow"


async def test_a_hand_off_doubles_the_ceiling(zpi_env, tmp_path):
    model = windowed([turn("first", input_tokens=9_900), "written while relaxed"])
    session = await session_over(tmp_path, model, NO_COMPACTION)
    guard = guard_for(session.view)
    with guard.relaxed():
        assert guard.ceiling(10_000) == 19_000
        result = await session.run("write the hand-off")
    assert guard.ceiling(10_000) == 9_500 and not guard.is_relaxed
    await session.dispose()
    assert not result.is_error and result.result == "written while relaxed"


async def test_max_tokens_and_ratio_from_settings_when_the_window_is_unknown(
        zpi_env, tmp_path):
    settings = {**NO_COMPACTION, **builtins_settings(
        context_guard={"max_tokens": 4_000, "ratio": 0.5})}
    refused = await create_session(model="scripted:memory", provider=ScriptedModel(["no"]),
                                   cwd=tmp_path, settings=settings)
    result = await refused.run("y" * 8_000)
    await refused.dispose()
    assert result.is_error and "over the ceiling of 2,000 tokens (4,000 (max_tokens) x ratio 0.5" \
        in result.result
    unguarded = await create_session(model="scripted:memory", provider=ScriptedModel(["yes"]),
                                     cwd=tmp_path, settings=NO_COMPACTION)
    assert (await unguarded.run("y" * 8_000)).result == "yes"  # no window, no max_tokens
    await unguarded.dispose()


async def test_switched_off_the_guard_lets_the_request_through(zpi_env, tmp_path):
    model = windowed([turn("first", input_tokens=9_900), "sent anyway"])
    settings = {**NO_COMPACTION, **builtins_settings(context_guard={"enabled": False})}
    session = await session_over(tmp_path, model, settings)
    result = await session.run("two")
    await session.dispose()
    assert result.result == "sent anyway"
