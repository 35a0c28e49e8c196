"""The model catalog: which models exist, how to reach them, what they cost, where the key is.

Everything comes from the merged ``settings.json`` (``models``, ``providers``, ``requests``;
see docs/user-guide.md, "Models and credentials"). A bad entry is an error naming the setting
(``models.<name>.<field>``) and what to write instead; it is never skipped silently. API keys
are kept out of every ``repr`` and message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs

from ..errors import UsageError, ZpiError, docs_url
from ..settings.schema import is_number
from .messages import Usage

__all__ = [
    "DEFAULT_API_KEY_ENV", "DEFAULT_BASE_URL", "NO_KEY_PROVIDERS", "CatalogError", "Credential",
    "ModelEntry", "Price", "RequestPolicy", "cost", "credentials", "has_credentials",
    "list_models", "resolve_model", "with_base_url",
]

#: Where the key of a provider is looked for when an entry names no ``api_key_env``.
DEFAULT_API_KEY_ENV: dict[str, str] = {"openai": "OPENAI_API_KEY",
                                       "openai-responses": "OPENAI_API_KEY",
                                       "anthropic": "ANTHROPIC_API_KEY"}
#: A bearer token used when the key variable is not set (``Authorization: Bearer``), as the
#: official Anthropic SDK reads ``ANTHROPIC_AUTH_TOKEN``.
AUTH_TOKEN_ENV: dict[str, str] = {"anthropic": "ANTHROPIC_AUTH_TOKEN"}
#: The service a provider talks to when neither the entry nor ``providers`` set ``base_url``.
DEFAULT_BASE_URL: dict[str, str] = {"openai": "https://api.openai.com/v1",
                                    "openai-responses": "https://api.openai.com/v1",
                                    "anthropic": "https://api.anthropic.com"}
#: ``api`` of a ``models`` entry: which API of its provider it uses (OpenAI has two).
APIS: dict[str, frozenset[str]] = {"openai": frozenset({"chat", "responses"})}
#: Providers that never need a key.
NO_KEY_PROVIDERS = frozenset({"scripted"})

ENTRY_FIELDS = frozenset({"provider", "model", "base_url", "api_key_env", "api_key",
                          "context_window", "max_output", "reasoning", "price", "headers",
                          "api"})
PROVIDER_FIELDS = frozenset({"base_url", "api_key_env", "headers"})
PRICE_FIELDS = ("input", "output", "cache_read", "cache_write")


class CatalogError(ZpiError):
    """A ``models``, ``providers`` or ``requests`` setting that cannot be used; ``setting`` is
    its dotted path."""

    def __init__(self, setting: str, problem: str) -> None:
        super().__init__(f"settings: {setting} {problem} (fix it in settings.json; see "
                         f"{docs_url('user-guide', 'models-and-credentials')})")
        self.setting = setting


@attrs.frozen
class Price:
    """USD per million tokens; ``None`` = unknown (the cost is then reported as unpriced)."""

    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None


@attrs.frozen
class ModelEntry:
    """One model the host can talk to. ``name`` is the catalog key (or the ``PROVIDER:MODEL``
    spec of an entry built on the fly); ``model`` is the id sent to the service."""

    name: str
    provider: str
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    api_key: str | None = attrs.field(default=None, repr=False)
    context_window: int | None = None
    max_output: int | None = None
    reasoning: bool = False
    price: Price | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)
    #: where ``api_key`` came from when it was not a setting (an ``environ`` option)
    api_key_source: str | None = attrs.field(default=None, repr=False)
    #: ``api_key`` is a bearer token (``AUTH_TOKEN_ENV``), sent as ``Authorization: Bearer``
    api_key_bearer: bool = attrs.field(default=False, repr=False)
    #: the provider's API, where it has several (``openai``: "chat" or "responses"); None is
    #: the provider's default
    api: str | None = None

    @property
    def spec(self) -> str:
        return f"{self.provider}:{self.model}"


@attrs.frozen
class Credential:
    """The key for one entry (``None`` when missing) and a human description of where it is
    (or would be) read from. ``required`` is False for providers that need no key."""

    key: str | None = attrs.field(repr=False)
    source: str
    required: bool = True
    #: the key is a bearer token (``Authorization: Bearer``), not the provider's key header
    bearer: bool = False


@attrs.frozen
class RequestPolicy:
    """Timeouts (seconds), retries and the size caps of one answer for HTTP providers, from
    ``settings["requests"]``."""

    max_retries: int = 3
    connect_timeout: float = 10.0
    read_timeout: float = 300.0
    write_timeout: float = 60.0
    retry_base_delay: float = 1.0
    retry_max_delay: float = 30.0
    retry_after_max: float = 60.0
    #: characters of one answer (text, thinking, tool arguments) before it is cut with
    #: ProviderResponseTooLarge: far above the longest answer a current model gives (128k
    #: output tokens of a few characters each), however many events it is streamed in
    max_answer_chars: int = 4_000_000
    #: bytes on the wire of one answer: only a guard against a stream of overhead (pings,
    #: empty events) that never grows the answer; event framing can be hundreds of bytes per
    #: token, so it is far above the answer cap (512 MiB)
    max_response_bytes: int = 512 * 1024 * 1024

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> RequestPolicy:
        raw = settings.get("requests", {})
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise CatalogError("requests", f"must be an object, got {_kind(raw)}")
        fields = {f.name: f for f in attrs.fields(cls)}
        unknown = sorted(set(raw) - set(fields))
        if unknown:
            raise CatalogError(f"requests.{unknown[0]}",
                               f"is not a known setting; known: {', '.join(sorted(fields))}")
        values: dict[str, Any] = {}
        for name, value in raw.items():
            where = f"requests.{name}"
            if name in ("max_retries", "max_response_bytes", "max_answer_chars"):
                least = 0 if name == "max_retries" else 1
                if not _is_int(value) or value < least:
                    raise CatalogError(where, f"must be a whole number >= {least}, got "
                                              f"{value!r}")
            elif not is_number(value) or value < 0:
                raise CatalogError(where, f"must be a number of seconds >= 0, got {value!r}")
            values[name] = value
        return cls(**values)


# ---------------------------------------------------------------------------------- resolving


def resolve_model(spec: str, settings: Mapping[str, Any]) -> ModelEntry:
    """A catalog key, or ``PROVIDER:MODEL`` (the model part may contain colons): the catalog
    entry with that provider and model if there is one, else a bare entry (no price)."""
    models = _models(settings)
    if spec in models:
        return _entry(spec, models[spec], settings)
    provider, sep, model = spec.partition(":")
    if not sep or not provider:
        known = ", ".join(sorted(models)) or "none configured"
        raise UsageError(f"model {spec!r} is not in the model catalog (settings \"models\": "
                         f"{known}) and must look like PROVIDER:MODEL, for example "
                         "openai:gpt-4o, anthropic:claude-sonnet-4-5 or scripted:PATH")
    for entry in list_models(settings):
        if entry.provider == provider and entry.model == model:
            return entry
    defaults = _provider_defaults(provider, settings)
    return ModelEntry(name=spec, provider=provider, model=model,
                      base_url=defaults.get("base_url"), api_key_env=defaults.get("api_key_env"),
                      headers=dict(defaults.get("headers", {})))


def list_models(settings: Mapping[str, Any]) -> list[ModelEntry]:
    """Every catalog entry, in catalog order; the first bad one raises CatalogError."""
    return [_entry(name, raw, settings) for name, raw in _models(settings).items()]


def with_base_url(settings: Mapping[str, Any], spec: str, url: str) -> dict[str, Any]:
    """A copy of ``settings`` in which ``spec`` resolves to ``url`` (``--base-url``): the
    matching catalog entry is changed, else the provider's default."""
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--base-url {url!r} must start with http:// or https://")
    result = dict(settings)
    models = dict(_models(settings))
    if isinstance(models.get(spec), Mapping):
        models[spec] = {**models[spec], "base_url": url}
        result["models"] = models
        return result
    provider, _, model = spec.partition(":")
    for name, raw in models.items():
        if isinstance(raw, Mapping) and raw.get("provider") == provider and \
                raw.get("model", name) == model:
            models[name] = {**raw, "base_url": url}
    if models:
        result["models"] = models
    providers = settings.get("providers")
    providers = dict(providers) if isinstance(providers, Mapping) else {}
    current = providers.get(provider)
    providers[provider] = {**(current if isinstance(current, Mapping) else {}), "base_url": url}
    result["providers"] = providers
    return result


