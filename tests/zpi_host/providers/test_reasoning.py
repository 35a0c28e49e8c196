"""Reasoning in the form each model takes: Anthropic's thinking budget or adaptive thinking
with an effort, OpenAI's reasoning effort; the budget from settings, the session option or
``MAX_THINKING_TOKENS``. Against the loopback server."""

from __future__ import annotations

import pytest

from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.errors import UsageError
from zpi_host.providers.catalog import CatalogError, ModelEntry
from zpi_host.providers.reasoning import level_for_budget, reasoning_kind
from zpi_host.session.assembly import create_session

from .conftest import ENV, KEYS, ask, collect, settings_for

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("provider", "model", "reasoning", "kind"), [
    ("anthropic", "claude-sonnet-4-5-20250929", True, "anthropic-thinking"),
    ("anthropic", "claude-opus-4-6", True, "anthropic-adaptive"),
    ("anthropic", "claude-sonnet-4-6", True, "anthropic-adaptive"),
    ("openai", "anthropic/claude-opus-4-7", True, "anthropic-adaptive"),  # a gateway's id
    ("openai", "o3", True, "openai-effort"),
    ("anthropic", "claude-opus-4-6", False, None),
    ("anthropic", "claude-sonnet-4-5", "anthropic-adaptive", "anthropic-adaptive"),  # catalog
    ("openai", "gpt-5", "openai-effort", "openai-effort"),
    ("openai", "gpt-5", "no-such-kind", None),
])
def test_reasoning_kind(provider, model, reasoning, kind):
    entry = ModelEntry(name="x", provider=provider, model=model, reasoning=reasoning)
    assert reasoning_kind(entry) == kind


@pytest.mark.parametrize(("tokens", "level"), [
    (0, "off"), (1024, "minimal"), (1500, "low"), (8192, "medium"), (10_000, "high"),
    (20_000, "max"), (100_000, "max")])
def test_level_for_budget(tokens, level):
    assert level_for_budget(tokens) == level


@pytest.mark.parametrize(("level", "effort", "max_tokens"), [
    ("minimal", "low", 9216), ("low", "low", 10240), ("medium", "medium", 16384),
    ("high", "high", 24576), ("max", "max", 40960)])
async def test_adaptive_models_get_adaptive_thinking_and_an_effort(level, effort, max_tokens,
                                                                   connect, zpi_model_server):
    zpi_model_server.add_turns("ok")
    await collect(connect("anthropic", model="claude-opus-4-6", reasoning=True),
                  ask(reasoning=level))
    body = zpi_model_server.requests[0].json
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": effort}
    assert body["max_tokens"] == max_tokens  # room for the thinking, as with a budget


async def test_an_adaptive_models_own_output_limit_is_kept(connect, zpi_model_server):
    zpi_model_server.add_turns("ok")
    await collect(connect("anthropic", model="claude-opus-4-6", reasoning=True,
                          max_output=128_000), ask(reasoning="high"))
    assert zpi_model_server.requests[0].json["max_tokens"] == 128_000


async def test_off_sends_no_thinking_to_an_adaptive_model(connect, zpi_model_server):
    zpi_model_server.add_turns("ok")
    await collect(connect("anthropic", model="claude-opus-4-6", reasoning=True),
                  ask(reasoning="off"))
    body = zpi_model_server.requests[0].json
    assert "thinking" not in body and "output_config" not in body


async def test_the_budget_setting_replaces_the_levels(connect, zpi_model_server):
    zpi_model_server.add_turns("ok")
    provider = connect("anthropic", reasoning=True,
                       settings={"thinking_budget_tokens": 5000})
    await collect(provider, ask(reasoning="high"))
    body = zpi_model_server.requests[0].json
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 5000}
    assert body["max_tokens"] == 8192


@pytest.mark.parametrize("bad", [100, "5000", 2.5])
async def test_a_bad_budget_setting_is_an_error_naming_it(bad, connect):
    with pytest.raises(CatalogError) as caught:
        connect("anthropic", reasoning=True, settings={"thinking_budget_tokens": bad})
    assert caught.value.setting == "thinking_budget_tokens"
    assert ">= 1024" in str(caught.value)


async def test_openai_max_is_the_services_highest_effort(connect, zpi_model_server):
    zpi_model_server.add_turns("ok")
    await collect(connect("openai", reasoning=True), ask(reasoning="max"))
    assert zpi_model_server.requests[0].json["reasoning_effort"] == "high"


async def _session(zpi_env, server, tmp_path, **options):
    zpi_env.set(ENV["anthropic"], KEYS["anthropic"])
    settings = {**settings_for(server.base_url, "anthropic"),
                "models": {"claude": {"provider": "anthropic", "model": "claude-sonnet-4-5",
                                      "reasoning": True}}}
    return await create_session(model="claude", cwd=tmp_path, settings=settings,
                                host=PluginHost(PluginConfig(autoload=False)).load(),
                                persist=False, **options)


@pytest.mark.parametrize(("variable", "level", "thinking"), [
    ("5000", "medium", {"type": "enabled", "budget_tokens": 5000}),
    ("0", "off", None),
])
async def test_max_thinking_tokens_is_honoured(variable, level, thinking, zpi_env,
                                               zpi_model_server, tmp_path):
    import os

    zpi_model_server.add_turns("ok")
    session = await _session(zpi_env, zpi_model_server, tmp_path,
                             environ={**os.environ, "MAX_THINKING_TOKENS": variable})
    try:
        assert session.reasoning_level == level
        await session.run("hi")
    finally:
        await session.dispose()
    assert zpi_model_server.requests[0].json.get("thinking") == thinking


async def test_the_thinking_budget_option_wins_over_the_variable(zpi_env, zpi_model_server,
                                                                 tmp_path):
    import os

    zpi_model_server.add_turns("ok")
    session = await _session(zpi_env, zpi_model_server, tmp_path, thinking_budget=3000,
                             environ={**os.environ, "MAX_THINKING_TOKENS": "9000"})
    try:
        await session.run("hi")
    finally:
        await session.dispose()
    assert zpi_model_server.requests[0].json["thinking"] == {"type": "enabled",
                                                            "budget_tokens": 3000}


async def test_a_bad_max_thinking_tokens_is_a_usage_error(zpi_env, zpi_model_server, tmp_path):
    import os

    with pytest.raises(UsageError, match="MAX_THINKING_TOKENS must be a whole number"):
        await _session(zpi_env, zpi_model_server, tmp_path,
                       environ={**os.environ, "MAX_THINKING_TOKENS": "lots"})
