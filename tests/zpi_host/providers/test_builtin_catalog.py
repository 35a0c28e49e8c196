"""The built-in catalog: what it ships, how names resolve against it, how settings extend
and override it, and how its prices are applied."""

from __future__ import annotations

import pytest

from zpi_host.errors import UsageError
from zpi_host.providers.builtin_catalog import builtin_defaults, builtin_models, builtin_services
from zpi_host.providers.catalog import (
    REASONING_KINDS,
    CatalogError,
    Price,
    cost,
    credentials,
    default_model,
    list_models,
    resolve_model,
    with_base_url,
)
from zpi_host.providers.messages import Usage


def test_every_built_in_entry_is_valid_priced_and_dated():
    entries = [e for e in list_models({}) if e.name in builtin_models()]
    assert len(entries) == len(builtin_models()) >= 10
    for entry in entries:
        assert entry.context_window, entry.name
        if entry.aliases or entry.name in builtin_defaults().values():  # what a first run uses
            assert entry.max_output, entry.name
        assert entry.price is not None and entry.price.known(), entry.name
        assert entry.price_date and entry.price_source.startswith("genai-prices"), entry.name
        assert entry.reasoning in (None, *REASONING_KINDS)
    assert {e.provider for e in entries} == {"anthropic", "openai"}
    for provider, name in builtin_defaults().items():
        assert resolve_model(name, {}).provider == provider
    assert {"deepseek", "zhipu", "openrouter", "gemini", "ollama", "vllm"} <= \
        set(builtin_services())


@pytest.mark.parametrize("spec, name, sent", [
    ("sonnet", "claude-sonnet-4-5", "claude-sonnet-4-5"),
    ("opus", "claude-opus-4-5", "claude-opus-4-5"),
    ("haiku", "claude-haiku-4-5", "claude-haiku-4-5"),
    ("claude-sonnet-4-5", "claude-sonnet-4-5", "claude-sonnet-4-5"),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5", "claude-sonnet-4-5-20250929"),
    ("anthropic:claude-sonnet-4-5-20250929", "claude-sonnet-4-5", "claude-sonnet-4-5-20250929"),
    ("gpt-4.1", "gpt-4.1", "gpt-4.1"),
    ("gpt-4.1-2025-04-14", "gpt-4.1", "gpt-4.1-2025-04-14"),
    ("openai:gpt-5", "gpt-5", "gpt-5"),
    ("deepseek:deepseek-chat", "deepseek:deepseek-chat", "deepseek-chat"),
])
def test_names_aliases_bare_and_dated_ids_resolve_to_the_catalog(spec, name, sent):
    entry = resolve_model(spec, {})
    base = builtin_models()[name]
    assert (entry.provider, entry.model) == (base["provider"], sent)
    assert entry.price is not None and entry.price.input == base["price"]["input"]
    assert entry.context_window == base["context_window"]


def test_a_bare_id_of_a_known_provider_that_the_catalog_lacks_is_unpriced():
    entry = resolve_model("claude-future-9", {})
    assert (entry.provider, entry.model, entry.price) == ("anthropic", "claude-future-9", None)
    assert resolve_model("o4-pro", {}).provider == "openai"