# -------------------------------------------------------------------------------- credentials


def credentials(entry: ModelEntry, environ: Mapping[str, str] | None = None) -> Credential:
    """Where ``entry``'s key comes from: ``api_key`` in its setting, else the environment
    variable ``api_key_env`` (default per provider, see ``DEFAULT_API_KEY_ENV``)."""
    environ = os.environ if environ is None else environ
    if entry.provider in NO_KEY_PROVIDERS:
        return Credential(None, "no API key needed", required=False)
    if entry.api_key is not None:
        return Credential(entry.api_key,
                          entry.api_key_source or f"setting models.{entry.name}.api_key",
                          bearer=entry.api_key_bearer)
    variable = entry.api_key_env or DEFAULT_API_KEY_ENV.get(entry.provider)
    if variable:
        token = AUTH_TOKEN_ENV.get(entry.provider) if entry.api_key_env is None else None
        if not environ.get(variable) and token and environ.get(token):
            return Credential(environ[token], f"environment variable {token}", bearer=True)
        # a server on this machine (a local model, a proxy) often needs no key: none is sent
        return Credential(environ.get(variable) or None, f"environment variable {variable}",
                          required=not is_loopback(entry.base_url))
    return Credential(None, f"no API key configured (set models.{entry.name}.api_key_env to "
                            "the environment variable holding it)", required=False)


