"""The model catalog: resolving specs, validating settings, credentials, cost, request policy."""

from __future__ import annotations

import pytest

from zpi_host.errors import UsageError
from zpi_host.providers.builtin_catalog import builtin_models
from zpi_host.providers.catalog import (
    DEFAULT_API_KEY_ENV,
    CatalogError,
    Credential,
    ModelEntry,
    Price,
    RequestPolicy,
    cost,
    credentials,
    has_credentials,
    list_models,
    resolve_model,
    with_base_url,
)
from zpi_host.providers.messages import Usage

SETTINGS = {
    "models": {
        "deepseek-chat": {
            "provider": "openai", "model": "deepseek-chat",
            "base_url": "https://api.deepseek.com/v1", "api_key_env": "DEEPSEEK_API_KEY",
            "context_window": 65536, "max_output": 8192, "reasoning": False,
            "price": {"input": 0.27, "output": 1.10, "cache_read": 0.07, "cache_write": 0},
        },
        "sonnet": {"provider": "anthropic", "model": "claude-sonnet-4-5", "reasoning": True,
                   "headers": {"anthropic-beta": "x"}},
        "gpt-4o": {"provider": "openai"},
    },
    "providers": {"openai": {"base_url": "https://proxy.example/v1", "api_key_env": "MY_KEY",
                             "headers": {"x-team": "a"}}},
}


def test_a_catalog_key_resolves_to_its_entry():
    entry = resolve_model("deepseek-chat", SETTINGS)
    assert entry == ModelEntry(
        name="deepseek-chat", provider="openai", model="deepseek-chat",
        base_url="https://api.deepseek.com/v1", api_key_env="DEEPSEEK_API_KEY",
        context_window=65536, max_output=8192, price=Price(0.27, 1.10, 0.07, 0.0),
        headers={"x-team": "a"})
    assert entry.spec == "openai:deepseek-chat"


def test_model_defaults_to_the_key_and_provider_defaults_fill_in():
    entry = resolve_model("gpt-4o", SETTINGS)
    assert (entry.model, entry.base_url, entry.api_key_env) == (
        "gpt-4o", "https://proxy.example/v1", "MY_KEY")


def test_provider_model_spec_uses_a_matching_entry_or_builds_a_bare_one():
    assert resolve_model("anthropic:claude-sonnet-4-5", SETTINGS).name == "sonnet"
    bare = resolve_model("openai:gpt-5:2025", SETTINGS)  # the model part may contain colons
    assert (bare.name, bare.provider, bare.model, bare.price) == (
        "openai:gpt-5:2025", "openai", "gpt-5:2025", None)
    assert bare.base_url == "https://proxy.example/v1" and bare.headers == {"x-team": "a"}
    assert resolve_model("scripted:a/b.jsonl", {}).model == "a/b.jsonl"


@pytest.mark.parametrize("spec", ["nothing", ":model", ""])
def test_a_spec_that_is_neither_a_key_nor_provider_model_is_a_usage_error(spec):
    with pytest.raises(UsageError, match="must look like PROVIDER:MODEL") as info:
        resolve_model(spec, SETTINGS)
    assert "tried the names, aliases and ids" in str(info.value)


def test_list_models_keeps_catalog_order():
    # the settings' entries first, in their order, then the built-in ones
    names = [e.name for e in list_models(SETTINGS)]
    assert names[:3] == ["deepseek-chat", "sonnet", "gpt-4o"]
    assert names[3:] == [n for n in builtin_models() if n not in names[:3]]


@pytest.mark.parametrize("entry, setting, problem", [
    ({"model": "x"}, "models.m.provider", "is missing"),
    ({"provider": 3}, "models.m.provider", "non-empty string"),
    ({"provider": "openai", "colour": "red"}, "models.m.colour", "not a known field"),
    ({"provider": "openai", "context_window": "big"}, "models.m.context_window", "whole num"),
    ({"provider": "openai", "max_output": 0}, "models.m.max_output", ">= 1"),
    ({"provider": "openai", "reasoning": "yes"}, "models.m.reasoning", "one of anthropic-"),
    ({"provider": "openai", "price": {"input": -1}}, "models.m.price.input", ">= 0"),
    ({"provider": "openai", "price": {"inputs": 1}}, "models.m.price.inputs", "known field"),
    ({"provider": "openai", "price": 3}, "models.m.price", "must be an object"),
    ({"provider": "openai", "base_url": "api.x.com"}, "models.m.base_url", "http://"),
    ({"provider": "openai", "headers": {"a": 1}}, "models.m.headers", "string"),
    ("openai:gpt", "models.m", "must be an object"),
])
def test_bad_entries_name_the_setting(entry, setting, problem):
    with pytest.raises(CatalogError, match=problem) as info:
        resolve_model("m", {"models": {"m": entry}})
    assert info.value.setting == setting
    assert f"settings: {setting} " in str(info.value) and "settings.json" in str(info.value)


