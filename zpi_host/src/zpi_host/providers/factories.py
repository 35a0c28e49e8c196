"""The providers a session can use: the factories plugins register (``zpi_register_providers``),
checked once, and a catalog entry completed from the environment (API key, base URL) before
a factory makes a provider of it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import AssemblyError

if TYPE_CHECKING:
    from ..contract.plugins import PluginHost
    from .base import ProviderFactory
    from .catalog import ModelEntry

__all__ = ["BASE_URL_ENV", "collect_providers", "from_environment"]


async def collect_providers(
    host: PluginHost, settings: Mapping[str, Any]
) -> dict[str, ProviderFactory]:
    factories: dict[str, ProviderFactory] = {}
    owners: dict[str, str] = {}
    for answer in await host.hooks.register_providers(settings):
        name = getattr(answer.value, "name", None)
        if not isinstance(name, str) or not callable(getattr(answer.value, "create", None)):
            raise AssemblyError(f"plugin {answer.plugin!r} registered {answer.value!r}, which is "
                                "not a provider factory (needs .name and .create)")
        if name in factories:
            raise AssemblyError(f"provider {name!r} is registered by both {owners[name]!r} and "
                                f"{answer.plugin!r}; block one with -p no:NAME")
        factories[name], owners[name] = answer.value, answer.plugin
    return factories


#: provider -> the variable naming its base URL, as the official SDKs read it
BASE_URL_ENV: Mapping[str, str] = {"openai": "OPENAI_BASE_URL",
                                   "openai-responses": "OPENAI_BASE_URL",
                                   "anthropic": "ANTHROPIC_BASE_URL"}


def from_environment(entry: ModelEntry, environ: Mapping[str, str]) -> ModelEntry:
    """``entry`` with what ``environ`` (the ``environ`` option, else the process's) supplies:
    the API key from its variable (for Anthropic, else a bearer token from
    ``ANTHROPIC_AUTH_TOKEN``), and the base URL from ``OPENAI_BASE_URL`` /
    ``ANTHROPIC_BASE_URL`` (``openai-responses`` reads OpenAI's) when no setting gives one."""
    import attrs

    from .catalog import credentials

    changes: dict[str, Any] = {}
    if entry.api_key is None:
        credential = credentials(entry, environ)
        if credential.key is not None:
            changes.update(api_key=credential.key, api_key_source=credential.source,
                           api_key_bearer=credential.bearer)
    variable = BASE_URL_ENV.get(entry.provider)
    if entry.base_url is None and variable and environ.get(variable):
        changes["base_url"] = environ[variable]
    return attrs.evolve(entry, **changes) if changes else entry