def is_loopback(url: str | None) -> bool:
    """Whether ``url`` points at this machine (localhost, 127.0.0.0/8, ::1)."""
    if not url:
        return False
    import ipaddress
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def has_credentials(entry: ModelEntry, environ: Mapping[str, str] | None = None) -> bool:
    """True when the entry can be used: its key is present, or it needs none."""
    credential = credentials(entry, environ)
    return credential.key is not None or not credential.required


def cost(usage: Usage, price: Price | None) -> float | None:
    """USD for ``usage``; None (unpriced) when a component that has tokens has no price. A
    price is never guessed."""
    total = 0.0
    for tokens, rate in (
        (usage.input_tokens, price.input if price else None),
        (usage.output_tokens, price.output if price else None),
        (usage.cache_read_tokens, price.cache_read if price else None),
        (usage.cache_write_tokens, price.cache_write if price else None),
    ):
        if not tokens:
            continue
        if rate is None:
            return None
        total += tokens * rate / 1_000_000
    return total


# ---------------------------------------------------------------------------------- validation


def _models(settings: Mapping[str, Any]) -> Mapping[str, Any]:
    models = settings.get("models", {})
    if models is None:
        return {}
    if not isinstance(models, Mapping):
        raise CatalogError("models", "must be an object mapping model names to entries, got "
                                     f"{_kind(models)}")
    return models


def _provider_defaults(provider: str, settings: Mapping[str, Any]) -> Mapping[str, Any]:
    providers = settings.get("providers", {}) or {}
    if not isinstance(providers, Mapping):
        raise CatalogError("providers", "must be an object mapping provider names to "
                                        f"defaults, got {_kind(providers)}")
    raw = providers.get(provider, {}) or {}
    where = f"providers.{provider}"
    if not isinstance(raw, Mapping):
        raise CatalogError(where, f"must be an object, got {_kind(raw)}")
    _no_unknown(where, raw, PROVIDER_FIELDS)
    for name in ("base_url", "api_key_env"):
        if name in raw:
            _check_str(f"{where}.{name}", raw[name], url=name == "base_url")
    if "headers" in raw:
        _check_headers(f"{where}.headers", raw["headers"])
    return raw


