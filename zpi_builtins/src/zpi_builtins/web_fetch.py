"""Fetching one URL for ``web_fetch``: limits, redirects, content types, HTML to Markdown.

Every hop (the URL, then each redirect) is checked by the :class:`~.web_guard.AddressGuard`
and connected to the address checked. Redirects within the same host (``www.`` aside) are
followed up to ``max_redirects``; a redirect to another host is not followed but reported,
so that the model's next call for it goes through the permission rules (which name domains)
like any other. The body is read up to ``max_bytes``; the whole fetch, redirects included,
has ``timeout_seconds``. A compressed body is inflated piece by piece against ``max_bytes``
(:mod:`.web_body`), never whole. HTML becomes Markdown with markdownify; other text types are
kept as they are; anything else is refused.
"""

from __future__ import annotations

import math
from urllib.parse import urljoin, urlsplit

import anyio
import attrs
import httpcore
import httpx

from zpi_host.errors import ZpiError
from zpi_host.support.attrs_methods import FrozenFieldsEq

from .web_body import ACCEPTED, BodyDecodeError, BodyDecoder
from .web_guard import AddressGuard, PinnedBackend

USER_AGENT = "zpi-host web_fetch (+https://github.com/zpi-host)"
HTML_TYPES = ("text/html", "application/xhtml+xml")
TEXT_TYPES = ("application/json", "application/xml", "application/javascript",
              "application/x-yaml", "application/yaml", "application/toml")
REDIRECTS = (301, 302, 303, 307, 308)
#: elements whose content is never shown on the page
INVISIBLE = ["head", "script", "style", "noscript", "template", "iframe", "svg", "object"]


class FetchError(ZpiError):
    """A fetch that could not be done; the message says what, where and what to do."""


@attrs.frozen(repr=False, eq=False, slots=False)
class FetchLimits(FrozenFieldsEq):
    timeout_seconds: float = 30.0
    max_bytes: int = 5 * 1024 * 1024
    max_redirects: int = 10


@attrs.frozen(repr=False, eq=False, slots=False)
class Page(FrozenFieldsEq):
    """A fetched page: ``text`` is Markdown for HTML, the text itself otherwise."""

    url: str
    status: int
    content_type: str
    text: str
    bytes: int


@attrs.frozen(repr=False, eq=False, slots=False)
class Redirected(FrozenFieldsEq):
    """A redirect to another host, not followed."""

    url: str
    location: str
    status: int


def host_key(host: str) -> str:
    """A host as redirects compare it: lower case, no final dot, no leading ``www.``."""
    host = host.lower().rstrip(".")
    return host[4:] if host.startswith("www.") else host