def test_a_service_preset_reaches_the_service_with_its_key_variable():
    entry = resolve_model("openrouter:meta/llama-4", {})
    assert (entry.provider, entry.model, entry.base_url, entry.api_key_env) == (
        "openai", "meta/llama-4", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY")
    local = resolve_model("ollama:qwen3", {})
    assert local.base_url == "http://localhost:11434/v1"
    assert not credentials(local, {}).required  # a server on this machine needs no key
    missing = credentials(resolve_model("deepseek:deepseek-chat", {}), {})
    assert missing.key is None and missing.source == "environment variable DEEPSEEK_API_KEY"


def test_an_unknown_name_says_what_was_tried_and_the_closest():
    with pytest.raises(UsageError) as info:
        resolve_model("sonet", {})
    text = str(info.value)
    assert "tried the names, aliases and ids" in text and "claude-…: anthropic" in text
    assert "Closest names: sonnet" in text and "must look like PROVIDER:MODEL" in text


def test_settings_override_any_field_of_a_built_in_entry():
    settings = {"models": {"claude-sonnet-4-5": {"context_window": 5000,
                                                 "price": {"input": 9},
                                                 "aliases": ["mine"]}}}
    entry = resolve_model("mine", settings)
    assert (entry.name, entry.context_window, entry.max_output) == (
        "claude-sonnet-4-5", 5000, builtin_models()["claude-sonnet-4-5"]["max_output"])
    assert (entry.price.input, entry.price.output) == (9.0, 15.0)  # field by field
    with pytest.raises(UsageError, match="Closest names"):  # the aliases were replaced too
        resolve_model("sonnet", settings)
    assert list_models(settings)[0].name == "claude-sonnet-4-5"  # overrides keep one entry
    assert sum(e.name == "claude-sonnet-4-5" for e in list_models(settings)) == 1


def test_a_settings_entry_may_shadow_an_alias():
    settings = {"models": {"sonnet": {"provider": "openai", "model": "gpt-4.1"}}}
    assert resolve_model("sonnet", settings).provider == "openai"


@pytest.mark.parametrize("field, value, problem", [
    ("reasoning", "magic", "one of anthropic-thinking"),
    ("tools", "yes", "true or false"),
    ("vision", 1, "true or false"),
    ("prompt_caching", None, "true or false"),
    ("aliases", "sonnet", "list of names"),
    ("context_window", "big", "whole number"),
    ("price", {"long_context": {"input": 1}}, "long_context.above"),
    ("colour", "red", "not a known field"),
])
def test_a_wrong_type_or_unknown_capability_names_the_setting(field, value, problem):
    settings = {"models": {"claude-sonnet-4-5": {field: value}}}
    with pytest.raises(CatalogError, match=problem) as info:
        resolve_model("claude-sonnet-4-5", settings)
    assert info.value.setting.startswith(f"models.claude-sonnet-4-5.{field}")


def test_reasoning_true_means_the_providers_kind():
    settings = {"models": {"a": {"provider": "anthropic", "reasoning": True},
                           "o": {"provider": "openai", "reasoning": True},
                           "n": {"provider": "openai", "reasoning": False}}}
    assert [resolve_model(n, settings).reasoning for n in "aon"] == [
        "anthropic-thinking", "openai-effort", None]
    assert resolve_model("claude-sonnet-4-5", {}).prompt_caching
    assert resolve_model("gpt-5", {}).reasoning == "openai-effort"


def test_long_prompts_cost_the_long_context_rates():
    price = Price(3.0, 15.0, 0.3, 3.75, long_context=Price(6.0, 22.5, None, 7.5),
                  long_context_above=200_000)
    short = Usage(input_tokens=100_000, output_tokens=1_000)
    assert cost(short, price) == pytest.approx((100_000 * 3 + 1_000 * 15) / 1e6)
    long = Usage(input_tokens=150_000, output_tokens=1_000, cache_read_tokens=60_000)
    # every token at the long rate; cache reads keep the base rate the tier does not give
    assert cost(long, price) == pytest.approx((150_000 * 6 + 1_000 * 22.5 + 60_000 * 0.3) / 1e6)
    built_in = resolve_model("sonnet", {}).price
    assert built_in is not None and built_in.long_context_above == 200_000


def test_the_default_model_follows_the_first_provider_key_set():
    anthropic, _ = default_model({}, {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"})
    openai, _ = default_model({}, {"OPENAI_API_KEY": "o"})
    none, missing = default_model({}, {})
    assert anthropic.name == builtin_defaults()["anthropic"]
    assert openai.name == builtin_defaults()["openai"]
    assert none is None and any("ANTHROPIC_API_KEY" in m for m in missing)
    token, _ = default_model({}, {"ANTHROPIC_AUTH_TOKEN": "t"})
    assert token.provider == "anthropic"
    own = {"models": {"local": {"provider": "openai", "base_url": "http://127.0.0.1:9/v1"}}}
    assert default_model(own, {"ANTHROPIC_API_KEY": "a"})[0].name == "local"


def test_the_responses_api_shares_the_openai_entries():
    entry = resolve_model("openai-responses:gpt-5", {})
    base = resolve_model("gpt-5", {})
    assert (entry.provider, entry.model, entry.name) == (
        "openai-responses", "gpt-5", "openai-responses:gpt-5")
    assert (entry.price, entry.context_window, entry.reasoning) == (
        base.price, base.context_window, "openai-effort")


@pytest.mark.parametrize("spec", ["sonnet", "claude-sonnet-4-5-20250929", "ollama:qwen3",
                                  "anthropic:claude-unlisted", "deepseek:deepseek-chat"])
def test_base_url_reaches_aliases_dated_ids_and_presets(spec):
    url = "http://127.0.0.1:9/v1"
    settings = with_base_url({}, spec, url)
    entry = resolve_model(spec, settings)
    assert entry.base_url == url
    assert entry.model == resolve_model(spec, {}).model
    assert entry.price == resolve_model(spec, {}).price