def test_bad_provider_defaults_and_sections_name_the_setting():
    with pytest.raises(CatalogError, match=r"providers\.openai\.key "):
        resolve_model("openai:x", {"providers": {"openai": {"key": "v"}}})
    with pytest.raises(CatalogError, match=r"settings: models must be an object"):
        resolve_model("openai:x", {"models": []})
    with pytest.raises(CatalogError, match=r"settings: providers must be an object"):
        resolve_model("openai:x", {"providers": "openai"})


def test_a_bad_api_key_value_is_not_echoed():
    with pytest.raises(CatalogError) as info:
        resolve_model("m", {"models": {"m": {"provider": "openai", "api_key": ["sk-secret"]}}})
    assert "sk-secret" not in str(info.value) and "models.m.api_key" in str(info.value)


def test_the_key_never_shows_in_repr():
    entry = resolve_model("m", {"models": {"m": {"provider": "openai",
                                                 "api_key": "sk-very-secret"}}})
    credential = credentials(entry, {})
    for text in (repr(entry), str(entry), repr(credential), str(credential)):
        assert "sk-very-secret" not in text
    assert credential == Credential("sk-very-secret", "setting models.m.api_key")


def test_credentials_come_from_the_environment_by_default():
    assert DEFAULT_API_KEY_ENV == {"openai": "OPENAI_API_KEY",
                                   "openai-responses": "OPENAI_API_KEY",
                                   "anthropic": "ANTHROPIC_API_KEY"}
    entry = resolve_model("openai:gpt", {})
    assert credentials(entry, {"OPENAI_API_KEY": "k"}) == Credential(
        "k", "environment variable OPENAI_API_KEY")
    missing = credentials(entry, {"OPENAI_API_KEY": ""})
    assert missing.key is None and missing.required
    assert not has_credentials(entry, {})
    named = resolve_model("deepseek-chat", SETTINGS)
    assert credentials(named, {"DEEPSEEK_API_KEY": "d"}).source == \
        "environment variable DEEPSEEK_API_KEY"


def test_providers_without_keys():
    scripted = resolve_model("scripted:x.jsonl", {})
    assert has_credentials(scripted, {}) and not credentials(scripted, {}).required
    custom = resolve_model("myproto:model", {})
    assert has_credentials(custom, {})
    assert "api_key_env" in credentials(custom, {}).source


def test_cost_is_per_million_tokens_and_never_guessed():
    price = Price(input=2.0, output=10.0, cache_read=0.5, cache_write=None)
    assert cost(Usage(1_000_000, 100_000, 200_000), price) == pytest.approx(3.1)
    assert cost(Usage(10, 0, 0, 5), price) is None  # cache writes have no price
    assert cost(Usage(), None) == 0.0
    assert cost(Usage(1, 0), None) is None
    assert cost(Usage(0, 7), Price(output=1.0)) == pytest.approx(7e-6)


def test_request_policy_defaults_and_validation():
    assert RequestPolicy.from_settings({}) == RequestPolicy(
        max_retries=3, connect_timeout=10, read_timeout=300, retry_base_delay=1.0)
    policy = RequestPolicy.from_settings({"requests": {"max_retries": 0, "read_timeout": 5}})
    assert (policy.max_retries, policy.read_timeout) == (0, 5)
    for bad, setting in (({"max_retries": 1.5}, "requests.max_retries"),
                         ({"read_timeout": -1}, "requests.read_timeout"),
                         ({"retries": 2}, "requests.retries")):
        with pytest.raises(CatalogError) as info:
            RequestPolicy.from_settings({"requests": bad})
        assert info.value.setting == setting


def test_with_base_url_overrides_the_entry_or_the_provider():
    url = "http://127.0.0.1:9/v1"
    assert resolve_model("deepseek-chat", with_base_url(SETTINGS, "deepseek-chat", url)
                         ).base_url == url
    assert resolve_model("openai:deepseek-chat", with_base_url(
        SETTINGS, "openai:deepseek-chat", url)).base_url == url
    assert resolve_model("anthropic:other", with_base_url(SETTINGS, "anthropic:other", url)
                         ).base_url == url
    assert resolve_model("deepseek-chat", SETTINGS).base_url == "https://api.deepseek.com/v1"
    with pytest.raises(UsageError, match="http://"):
        with_base_url({}, "openai:x", "localhost:9")