def split_url(url: str) -> tuple[str, str, int]:
    """Scheme, host and port of an http(s) URL; a :class:`FetchError` otherwise."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise FetchError(f"{url!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise FetchError(f"{url!r}: only http and https URLs can be fetched")
    if not parts.hostname:
        raise FetchError(f"{url!r} has no host")
    if parts.username or parts.password:
        raise FetchError(f"{url!r}: URLs with credentials are not fetched")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)


def media_type(content_type: str) -> str:
    return content_type.split(";")[0].strip().lower()


def is_text(kind: str) -> bool:
    return (kind.startswith("text/") or kind in HTML_TYPES or kind in TEXT_TYPES
            or kind.endswith("+json") or kind.endswith("+xml"))


def decode_text(body: bytes, charset: str | None) -> str:
    """The body as text in the charset the server named, or in UTF-8 when Python has no text
    codec by that name (``rot13``, ``base64`` and ``undefined`` are codecs, but not ones that
    decode text); bytes that do not decode become U+FFFD."""
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except (LookupError, UnicodeError):
        return body.decode("utf-8", errors="replace")


def html_to_markdown(html: str) -> str:
    """Markdown for an HTML page: headings as ``#``, scripts, styles and other invisible
    parts removed, runs of blank lines squeezed. markdownify recurses once per element
    level, so a page nested deeper than Python's recursion limit (a few kilobytes of
    ``<div>``) gives its visible text alone, one line per string."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(INVISIBLE):
        tag.decompose()
    try:
        text = MarkdownConverter(heading_style="ATX").convert_soup(soup)
    except RecursionError:
        text = soup.get_text("\n")
    lines = [line.rstrip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip() + "\n"


class Fetcher:
    """Fetches URLs under one guard and one set of limits."""

    def __init__(self, guard: AddressGuard, limits: FetchLimits) -> None:
        self.guard = guard
        self.limits = limits

    async def fetch(self, url: str) -> Page | Redirected:
        """The page at ``url`` (after same-host redirects), or the redirect to another host;
        raises :class:`FetchError` or :class:`~.web_guard.AddressRefused`."""
        split_url(url)
        try:
            with anyio.fail_after(self.limits.timeout_seconds):
                return await self._fetch(url)
        except TimeoutError:
            raise FetchError(f"fetching {url} took longer than {self.limits.timeout_seconds:g} "
                             "s (setting plugins.builtins.web.timeout_seconds)") from None

    async def _fetch(self, url: str) -> Page | Redirected:
        backend = PinnedBackend()
        transport = httpx.AsyncHTTPTransport(trust_env=False)
        # connections go only to the addresses the guard checked (see web_guard)
        transport._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False), network_backend=backend)
        async with httpx.AsyncClient(transport=transport, trust_env=False,
                                     follow_redirects=False,
                                     timeout=self.limits.timeout_seconds,
                                     headers={"User-Agent": USER_AGENT,
                                              "Accept": "text/html, text/*;q=0.9, */*;q=0.5",
                                              "Accept-Encoding": ACCEPTED}
                                     ) as client:
            first_host = split_url(url)[1]
            current = url
            for _ in range(self.limits.max_redirects + 1):
                _, host, port = split_url(current)
                backend.pins[host] = await self.guard.check(host, port)
                try:
                    async with client.stream("GET", current) as response:
                        if response.status_code in REDIRECTS and "location" in response.headers:
                            location = urljoin(current, response.headers["location"])
                            target = split_url(location)[1]
                            if host_key(target) != host_key(first_host):
                                await self.guard.check(target, split_url(location)[2])
                                return Redirected(current, location, response.status_code)
                            current = location
                            continue
                        return await self._page(current, response)
                except httpx.HTTPError as exc:
                    raise FetchError(f"fetching {current} failed: {type(exc).__name__}: "
                                     f"{exc}") from None
            raise FetchError(f"{url} redirected more than {self.limits.max_redirects} times "
                             "(setting plugins.builtins.web.max_redirects)")

    async def _page(self, url: str, response: httpx.Response) -> Page:
        content_type = response.headers.get("content-type", "")
        kind = media_type(content_type) or "text/plain"
        if not is_text(kind):
            raise FetchError(f"{url} is {kind}, which web_fetch cannot show (it reads HTML "
                             "and text)")
        limit = self.limits.max_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise FetchError(self._too_big(url, f"{int(declared)} bytes"))
        try:
            decoder = BodyDecoder(response.headers.get("content-encoding", ""))
            body = bytearray()
            # raw bytes, inflated here in bounded pieces (httpx would inflate a chunk whole)
            async for chunk in response.aiter_raw():
                for piece in decoder.feed(chunk):
                    body += piece
                    if len(body) > limit:
                        raise FetchError(self._too_big(url, "more"))
        except BodyDecodeError as exc:
            raise FetchError(f"{url} could not be read: {exc}") from None
        text = decode_text(bytes(body), response.encoding)
        if kind in HTML_TYPES:
            text = html_to_markdown(text)
        return Page(url, response.status_code, kind, text, len(body))

    def _too_big(self, url: str, size: str) -> str:
        mib = self.limits.max_bytes / (1024 * 1024)
        shown = f"{math.floor(mib * 10) / 10:g} MiB" if mib >= 0.1 else \
            f"{self.limits.max_bytes} bytes"
        return (f"{url} is larger than the limit of {shown} ({size}); raise "
                "plugins.builtins.web.max_bytes to fetch it")
