"""``max_budget_usd`` under parallel calls: sub-agents started together in one answer and the
side requests of ``WebFetch`` share the query's one spend ledger, so the requests sent after
the budget ran out are bounded by those in flight, never by the number of calls. Counted at
the loopback model server, never timed."""

from __future__ import annotations

import json

import pytest
from helpers.sdk_messages import collect
from helpers.web_server import web_server

from zpi_host.sdk import AgentDefinition, AgentOptions, query

pytestmark = pytest.mark.anyio

#: $1 per million input tokens: a request reporting 10 000 input tokens costs $0.01
PRICE = {"input": 1.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0}
CENT = {"input_tokens": 10_000, "output_tokens": 0}
BUDGET = 0.05
#: the requests the budget pays for at $0.01 each (the parent's first is one of them)
AFFORDABLE = 5
HELPER = AgentDefinition(description="answers", prompt="Answer briefly.", tools=["Read"])


def options(server, tmp_path, *, web_model=None, **fields) -> AgentOptions:
    models = {name: {"provider": "openai", "model": model, "price": PRICE,
                     "context_window": 200_000}
              for name, model in (("priced", "test-model"), ("reader", "reader-model"))}
    settings = {"providers": {"openai": {"base_url": server.base_url}},
                "requests": {"retry_base_delay": 0.001, "retry_max_delay": 0.001},
                "models": models,
                "plugins": {"builtins": {"title": {"enabled": False},
                                         "web": {"allow_private_addresses": True,
                                                 "model": web_model}}}}
    (tmp_path / "project").mkdir(exist_ok=True)
    return AgentOptions(cwd=tmp_path / "project", model="priced", settings=json.dumps(settings),
                        env={"OPENAI_API_KEY": "sk-test-openai"},
                        permission_mode="bypassPermissions", max_budget_usd=BUDGET, **fields)


async def test_forty_parallel_sub_agents_stop_at_the_budget(zpi_model_server, tmp_path):
    calls = [{"name": "Agent", "arguments": {"subagent_type": "helper", "description": f"d{n}",
                                             "prompt": f"task {n}"}} for n in range(40)]
    zpi_model_server.add_turns({"tool_calls": calls, "usage": CENT},
                               *[{"text": "ok", "usage": CENT}] * 40,
                               {"text": "all done", "usage": CENT})
    messages = await collect(query(prompt="fan out", options=options(
        zpi_model_server, tmp_path, agents={"helper": HELPER})))
    result = messages[-1]
    assert (result.subtype, result.is_error) == ("error_max_budget_usd", True), result.errors
    # each request is estimated at the largest seen ($0.01), so no more start than the
    # budget can pay for; before the ledger, all 40 children's requests were sent
    assert len(zpi_model_server.requests) <= AFFORDABLE
    assert result.total_cost_usd <= BUDGET + 1e-9
    refused = [b.content for m in messages if type(m).__name__ == "UserMessage"
               for b in m.content if "budget" in str(b.content)]
    assert len(refused) >= 40 - AFFORDABLE  # the children refused say why


@pytest.mark.parametrize("web_model", [None, "reader"])
async def test_thirty_webfetch_prompts_stop_at_the_budget(zpi_model_server, tmp_path,
                                                          web_model):
    with web_server() as web:
        web.page("/page", "<p>some text</p>")
        calls = [{"name": "WebFetch", "arguments": {"url": web.url("/page"),
                                                    "prompt": f"question {n}"}}
                 for n in range(30)]
        zpi_model_server.add_turns({"tool_calls": calls, "usage": CENT},
                                   *[{"text": "answer", "usage": CENT}] * 30,
                                   {"text": "all done", "usage": CENT})
        messages = await collect(query(prompt="fetch all", options=options(
            zpi_model_server, tmp_path, web_model=web_model)))
    result = messages[-1]
    assert (result.subtype, result.is_error) == ("error_max_budget_usd", True), result.errors
    # before the ledger, the 30 side requests were never checked (nor, to another model
    # than the session's, counted)
    assert len(zpi_model_server.requests) <= AFFORDABLE
    assert result.total_cost_usd <= BUDGET + 1e-9
    if web_model is not None:
        assert result.model_usage["openai/reader-model"]["costUSD"] > 0
    refused = [b.content for m in messages if type(m).__name__ == "UserMessage"
               for b in m.content if "budget" in str(b.content)]
    assert len(refused) >= 30 - AFFORDABLE
