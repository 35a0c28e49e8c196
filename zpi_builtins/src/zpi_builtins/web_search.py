"""Web search for ``web_search``: the SearXNG-style backend ``builtins:web`` ships, and the
result text the model sees.

The backend asks ``<searxng_url>/search?q=<query>&format=json`` (SearXNG's JSON API; the
instance must have the ``json`` format enabled in its ``search.formats``) and reads
``results[].title/url/content``. The URL is configured by the user (a project's settings
may not set it: ``zpi_host.session.project_guards.USER_ONLY_SETTINGS``), so it is not held to
``web_fetch``'s public-address rule: a SearXNG on the same machine is the usual set-up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import attrs

from zpi_host.session.ports import SearchBackendError, SearchHit
from zpi_host.support.attrs_methods import FrozenFieldsEq

NOT_CONFIGURED = (
    "No web search backend is configured, so web_search cannot search. To enable it, set "
    "plugins.builtins.web.searxng_url to the base URL of a SearXNG instance with the JSON "
    "format enabled (for example \"http://localhost:8888\") in your settings, or install a "
    "plugin that registers a search backend (hook zpi_register_search_backends). Until then, "
    "answer from what you know or fetch a known URL with web_fetch.")


@attrs.frozen(repr=False, eq=False, slots=False)
class SearchArgs(FrozenFieldsEq):
    """Validated ``web_search`` arguments (web.parse_search)."""

    query: str
    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()


@attrs.frozen(repr=False, eq=False, slots=False)
class SearxngBackend(FrozenFieldsEq):
    """A SearXNG-style JSON search API at ``base_url``."""

    base_url: str
    timeout_seconds: float = 30.0
    name: str = "searxng"

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        import httpx

        url = self.base_url.rstrip("/") + "/search"
        try:
            async with httpx.AsyncClient(timeout=self.timeout_seconds, trust_env=False) as c:
                response = await c.get(url, params={"q": query, "format": "json"},
                                       headers={"Accept": "application/json"})
        except httpx.HTTPError as exc:
            raise SearchBackendError(f"search backend searxng ({url}) could not be reached: "
                                     f"{type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            hint = (" (is the json format enabled in the instance's search.formats?)"
                    if response.status_code == 403 else "")
            raise SearchBackendError(f"search backend searxng ({url}) answered HTTP "
                                     f"{response.status_code}{hint}")
        try:
            results = response.json().get("results")
        except (ValueError, AttributeError):
            results = None
        if not isinstance(results, list):
            raise SearchBackendError(f"search backend searxng ({url}) did not answer with a "
                                     "JSON object holding a 'results' list")
        hits = [_hit(item) for item in results]
        return [hit for hit in hits if hit is not None][:limit]


def _hit(item: Any) -> SearchHit | None:
    if not isinstance(item, dict) or not isinstance(item.get("url"), str):
        return None
    title, snippet = item.get("title"), item.get("content")
    title = title if isinstance(title, str) else item["url"]
    snippet = snippet if isinstance(snippet, str) else ""
    return SearchHit(" ".join(title.split()), item["url"], " ".join(snippet.split()))


def domain_of(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower().rstrip(".")
    except ValueError:
        return ""


def in_domains(url: str, domains: Sequence[str]) -> bool:
    """Whether the URL's host is one of ``domains`` or below one (``docs.python.org`` is in
    ``python.org``)."""
    host = domain_of(url)
    return any(host == d or host.endswith("." + d)
               for d in (d.lower().strip(".") for d in domains) if d)


def filter_hits(hits: Sequence[SearchHit], allowed: Sequence[str],
                blocked: Sequence[str]) -> list[SearchHit]:
    return [h for h in hits if (not allowed or in_domains(h.url, allowed))
            and not in_domains(h.url, blocked)]


def format_hits(query: str, backend: str, hits: Sequence[SearchHit]) -> str:
    if not hits:
        return f"No results for {query!r} (search backend {backend})."
    lines = [f"Results for {query!r} (search backend {backend}):", ""]
    for i, hit in enumerate(hits, 1):
        lines.append(f"{i}. [{hit.title}]({hit.url})")
        if hit.snippet:
            lines.append(f"   {hit.snippet}")
    return "\n".join(lines)
