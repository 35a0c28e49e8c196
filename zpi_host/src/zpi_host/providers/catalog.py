"""The model catalog: which models exist, how to reach them, what they cost, where the key is.

The built-in catalog (``builtin_catalog.py``: current Anthropic and OpenAI models, presets of
OpenAI-compatible services) under the merged ``settings.json`` (``models``, ``providers``,
``requests``; see docs/models.md): a settings entry adds a model or overrides any field of a
built-in one of the same name. A bad entry is an error naming the setting
(``models.<name>.<field>``) and what to write instead; it is never skipped silently. API keys
are kept out of every ``repr`` and message.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from typing import Any

import attrs

from ..errors import UsageError, ZpiError, docs_url
from ..settings.schema import is_number
from ..support.attrs_methods import FrozenFieldsEq
from .messages import Usage
from .reasoning import KINDS, kind_for

__all__ = [
    "DEFAULT_API_KEY_ENV", "DEFAULT_BASE_URL", "NO_KEY_PROVIDERS", "REASONING_KINDS",
    "CatalogError", "Credential", "ModelEntry", "Price", "RequestPolicy", "cost", "credentials",
    "default_model", "has_credentials", "list_models", "resolve_model", "with_base_url",
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
                          "aliases", "tools", "vision", "prompt_caching", "price_date",
                          "price_source", "api"})
#: how a model reasons: Anthropic's ``thinking`` budget, its adaptive thinking (effort), or
#: OpenAI's ``reasoning_effort``; ``true`` in settings means the form its id takes
#: (:func:`.reasoning.kind_for`)
REASONING_KINDS = KINDS
CAPABILITY_FIELDS = ("tools", "vision", "prompt_caching")
#: a dated snapshot id (``claude-sonnet-4-5-20250929``, ``gpt-4.1-2025-04-14``)
DATED_ID = re.compile(r"^(?P<base>.+?)-(?:\d{8}|\d{4}-\d{2}-\d{2})$")
#: provider -> the provider whose catalog entries (prices, limits) it shares
SAME_MODELS = {"openai-responses": "openai"}
#: bare ids whose provider is known by their prefix
ID_PREFIXES = (("claude-", "anthropic"), ("gpt-", "openai"), ("chatgpt-", "openai"),
               ("o1", "openai"), ("o3", "openai"), ("o4", "openai"))
PROVIDER_FIELDS = frozenset({"base_url", "api_key_env", "headers"})
SERVICE_FIELDS = frozenset({"provider", "base_url", "api_key_env"})
PRICE_FIELDS = ("input", "output", "cache_read", "cache_write")


class CatalogError(ZpiError):
    """A ``models``, ``providers`` or ``requests`` setting that cannot be used; ``setting`` is
    its dotted path."""

    def __init__(self, setting: str, problem: str) -> None:
        super().__init__(f"settings: {setting} {problem} (fix it in settings.json; see "
                         f"{docs_url('user-guide', 'models-and-credentials')})")
        self.setting = setting


@attrs.frozen(repr=False, eq=False, slots=False)
class Price(FrozenFieldsEq):
    """USD per million tokens; ``None`` = unknown (the cost is then reported as unpriced).
    ``long_context``: the rates of every token of a request whose prompt (input and cache
    tokens) exceeds ``long_context_above`` tokens, as Anthropic and Google bill long prompts."""

    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None
    long_context: Price | None = None
    long_context_above: int | None = None

    def known(self) -> bool:
        """Input and output are priced: a budget can be kept."""
        return self.input is not None and self.output is not None


@attrs.frozen(repr=False, eq=False, slots=False)
class ModelEntry(FrozenFieldsEq):
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
    #: one of REASONING_KINDS, None: the model does not reason
    reasoning: str | None = None
    price: Price | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)
    aliases: tuple[str, ...] = ()
    tools: bool = True
    vision: bool = False
    prompt_caching: bool = False
    #: the day the price was taken, and from where (the built-in catalog's source)
    price_date: str | None = None
    price_source: str | None = None
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


@attrs.frozen(repr=False, eq=False, slots=False)
class Credential(FrozenFieldsEq):
    """The key for one entry (``None`` when missing) and a human description of where it is
    (or would be) read from. ``required`` is False for providers that need no key."""

    key: str | None = attrs.field(repr=False)
    source: str
    required: bool = True
    #: the key is a bearer token (``Authorization: Bearer``), not the provider's key header
    bearer: bool = False


@attrs.frozen(repr=False, eq=False, slots=False)
class RequestPolicy(FrozenFieldsEq):
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
    """A catalog name or alias; ``PROVIDER:MODEL`` or ``SERVICE:MODEL`` (the model part may
    contain colons): the catalog entry with that provider and model if there is one, else a
    bare entry (no price); a bare id of a known provider (``claude-sonnet-4-5``, its dated
    form ``claude-sonnet-4-5-20250929``, ``gpt-4.1``)."""
    models = _models(settings)
    if spec in models:
        return _entry(spec, models[spec], settings)
    entries = list_models(settings)
    for entry in entries:
        if spec in entry.aliases:
            return entry
    provider, sep, model = spec.partition(":")
    if sep and provider:
        service = _services(settings).get(provider)
        if service is not None:
            return _bare(spec, service["provider"], model, settings, service, entries)
        return _bare(spec, provider, model, settings, {}, entries)
    if not sep:
        found = _by_id(spec, entries)
        if found is not None:
            return found
        for prefix, owner in ID_PREFIXES:
            if spec.startswith(prefix):
                return _bare(spec, owner, spec, settings, {}, entries)
    raise UsageError(_unknown_model(spec, entries))


def _by_id(model: str, entries: list[ModelEntry], provider: str | None = None,
           ) -> ModelEntry | None:
    """The entry sending ``model`` (or, for a dated id, its undated base: the entry then
    sends the dated id, at the base's prices and limits)."""
    dated = DATED_ID.match(model)
    for wanted in (model, dated.group("base") if dated else None):
        for entry in entries:
            if wanted and entry.model == wanted and provider in (None, entry.provider):
                return entry if wanted == model else attrs.evolve(entry, model=model)
    return None


def _bare(spec: str, provider: str, model: str, settings: Mapping[str, Any],
          service: Mapping[str, Any], entries: list[ModelEntry]) -> ModelEntry:
    base_url = service.get("base_url")
    # the catalog's entry for it; for a service, one that talks to that service
    candidates = [e for e in entries if e.base_url == base_url] if service else entries
    found = _by_id(model, candidates, provider)
    if found is None and provider in SAME_MODELS:  # the same models through another API
        found = _by_id(model, candidates, SAME_MODELS[provider])
        if found is not None:
            return attrs.evolve(found, name=spec, provider=provider)
    if found is not None:
        return found
    defaults = _provider_defaults(provider, settings)
    return ModelEntry(name=spec, provider=provider, model=model,
                      base_url=base_url or defaults.get("base_url"),
                      api_key_env=service.get("api_key_env") or defaults.get("api_key_env"),
                      headers=dict(defaults.get("headers", {})))


def _unknown_model(spec: str, entries: list[ModelEntry]) -> str:
    names = sorted({n for e in entries for n in (e.name, e.model, *e.aliases)})
    close = difflib.get_close_matches(spec, names, n=3, cutoff=0.5)
    prefixes = ", ".join(f"{p}…: {o}" for p, o in ID_PREFIXES)
    hint = f" Closest names: {', '.join(close)}." if close else ""
    return (f"model {spec!r} is not in the model catalog (tried the names, aliases and ids of "
            f"settings \"models\" and the built-in catalog, and the providers known by an id's "
            f"prefix: {prefixes}).{hint} List them with `zpi-host models`; any other model "
            "must look like PROVIDER:MODEL, for example openai:gpt-4o, "
            "anthropic:claude-sonnet-4-5, deepseek:deepseek-chat or scripted:PATH")


def default_model(settings: Mapping[str, Any], environ: Mapping[str, str],
                  ) -> tuple[ModelEntry | None, list[str]]:
    """The model used when none is chosen: the first settings entry with credentials, else
    the built-in default of the first provider (anthropic, then openai) whose key is set.
    Also returns, for a message, what each candidate lacks."""
    missing: list[str] = []
    for name in _settings_models(settings):
        entry = resolve_model(name, settings)
        credential = credentials(entry, environ)
        if credential.key is not None or not credential.required:
            return entry, missing
        missing.append(f"{entry.name} (set {credential.source})")
    for provider, name in _builtin_defaults().items():
        entry = resolve_model(name, settings)
        credential = credentials(entry, environ)
        if credential.key is not None:
            return entry, missing
        missing.append(f"{provider}'s default {name} (set {credential.source})")
    return None, missing


def list_models(settings: Mapping[str, Any]) -> list[ModelEntry]:
    """Every catalog entry: the settings' in their order, then the built-in ones; the first
    bad one raises CatalogError."""
    return [_entry(name, raw, settings) for name, raw in _models(settings).items()]


def with_base_url(settings: Mapping[str, Any], spec: str, url: str) -> dict[str, Any]:
    """A copy of ``settings`` in which ``spec`` resolves to ``url`` (``--base-url``): the
    catalog entry it resolves to is changed, else an entry for ``spec`` is added."""
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--base-url {url!r} must start with http:// or https://")
    result = dict(settings)
    models = dict(_settings_models(settings))
    entry = resolve_model(spec, settings)  # a name, an alias, a dated id, PROVIDER:MODEL ...
    if entry.name in _models(settings):  # a settings entry or a built-in one: override its URL
        current = models.get(entry.name)
        models[entry.name] = {**(current if isinstance(current, Mapping) else {}),
                              "base_url": url}
    else:  # no catalog entry: one for this run, with what the spec resolved to
        models[spec] = {"provider": entry.provider, "model": entry.model, "base_url": url,
                        **({"api_key_env": entry.api_key_env} if entry.api_key_env else {})}
    result["models"] = models
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
    price is never guessed. A prompt longer than ``price.long_context_above`` costs the
    long-context rates (where they are given) on every token."""
    rates = price
    prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    if price is not None and price.long_context is not None and \
            price.long_context_above is not None and prompt > price.long_context_above:
        long = price.long_context
        rates = Price(**{field: getattr(long, field) if getattr(long, field) is not None
                         else getattr(price, field) for field in PRICE_FIELDS})
    total = 0.0
    for tokens, rate in (
        (usage.input_tokens, rates.input if rates else None),
        (usage.output_tokens, rates.output if rates else None),
        (usage.cache_read_tokens, rates.cache_read if rates else None),
        (usage.cache_write_tokens, rates.cache_write if rates else None),
    ):
        if not tokens:
            continue
        if rate is None:
            return None
        total += tokens * rate / 1_000_000
    return total


# ---------------------------------------------------------------------------------- validation


def _settings_models(settings: Mapping[str, Any]) -> Mapping[str, Any]:
    models = settings.get("models", {})
    if models is None:
        return {}
    if not isinstance(models, Mapping):
        raise CatalogError("models", "must be an object mapping model names to entries, got "
                                     f"{_kind(models)}")
    return models


def _models(settings: Mapping[str, Any]) -> Mapping[str, Any]:
    """Settings entries (in their order; one named like a built-in entry overrides its
    fields, ``price`` field by field), then the other built-in entries."""
    from .builtin_catalog import builtin_models

    builtin = builtin_models()
    merged: dict[str, Any] = {}
    for name, raw in _settings_models(settings).items():
        base = builtin.get(name)
        if isinstance(base, Mapping) and isinstance(raw, Mapping):
            raw = {**base, **raw}
            if isinstance(base.get("price"), Mapping) and isinstance(raw.get("price"), Mapping):
                raw["price"] = {**base["price"], **raw["price"]}
        merged[name] = raw
    for name, raw in builtin.items():
        merged.setdefault(name, raw)
    return merged


def _services(settings: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    """The built-in service presets, then settings ``services`` (each field over the preset
    of that name; a new name is a new ``SERVICE:MODEL`` prefix)."""
    from .builtin_catalog import builtin_services

    given = settings.get("services") or {}
    if not isinstance(given, Mapping):
        raise CatalogError("services", f"must be an object mapping service names to presets, "
                                       f"got {_kind(given)}")
    merged = dict(builtin_services())
    for name, raw in given.items():
        where = f"services.{name}"
        if not isinstance(raw, Mapping):
            raise CatalogError(where, f"must be an object, got {_kind(raw)}")
        _no_unknown(where, raw, SERVICE_FIELDS)
        entry = {"provider": "openai", "api_key_env": None, **merged.get(name, {}), **raw}
        _check_str(f"{where}.provider", entry["provider"])
        _check_str(f"{where}.base_url", entry.get("base_url"), url=True)
        if entry["api_key_env"] is not None:
            _check_str(f"{where}.api_key_env", entry["api_key_env"])
        merged[name] = entry
    return merged


def _builtin_defaults() -> Mapping[str, str]:
    from .builtin_catalog import builtin_defaults

    return builtin_defaults()


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
    reasoning = raw.get("reasoning")
    if reasoning is True:
        reasoning = kind_for(provider, values["model"])
    if reasoning not in (None, False, *REASONING_KINDS):
        raise CatalogError(f"{where}.reasoning", f"must be true, false, null or one of "
                                                 f"{', '.join(REASONING_KINDS)}, got "
                                                 f"{reasoning!r}")
    values["reasoning"] = reasoning or None
    for field in CAPABILITY_FIELDS:
        if field in raw:
            if not isinstance(raw[field], bool):
                raise CatalogError(f"{where}.{field}", f"must be true or false, got "
                                                       f"{raw[field]!r}")
            values[field] = raw[field]
    aliases = raw.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a for a in aliases):
        raise CatalogError(f"{where}.aliases", f"must be a list of names, got {aliases!r}")
    values["aliases"] = tuple(aliases)
    for field in ("price_date", "price_source"):
        if raw.get(field) is not None:
            values[field] = _check_str(f"{where}.{field}", raw[field])
    if raw.get("price") is not None:
        values["price"] = _price(f"{where}.price", raw["price"])
    if raw.get("api") is not None:
        values["api"] = _api(f"{where}.api", provider, raw["api"])
    headers = dict(_check_headers(f"{where}.headers", defaults.get("headers", {})))
    headers.update(_check_headers(f"{where}.headers", raw.get("headers", {})))
    values["headers"] = headers
    return ModelEntry(**values)


def _price(where: str, raw: Any, *, nested: bool = False) -> Price:
    if not isinstance(raw, Mapping):
        raise CatalogError(where, f"must be an object with {', '.join(PRICE_FIELDS)} (USD per "
                                  f"million tokens), got {_kind(raw)}")
    known = {*PRICE_FIELDS, "above"} if nested else {*PRICE_FIELDS, "long_context"}
    _no_unknown(where, raw, frozenset(known))
    values: dict[str, Any] = {}
    for field in PRICE_FIELDS:
        value = raw.get(field)
        if value is not None and (not is_number(value) or value < 0):
            raise CatalogError(f"{where}.{field}", f"must be a number >= 0 (USD per million "
                                                   f"tokens) or null, got {value!r}")
        values[field] = None if value is None else float(value)
    if nested:
        return Price(**values)
    if raw.get("long_context") is not None:
        long = raw["long_context"]
        above = long.get("above") if isinstance(long, Mapping) else None
        if not isinstance(above, int) or isinstance(above, bool) or above < 1:
            raise CatalogError(f"{where}.long_context.above", f"must be the whole number of "
                                                              f"prompt tokens above which the "
                                                              f"long-context rates apply, got "
                                                              f"{above!r}")
        values["long_context"] = _price(f"{where}.long_context", long, nested=True)
        values["long_context_above"] = above
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
