"""The host's provider keys: which variables hold them, their values kept out of everything the
host prints or records, and the variables kept out of the commands it starts.

A key is the value of a *key variable*: ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY`` and every
``api_key_env`` of the model catalog (``models.<name>.api_key_env``, ``providers.<name>.
api_key_env``), plus any ``models.<name>.api_key`` written in the settings. A session builds
one :class:`Redactor` from them; it is applied where text leaves the host: provider errors,
the events a session emits, warnings, transcript records, the run's result and the CLI's error
messages. Values shorter than ``MIN_SECRET_LENGTH`` are not treated as keys (replacing ``"1"``
everywhere would garble output and protect nothing).

Commands the host starts for a session (bash, Claude hook commands) do not get the key
variables, unless the setting ``secrets.pass_to_commands`` says so: ``true`` (all of them) or a
list of variable names. Stdlib and attrs only: cheap to import.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from .attrs_methods import FrozenFieldsEq

__all__ = ["MIN_SECRET_LENGTH", "REDACTED", "Redactor", "SecretsSettingError",
           "hidden_variables", "key_variables"]

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
#: Where a provider looks for its key when the catalog names no variable (as in the catalog).
DEFAULT_KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


def _entries(settings: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    table = settings.get(key)
    if not isinstance(table, Mapping):
        return []
    return [entry for entry in table.values() if isinstance(entry, Mapping)]


def mcp_secrets(settings: Mapping[str, Any], environ: Mapping[str, str]) -> list[str]:
    """The ``env`` and ``headers`` values of the session's MCP servers (as written, and the
    variables their ``${VAR}`` names hold): tokens the user gave a server, never shown."""
    import re

    found: list[str] = []
    gathered = settings.get("mcp_sources")  # settings.mcp_sources.MCP_SOURCES
    sources = gathered.get("sources") if isinstance(gathered, Mapping) else None
    for source in sources if isinstance(sources, list) else ():
        servers = source.get("servers") if isinstance(source, Mapping) else None
        for entry in servers.values() if isinstance(servers, Mapping) else ():
            for key in ("env", "headers"):
                table = entry.get(key) if isinstance(entry, Mapping) else None
                for value in table.values() if isinstance(table, Mapping) else ():
                    if not isinstance(value, str):
                        continue
                    found.append(value)
                    found += [environ.get(name, "") for name in
                              re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", value)]
                    # a header "Bearer ${TOKEN}" is also hidden whole, once expanded
                    found.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}",
                                        lambda m: environ.get(m.group(1), m.group(2) or ""),
                                        value))
    return found


def key_variables(settings: Mapping[str, Any] | None) -> frozenset[str]:
    """The environment variables that hold provider keys for these settings."""
    settings = settings or {}
    names = set(DEFAULT_KEY_VARIABLES)
    for entry in _entries(settings, "models") + _entries(settings, "providers"):
        name = entry.get("api_key_env")
        if isinstance(name, str) and name:
            names.add(name)
    return frozenset(names)


class SecretsSettingError(ValueError):
    """``secrets.pass_to_commands`` has a value that is not true/false or a list of names."""


def hidden_variables(settings: Mapping[str, Any] | None) -> frozenset[str]:
    """The key variables to remove from the environment of commands (bash, hook commands):
    all of them unless ``secrets.pass_to_commands`` passes them (``true``) or some of them
    (a list of variable names)."""
    settings = settings or {}
    section = settings.get("secrets")
    passing: Any = section.get("pass_to_commands", False) if isinstance(section, Mapping) \
        else False
    if passing is True:
        return frozenset()
    if passing is False or passing is None:
        return key_variables(settings)
    if isinstance(passing, list) and all(isinstance(n, str) for n in passing):
        return key_variables(settings) - set(passing)
    raise SecretsSettingError(
        f"setting secrets.pass_to_commands must be true, false or a list of variable names, "
        f"got {passing!r}")


def without(environ: Mapping[str, str], hidden: Iterable[str]) -> dict[str, str]:
    """A copy of ``environ`` without the ``hidden`` variables."""
    hidden = frozenset(hidden)
    return {k: v for k, v in environ.items() if k not in hidden}


@attrs.frozen(repr=False, eq=False, slots=False)
class Redactor(FrozenFieldsEq):
    """Replaces every known key in text (and in events, messages, records: any structure of
    attrs classes, mappings, sequences and strings) with ``[redacted]``."""

    secrets: tuple[str, ...] = attrs.field(default=(), converter=lambda values: tuple(sorted(
        {v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_LENGTH},
        key=lambda v: (-len(v), v))))

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None,
                      environ: Mapping[str, str]) -> Redactor:
        """The keys the host may use with these settings and this environment."""
        settings = settings or {}
        values = [environ.get(name) for name in key_variables(settings)]
        values += [entry.get("api_key") for entry in _entries(settings, "models")]
        values += mcp_secrets(settings, environ)
        return cls([v for v in values if isinstance(v, str)])

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def text(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def value(self, value: Any) -> Any:
        """``value`` with every key in its strings replaced; the same object when it holds
        none (cheap to call on every event)."""
        if not self.secrets:
            return value
        return self._walk(value)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bytes):
            return self.text(value.decode("utf-8", "surrogateescape")).encode(
                "utf-8", "surrogateescape") if any(s.encode() in value for s in self.secrets) \
                else value
        if isinstance(value, Mapping):
            changed = {k: self._walk(v) for k, v in value.items()}
            if any(changed[k] is not v for k, v in value.items()):
                return type(value)(changed) if isinstance(value, dict) else changed
            return value
        if isinstance(value, list | tuple):
            items = [self._walk(v) for v in value]
            if any(a is not b for a, b in zip(items, value, strict=True)):
                return type(value)(items) if type(value) in (list, tuple) else items
            return value
        if attrs.has(type(value)):
            changes = {}
            for field in attrs.fields(type(value)):
                if not field.init:
                    continue
                old = getattr(value, field.name)
                new = self._walk(old)
                if new is not old:
                    changes[field.alias or field.name] = new
            return attrs.evolve(value, **changes) if changes else value
        return value
