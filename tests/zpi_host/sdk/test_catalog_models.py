"""SDK programs name models as claude-agent-sdk users do (aliases, dated ids, bare ids) and
are priced from the built-in catalog."""

from __future__ import annotations

import json

import pytest

from zpi_host.agent.compaction import SUMMARY_SYSTEM_PROMPT
from zpi_host.errors import UsageError
from zpi_host.providers.builtin_catalog import builtin_models
from zpi_host.sdk import query

from .conftest import collect

pytestmark = pytest.mark.anyio

USAGE = {"input_tokens": 10_000, "output_tokens": 2_000, "cache_read_tokens": 4_000}
#: provider -> (the model option, its catalog entry, the id sent to the service)
MODELS = {"anthropic": [("sonnet", "claude-sonnet-4-5", "claude-sonnet-4-5"),
                        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5",
                         "claude-sonnet-4-5-20250929")],
          "openai": [("gpt-4.1", "gpt-4.1", "gpt-4.1"),
                     ("openai:gpt-4.1-2025-04-14", "gpt-4.1", "gpt-4.1-2025-04-14")]}


def catalog_cost(name: str) -> float:
    price = builtin_models()[name]["price"]
    return (USAGE["input_tokens"] * price["input"] + USAGE["output_tokens"] * price["output"]
            + USAGE["cache_read_tokens"] * price["cache_read"]) / 1_000_000


@pytest.mark.parametrize("which", [0, 1])
async def test_a_catalog_model_runs_and_costs_the_catalogs_prices(backend, which):
    if backend.kind == "scripted":
        pytest.skip("the scripted model is never priced")
    spec, name, sent = MODELS[backend.kind][which]
    backend.turns({"text": "hello", "usage": USAGE})
    result = (await collect(query("hi", backend.options(model=spec))))[-1]
    assert (result.subtype, result.result) == ("success", "hello"), result.errors
    assert backend.requests()[0]["model"] == sent  # a dated id is sent as written
    assert result.total_cost_usd == pytest.approx(catalog_cost(name), rel=1e-9)
    assert result.total_cost_usd > 0


async def test_a_budget_stops_on_a_catalog_model(backend):
    if backend.kind == "scripted":
        pytest.skip("the scripted model is never priced")
    spec, name, _ = MODELS[backend.kind][0]
    call = {"tool_calls": [{"name": "Bash", "arguments": {"command": "true"}}], "usage": USAGE}
    backend.turns(call, call, call)
    options = backend.options(model=spec, max_budget_usd=catalog_cost(name) * 1.5,
                              permission_mode="bypassPermissions")
    result = (await collect(query("spend", options)))[-1]
    assert (result.subtype, result.is_error) == ("error_max_budget_usd", True), result.errors
    assert len(backend.requests()) == 2


async def test_a_budget_on_an_unpriced_model_is_refused_at_the_start(backend):
    if backend.kind == "scripted":
        pytest.skip("the scripted model is never priced")
    backend.turns({"text": "x", "usage": USAGE})
    options = backend.options(model=f"{backend.kind}:unlisted-model", max_budget_usd=1.0)
    with pytest.raises(UsageError, match=r"max_budget_usd=1 cannot be kept.*no price"):
        await collect(query("hi", options))
    assert backend.requests() == []


@pytest.mark.parametrize("window, compacts", [(None, False), (1000, True)])
async def test_compaction_triggers_at_the_catalogs_window(backend, window, compacts):
    if backend.kind == "scripted":
        pytest.skip("the scripted model is not in the catalog")
    spec, name, _ = MODELS[backend.kind][0]
    settings = {**backend.settings(),
                "compaction": {"reserve_tokens": 100, "keep_recent_tokens": 30}}
    if window is not None:  # overrides one field of the built-in entry, keeps the others
        settings["models"] = {name: {"context_window": window}}
    call = {"tool_calls": [{"name": "Bash", "arguments": {"command": "echo " + "x" * 300}}],
            "usage": {"input_tokens": 950, "output_tokens": 5}}
    backend.turns(call, *(["the summary of it"] if compacts else []), "done")
    options = backend.options(model=spec, settings=json.dumps(settings),
                              permission_mode="bypassPermissions")
    messages = await collect(query("go " + "y" * 300, options))
    assert messages[-1].result == "done", messages[-1]
    summaries = [r for r in backend.requests() if SUMMARY_SYSTEM_PROMPT[:40] in json.dumps(r)]
    assert len(summaries) == (1 if compacts else 0)
    usage = messages[-1].model_usage[f"{backend.kind}/{builtin_models()[name]['model']}"]
    assert usage["contextWindow"] == (window or builtin_models()[name]["context_window"])