def _entry(name: str, raw: Any, settings: Mapping[str, Any]) -> ModelEntry:
    where = f"models.{name}"
    if not isinstance(raw, Mapping):
        raise CatalogError(where, f"must be an object like {{\"provider\": \"openai\", "
                                  f"\"model\": \"...\"}}, got {_kind(raw)}")
    _no_unknown(where, raw, ENTRY_FIELDS)
    if "provider" not in raw:
        raise CatalogError(f"{where}.provider", "is missing: name the wire format, for "
                                                "example \"openai\" or \"anthropic\"")
    provider = _check_str(f"{where}.provider", raw["provider"])
    defaults = _provider_defaults(provider, settings)
    values: dict[str, Any] = {"name": name, "provider": provider,
                              "model": _check_str(f"{where}.model", raw.get("model", name))}
    for field in ("base_url", "api_key_env"):
        value = raw[field] if field in raw else defaults.get(field)
        if value is not None:
            values[field] = _check_str(f"{where}.{field}", value, url=field == "base_url")
    if raw.get("api_key") is not None:
        if not isinstance(raw["api_key"], str) or not raw["api_key"]:  # never echo the value
            raise CatalogError(f"{where}.api_key", f"must be a non-empty string, got "
                                                   f"{_kind(raw['api_key'])}")
        values["api_key"] = raw["api_key"]
    for field in ("context_window", "max_output"):
        value = raw.get(field)
        if value is not None:
            if not _is_int(value) or value < 1:
                raise CatalogError(f"{where}.{field}", f"must be a whole number of tokens >= "
                                                       f"1, got {value!r}")
            values[field] = value
    if "reasoning" in raw:
        if not isinstance(raw["reasoning"], bool):
            raise CatalogError(f"{where}.reasoning", f"must be true or false, got "
                                                     f"{raw['reasoning']!r}")
        values["reasoning"] = raw["reasoning"]
    if raw.get("price") is not None:
        values["price"] = _price(f"{where}.price", raw["price"])
    if raw.get("api") is not None:
        values["api"] = _api(f"{where}.api", provider, raw["api"])
    headers = dict(_check_headers(f"{where}.headers", defaults.get("headers", {})))
    headers.update(_check_headers(f"{where}.headers", raw.get("headers", {})))
    values["headers"] = headers
    return ModelEntry(**values)


def _price(where: str, raw: Any) -> Price:
    if not isinstance(raw, Mapping):
        raise CatalogError(where, f"must be an object with {', '.join(PRICE_FIELDS)} (USD per "
                                  f"million tokens), got {_kind(raw)}")
    _no_unknown(where, raw, frozenset(PRICE_FIELDS))
    values = {}
    for field in PRICE_FIELDS:
        value = raw.get(field)
        if value is not None and (not is_number(value) or value < 0):
            raise CatalogError(f"{where}.{field}", f"must be a number >= 0 (USD per million "
                                                   f"tokens) or null, got {value!r}")
        values[field] = None if value is None else float(value)
    return Price(**values)


def _api(where: str, provider: str, value: Any) -> str:
    apis = APIS.get(provider)
    if apis is None:
        raise CatalogError(where, f"is only for providers with several APIs "
                                  f"({', '.join(sorted(APIS))}); provider {provider!r} has one")
    if value not in apis:
        raise CatalogError(where, f"must be one of {', '.join(map(repr, sorted(apis)))} for "
                                  f"provider {provider!r}, got {value!r}")
    return str(value)


def _check_headers(where: str, raw: Any) -> Mapping[str, str]:
    if not isinstance(raw, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise CatalogError(where, "must be an object of string header names to string values")
    return raw


def _check_str(where: str, value: Any, *, url: bool = False) -> str:
    if not isinstance(value, str) or not value:
        raise CatalogError(where, f"must be a non-empty string, got {value!r}")
    if url and not value.startswith(("http://", "https://")):
        raise CatalogError(where, f"must start with http:// or https://, got {value!r}")
    return value


def _no_unknown(where: str, raw: Mapping[str, Any], known: frozenset[str]) -> None:
    unknown = sorted(str(k) for k in set(raw) - known)
    if unknown:
        raise CatalogError(f"{where}.{unknown[0]}", f"is not a known field; known fields: "
                                                     f"{', '.join(sorted(known))}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
