"""builtins:web: web_fetch and web_search against a real HTTP server on 127.0.0.1.

The server is on loopback, so the tests that fetch from it switch on the setting that allows
private addresses (or allow exactly 127.0.0.1/32); the refusals run with it off.
"""

from __future__ import annotations

import gzip
import ipaddress
import json
import tracemalloc
import zlib

import httpcore
import pytest
from helpers.builtins import builtins_settings, scripted_session
from helpers.web_server import web_server

from zpi_builtins.web import parse_fetch, parse_search, rule_subjects
from zpi_builtins.web_fetch import Fetcher, FetchError, FetchLimits, Page, html_to_markdown
from zpi_builtins.web_guard import AddressGuard, AddressRefused, PinnedBackend, why_not_public
from zpi_host import hookimpl
from zpi_host.permissions import PermissionRules
from zpi_host.session.assembly import create_session
from zpi_host.session.ports import SearchHit
from zpi_host.testing import FunctionModel, ScriptedModel
from zpi_host.tools import ToolArgumentError

pytestmark = pytest.mark.anyio

ALLOW_LOOPBACK = {"allow_private_addresses": True}
PAGE = """<html><head><title>T</title><style>p {color: red}</style>
<script>alert("x")</script></head><body>
<h1>Release notes</h1><p>Version <b>2.0</b> adds <a href="/docs">docs</a>.</p>
<ul><li>one</li><li>two</li></ul></body></html>"""


@pytest.fixture
def server():
    with web_server() as running:
        yield running


def fetch_turns(*calls: dict, answer: str = "done") -> list:
    return [{"tool_calls": [{"name": "web_fetch", "arguments": c} for c in calls]}, answer]


def results(session) -> list[tuple[str, bool]]:
    return [("".join(c.text for c in m.content), m.is_error)
            for m in session.messages if m.role == "tool"]


async def run_fetch(tmp_path, *calls: dict, web: dict | None = None, turns=None, **options):
    settings = builtins_settings(web=web if web is not None else ALLOW_LOOPBACK)
    session = await scripted_session(tmp_path, turns or fetch_turns(*calls),
                                     settings=settings, **options)
    await session.run("read it")
    await session.dispose()
    return results(session)


# ------------------------------------------------------------------------------- fetching


async def test_an_html_page_comes_back_as_markdown(zpi_env, tmp_path, server):
    server.page("/notes", PAGE)
    ((text, error),) = await run_fetch(tmp_path, {"url": server.url("/notes")})
    assert not error
    assert f"{server.url('/notes')} (HTTP 200, text/html" in text
    assert "# Release notes" in text and "**2.0**" in text and "[docs](/docs)" in text
    assert "* one" in text or "- one" in text
    assert "alert" not in text and "color: red" not in text
    assert server.requests[0][2]["User-Agent"].startswith("zpi-host web_fetch")


async def test_text_types_come_as_they_are_and_other_types_are_refused(
        zpi_env, tmp_path, server):
    server.page("/data.json", '{"a": [1, 2]}', "application/json")
    server.page("/readme", "# Title\n\nplain *text*", "text/markdown; charset=utf-8")
    server.page("/logo.png", b"\x89PNG\r\n\x1a\n" + bytes(100), "image/png")
    server.page("/file", bytes(range(256)), "application/octet-stream")
    found = await run_fetch(tmp_path, *({"url": server.url(p)} for p in
                                        ("/data.json", "/readme", "/logo.png", "/file")))
    (json_text, e1), (md_text, e2), (png, e3), (binary, e4) = found
    assert not e1 and json_text.endswith('{"a": [1, 2]}')
    assert not e2 and md_text.endswith("# Title\n\nplain *text*")
    assert e3 and "is image/png, which web_fetch cannot show" in png
    assert e4 and "application/octet-stream" in binary


async def test_a_page_over_max_bytes_is_refused_declared_or_streamed(zpi_env, tmp_path, server):
    server.page("/big", "<p>" + "x" * 5000 + "</p>")
    server.page("/chunked", "<p>" + "y" * 5000 + "</p>", **{"Content-Length": "10"})
    found = await run_fetch(tmp_path, {"url": server.url("/big")},
                            web={**ALLOW_LOOPBACK, "max_bytes": 1000})
    ((text, error),) = found
    assert error and "larger than the limit of 1000 bytes (5007 bytes)" in text
    assert "plugins.builtins.web.max_bytes" in text
    # a server whose Content-Length lies low is cut off by the length, not read past it
    ((small, small_error),) = await run_fetch(tmp_path, {"url": server.url("/chunked")},
                                              web={**ALLOW_LOOPBACK, "max_bytes": 1000})
    assert not small_error and "y" * 7 in small and "y" * 20 not in small


def gzip_stream(size: int) -> bytes:
    """``size`` zero bytes gzipped, made a MiB at a time (the test never holds them whole)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    mib = bytes(1024 * 1024)
    return b"".join(packer.compress(mib) for _ in range(size // len(mib))) + packer.flush()


async def test_compressed_pages_are_inflated_gzip_deflate_and_stacked(zpi_env, tmp_path, server):
    text = "<p>" + "compressed words " * 200 + "</p>"
    server.page("/gz", gzip.compress(text.encode()), **{"Content-Encoding": "gzip"})
    server.page("/zlib", zlib.compress(text.encode()), **{"Content-Encoding": "deflate"})
    raw = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    server.page("/raw", raw.compress(text.encode()) + raw.flush(),
                **{"Content-Encoding": "deflate"})
    server.page("/twice", gzip.compress(zlib.compress(text.encode())),
                **{"Content-Encoding": "deflate, gzip"})
    found = await run_fetch(tmp_path, *({"url": server.url(p)} for p in
                                        ("/gz", "/zlib", "/raw", "/twice")))
    for page, error in found:
        assert not error and page.count("compressed words") == 200
        assert f"{len(text)} bytes)" in page
    assert {r[2]["Accept-Encoding"] for r in server.requests} == {"gzip, deflate"}


async def test_a_decompression_bomb_stops_at_max_bytes_without_inflating_it_whole(server):
    """600 bytes sent as ``gzip, gzip`` inflate to 256 MiB: the body is inflated piece by
    piece and refused at the limit, never held whole (httpx would inflate it in one call)."""
    server.page("/bomb", gzip.compress(gzip_stream(256 * 1024 * 1024), 9), "text/plain",
                **{"Content-Encoding": "gzip, gzip"})
    fetcher = Fetcher(AddressGuard(allow_private=True), FetchLimits(max_bytes=1024 * 1024))
    tracemalloc.start()
    try:
        with pytest.raises(FetchError, match="larger than the limit of 1 MiB"):
            await fetcher.fetch(server.url("/bomb"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024


async def test_a_corrupt_or_unknown_encoding_is_a_clear_error(zpi_env, tmp_path, server):
    server.page("/broken", gzip.compress(b"<p>hello</p>")[:12] + b"garbage!" * 4,
                **{"Content-Encoding": "gzip"})
    server.page("/brotli", b"\x1b\x00\x00", **{"Content-Encoding": "br"})
    (broken, e1), (brotli, e2) = await run_fetch(
        tmp_path, {"url": server.url("/broken")}, {"url": server.url("/brotli")})
    assert e1 and f"{server.url('/broken')} could not be read: its gzip data is corrupt" in broken
    assert e2 and "encoded as 'br' (Content-Encoding: br), which web_fetch cannot decode" in brotli


async def test_a_charset_that_is_not_a_text_encoding_falls_back_to_utf8(
        zpi_env, tmp_path, server):
    """The server names the charset: one Python knows but cannot decode text with (``rot13``,
    ``base64``, ``undefined``, ``idna``) ended the call with Python's own LookupError text;
    the page is read as UTF-8 instead, and a real charset is still used."""
    names = ("rot13", "base64", "undefined", "idna", "latin-1")
    for name in names:
        server.page(f"/{name}", "<p>caf\u00e9 ok</p>".encode("latin-1"),
                    f"text/html; charset={name}")
    found = await run_fetch(tmp_path, *({"url": server.url(f"/{n}")} for n in names))
    *fallback, (latin, latin_error) = found
    for text, error in fallback:
        assert not error and "caf\ufffd ok" in text
    assert not latin_error and "caf\u00e9 ok" in latin


async def test_a_stalled_server_hits_the_time_limit(zpi_env, tmp_path, server):
    server.stall("/slow")
    ((text, error),) = await run_fetch(tmp_path, {"url": server.url("/slow")},
                                       web={**ALLOW_LOOPBACK, "timeout_seconds": 0.5})
    assert error and "took longer than 0.5 s" in text
    assert "plugins.builtins.web.timeout_seconds" in text


async def test_same_host_redirects_are_followed_up_to_the_limit(zpi_env, tmp_path, server):
    server.redirect("/old", "/new", 301)
    server.page("/new", "<p>moved here</p>")
    server.redirect("/loop", "/loop")
    found = await run_fetch(tmp_path, {"url": server.url("/old")}, {"url": server.url("/loop")},
                            web={**ALLOW_LOOPBACK, "max_redirects": 3})
    (moved, e1), (loop, e2) = found
    assert not e1 and "moved here" in moved and moved.startswith(server.url("/new"))
    assert e2 and "redirected more than 3 times" in loop
    assert [p for p, _, _ in server.requests].count("/loop") == 4


async def test_a_redirect_to_another_host_is_reported_not_followed(zpi_env, tmp_path, server):
    port = server.base_url.rsplit(":", 1)[1]
    server.redirect("/away", f"http://localhost:{port}/there")
    server.page("/there", "<p>there</p>")
    ((text, error),) = await run_fetch(tmp_path, {"url": server.url("/away")})
    assert not error and f"redirects (HTTP 302) to another host: http://localhost:{port}/there" \
        in text
    assert "/there" not in [p for p, _, _ in server.requests]


# ---------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:{port}/", "http://10.0.0.1/", "http://169.254.169.254/latest/meta-data",
    "http://[::1]:{port}/", "http://192.168.1.1/", "http://[::ffff:127.0.0.1]:{port}/",
    "http://0.0.0.0:{port}/"])
async def test_private_loopback_and_link_local_addresses_are_refused_by_default(
        zpi_env, tmp_path, server, url):
    server.page("/", "<p>secret</p>")
    url = url.format(port=server.base_url.rsplit(":", 1)[1])
    ((text, error),) = await run_fetch(tmp_path, {"url": url}, web={})
    assert error and "refused to fetch from" in text
    assert "allow_private_addresses" in text and "secret" not in text
    assert server.requests == []


async def test_a_host_name_is_refused_when_it_resolves_to_a_private_address(
        zpi_env, tmp_path, server):
    url = server.url("/").replace("127.0.0.1", "localhost")
    ((text, error),) = await run_fetch(tmp_path, {"url": url}, web={})
    assert error and "refused to fetch from localhost (it resolves to " in text
    assert server.requests == []


async def test_every_resolved_address_is_checked_and_the_checked_one_is_used():
    async def resolver(host, port):
        return {"mixed.test": ["93.184.216.34", "10.1.2.3"],
                "public.test": ["93.184.216.34", "2606:2800:220:1::1"]}[host]

    guard = AddressGuard(allow_private=False, resolver=resolver)
    with pytest.raises(AddressRefused, match=r"mixed.test \(it resolves to 10.1.2.3\).*private"):
        await guard.check("mixed.test", 80)
    assert await guard.check("public.test", 80) == "93.184.216.34"
    allowed = AddressGuard(allow_private=False, allowed=[ipaddress.ip_network("10.1.0.0/16")],
                           resolver=resolver)
    assert await allowed.check("mixed.test", 80) == "93.184.216.34"


def test_what_counts_as_not_public():
    for address, kind in [("127.0.0.1", "loopback"), ("::1", "loopback"),
                          ("169.254.169.254", "link-local"), ("fe80::1", "link-local"),
                          ("10.0.0.1", "private"), ("172.16.0.1", "private"),
                          ("fd00::1", "private"), ("::ffff:10.0.0.1", "private"),
                          ("100.64.0.1", "not global"), ("224.0.0.1", "multicast")]:
        assert why_not_public(ipaddress.ip_address(address)) == kind, address
    assert why_not_public(ipaddress.ip_address("93.184.216.34")) is None


async def test_a_redirect_to_a_private_address_is_refused(zpi_env, tmp_path, server):
    """Only 127.0.0.1 itself is allowed: the first hop is fetched, a same-host redirect is
    checked again, and redirects to other private addresses are refused before any
    connection."""
    server.redirect("/to-meta", "http://169.254.169.254/latest/meta-data")
    server.redirect("/to-ten", "http://10.0.0.1/admin")
    server.redirect("/to-loopback", "http://127.0.0.2/")
    only = {"allowed_networks": ["127.0.0.1/32"]}
    found = await run_fetch(tmp_path, *({"url": server.url(p)} for p in
                                        ("/to-meta", "/to-ten", "/to-loopback")), web=only)
    for (text, error), target in zip(found, ("169.254.169.254", "10.0.0.1", "127.0.0.2"),
                                     strict=True):
        assert error and f"refused to fetch from {target}" in text


async def test_a_bad_allowed_network_and_bad_urls_are_clear_errors(zpi_env, tmp_path, server):
    found = await run_fetch(tmp_path, {"url": "ftp://example.com/x"},
                            {"url": "http://user:pw@example.com/"}, {"url": "not a url"})
    assert [e for _, e in found] == [True, True, True]
    assert "only http and https" in found[0][0] and "credentials" in found[1][0]
    ((text, error),) = await run_fetch(tmp_path, {"url": server.url("/")},
                                       web={"allowed_networks": ["10.0.0.0/33"]})
    assert error and "plugins.builtins.web.allowed_networks[0] '10.0.0.0/33'" in text


def test_arguments_are_checked_naming_the_field():
    assert parse_fetch({"url": " https://a.test/ "}).url == "https://a.test/"
    for arguments, field in [({}, "url"), ({"url": ""}, "url"),
                             ({"url": "https://a", "prompt": 3}, "prompt"),
                             ({"url": "https://a", "extra": 1}, "extra")]:
        with pytest.raises(ToolArgumentError) as caught:
            parse_fetch(arguments)
        assert caught.value.field == field
    with pytest.raises(ToolArgumentError) as caught:
        parse_search({"query": "x", "allowed_domains": ["a"], "blocked_domains": ["b"]})
    assert caught.value.field == "blocked_domains"
    with pytest.raises(ToolArgumentError):
        parse_search({"query": "x", "allowed_domains": "a.com"})


def test_a_page_nested_too_deeply_for_markdown_gives_its_text():
    """markdownify recurses per level: 5,000 nested ``<div>`` (30 KB) ended the fetch with
    "RecursionError: maximum recursion depth exceeded"."""
    deep = "<div>" * 5000 + "<p>deep words</p><script>hidden()</script>" + "</div>" * 5000
    assert html_to_markdown(deep) == "deep words\n"


def test_html_to_markdown_squeezes_blank_lines_and_drops_invisible_parts():
    text = html_to_markdown("<h2>A</h2>\n\n\n<p>b</p><noscript>no</noscript><div></div><p>c</p>")
    assert text == "## A\n\nb\n\nc\n"


# ---------------------------------------------------------------------------- permissions


def test_domain_rules_match_the_host_as_claude_code_does(tmp_path):
    rules = PermissionRules.build({"allow": ["web_fetch(domain:docs.python.org)",
                                             "web_fetch(domain:*.example.com)"],
                                   "deny": ["web_fetch(domain:evil.test)",
                                            "web_fetch(https://docs.python.org/2/*)"]})

    def allowed(url):
        return bool(rules.find_allow("tools", "web_fetch", {"url": url}, tmp_path))

    def denied(url):
        return rules.find("deny", "tools", "web_fetch", {"url": url}, tmp_path) is not None

    assert allowed("https://docs.python.org/3/library/")
    assert allowed("https://DOCS.python.org./3/")  # host case and a final dot
    assert not allowed("https://python.org/")  # a domain names that host only
    assert not allowed("https://docs.python.org.evil.test/")
    assert allowed("https://api.example.com/") and not allowed("https://example.com/")
    assert denied("http://evil.test:8080/x") and not denied("http://notevil.test/")
    assert denied("https://docs.python.org/2/library/")  # URL patterns still work
    assert rule_subjects({"url": "https://A.test/x"}) == ("https://A.test/x", "domain:a.test")
    assert rule_subjects({}) == ("",)


async def test_a_deny_rule_stops_the_fetch_before_any_request(zpi_env, tmp_path, server):
    server.page("/", "<p>x</p>")
    found = await run_fetch(tmp_path, {"url": server.url("/")},
                            deny=["web_fetch(domain:127.0.0.1)"])
    ((text, error),) = found
    assert error and "web_fetch(domain:127.0.0.1)" in text
    assert server.requests == []


# ---------------------------------------------------------------------------- the prompt


async def test_the_prompt_is_answered_by_a_side_request_when_the_script_says_so(
        zpi_env, tmp_path, server):
    server.page("/notes", PAGE)
    turns = [*fetch_turns({"url": server.url("/notes"), "prompt": "Which version?"})[:1],
             {"purpose": "web_fetch", "text": "Version 2.0."}, "It is 2.0."]
    session = await scripted_session(tmp_path, turns, settings=builtins_settings(
        web=ALLOW_LOOPBACK, title={"enabled": False}))
    result = await session.run("which version?")
    await session.dispose()
    ((text, error),) = results(session)
    assert not error and text.endswith("Version 2.0.") and "# Release notes" not in text
    (side,) = [r for r in session.test_model.requests if r.purpose == "web_fetch"]
    asked = side.messages[0].content[0].text
    assert "# Release notes" in asked and asked.endswith("Request: Which version?")
    assert result.result == "It is 2.0."


async def test_without_a_planned_side_request_the_page_comes_back_whole(
        zpi_env, tmp_path, server):
    server.page("/notes", PAGE)
    ((text, error),) = await run_fetch(tmp_path, {"url": server.url("/notes"),
                                                  "prompt": "Which version?"})
    assert not error and "The prompt was not applied" in text and "# Release notes" in text


async def test_a_failing_side_request_is_an_error_result_and_the_run_goes_on(
        zpi_env, tmp_path, server):
    server.page("/notes", PAGE)
    calls = iter([{"url": server.url("/notes"), "prompt": "x"}])

    def answer(request):
        if request.purpose == "web_fetch":
            raise RuntimeError("the side model is down")
        call = next(calls, None)
        return "done" if call is None else {"tool_calls": [{"name": "web_fetch",
                                                              "arguments": call}]}

    model = FunctionModel(answer, side=("web_fetch",))
    session = await create_session(model="fn:m", provider=model, cwd=tmp_path,
                                   settings=builtins_settings(web=ALLOW_LOOPBACK))
    result = await session.run("go")
    await session.dispose()
    ((text, error),) = results(session)
    assert error and "could not be answered: RuntimeError: the side model is down" in text
    assert not result.is_error and result.result == "done"


# ------------------------------------------------------------------------------- search


def search_turns(**arguments) -> list:
    return [{"tool_calls": [{"name": "web_search", "arguments": arguments}]}, "done"]


async def run_search(tmp_path, web: dict, **arguments):
    session = await scripted_session(tmp_path, search_turns(**arguments),
                                     settings=builtins_settings(web=web))
    await session.run("search")
    await session.dispose()
    ((text, error),) = results(session)
    return text, error


async def test_search_through_the_searxng_backend(zpi_env, tmp_path, server):
    server.search_results = [
        {"title": "Python  docs", "url": "https://docs.python.org/3/", "content": "The docs."},
        {"title": "Spam", "url": "https://spam.test/", "content": "buy"},
        {"url": "https://www.python.org/", "content": ""},
        {"title": "no url"},
    ]
    text, error = await run_search(tmp_path, {"searxng_url": server.base_url + "/",
                                              "max_results": 2}, query="python docs")
    assert not error
    assert text.splitlines() == [
        "Results for 'python docs' (search backend searxng):", "",
        "1. [Python docs](https://docs.python.org/3/)", "   The docs.",
        "2. [Spam](https://spam.test/)", "   buy"]
    (path, query, _), = server.requests
    assert path == "/search" and query == {"q": ["python docs"], "format": ["json"]}
    allowed, _ = await run_search(tmp_path, {"searxng_url": server.base_url},
                                  query="python", allowed_domains=["python.org"])
    assert "spam" not in allowed.lower() and "https://www.python.org/" in allowed
    blocked, _ = await run_search(tmp_path, {"searxng_url": server.base_url},
                                  query="python", blocked_domains=["python.org"])
    assert "python.org" not in blocked and "spam.test" in blocked


async def test_a_project_may_not_choose_the_search_server(zpi_env, tmp_path, server):
    """``searxng_url`` is not held to the address guard (a user may run SearXNG on their own
    machine), so a cloned repository's ``.zpi/settings.json`` may not set it: the model's
    queries would go to a server of its choosing, on the private network too."""
    work = tmp_path / "work"
    (work / ".zpi").mkdir(parents=True)
    (work / ".zpi" / "settings.json").write_text(json.dumps(
        {"plugins": {"builtins": {"web": {"searxng_url": server.url("/planted")}}}}))
    session = await create_session(model="scripted:m", provider=ScriptedModel(
        search_turns(query="my secret plans")), cwd=work)
    await session.run("search")
    await session.dispose()
    ((text, error),) = results(session)
    assert not error and "No web search backend is configured" in text
    assert server.requests == []
    assert any("may not set plugins.builtins.web.searxng_url" in w for w in session.warnings)


async def test_no_backend_configured_says_how_to_configure_one(zpi_env, tmp_path):
    text, error = await run_search(tmp_path, {}, query="anything")
    assert not error and "No web search backend is configured" in text
    assert "plugins.builtins.web.searxng_url" in text


async def test_a_failing_backend_is_a_clear_error_result(zpi_env, tmp_path, server):
    server.page("/search-off/search", "forbidden", "text/plain", status=403)
    text, error = await run_search(tmp_path, {"searxng_url": server.url("/search-off")},
                                   query="x")
    assert error and "answered HTTP 403 (is the json format enabled" in text
    server.page("/html/search", "<p>not json</p>")
    text, error = await run_search(tmp_path, {"searxng_url": server.url("/html")}, query="x")
    assert error and "did not answer with a JSON object holding a 'results' list" in text


class Backends:
    """A plugin registering search backends through zpi_register_search_backends."""

    def __init__(self, *backends) -> None:
        self.backends = backends
        self.calls = 0

    @hookimpl
    def zpi_register_search_backends(self, settings):
        self.calls += 1
        assert settings["plugins"]["builtins"]["web"]["max_results"] == 3
        return list(self.backends)


class Canned:
    def __init__(self, name: str) -> None:
        self.name = name
        self.queries: list[tuple[str, int]] = []

    async def search(self, query, limit):
        self.queries.append((query, limit))
        return [SearchHit(f"{self.name} {i}", f"https://{self.name}.test/{i}") for i in range(9)]


async def test_a_plugin_backend_is_used_and_chosen_by_the_setting(
        zpi_env, zpi_plugins, tmp_path, server):
    first, second = Canned("first"), Canned("second")
    plugin = Backends(first, second)
    zpi_plugins.register(plugin, "my-search")
    turns = [*search_turns(query="q1")[:1], *search_turns(query="q2")]
    session = await scripted_session(tmp_path, turns, settings=builtins_settings(
        web={"max_results": 3, "search_backend": "second", "searxng_url": server.base_url}))
    await session.run("search")
    await session.dispose()
    found = results(session)
    assert [e for _, e in found] == [False, False]
    assert "3. [second 2](https://second.test/2)" in found[0][0] and "second 3" not in found[0][0]
    assert second.queries == [("q1", 3), ("q2", 3)] and first.queries == []
    assert plugin.calls == 1  # asked once per session
    assert server.requests == []  # the searxng backend was registered too, but not chosen


async def test_a_backend_name_registered_twice_names_both_plugins(
        zpi_env, zpi_plugins, tmp_path, server):
    zpi_plugins.register(Backends(Canned("searxng")), "my-search")
    text, error = await run_search(tmp_path, {"searxng_url": server.base_url, "max_results": 3},
                                   query="x")
    assert error and "'searxng' is registered by both" in text and "'my-search'" in text


async def test_an_unknown_chosen_backend_lists_the_registered_ones(zpi_env, tmp_path, server):
    text, error = await run_search(tmp_path, {"searxng_url": server.base_url,
                                              "search_backend": "bing"}, query="x")
    assert error and "'bing'" in text and "registered: searxng" in text


async def test_switched_off_there_are_no_web_tools(zpi_env, tmp_path):
    session = await scripted_session(tmp_path, ["x"],
                                     settings=builtins_settings(web={"enabled": False}))
    names = set(session.tools)
    await session.dispose()
    assert "web_fetch" not in names and "web_search" not in names


def test_settings_schema_has_the_web_defaults():
    from zpi_builtins.settings import service_settings

    config = service_settings({}, "web")
    assert config["allow_private_addresses"] is False and config["searxng_url"] is None
    assert json.dumps(config)  # plain JSON values


async def test_the_connection_goes_to_the_address_checked_not_a_second_lookup(server):
    """A resolver that answers once: the connection uses its checked answer (the system could
    not resolve ``rebind.test`` at all), and the Host header keeps the name."""
    asked = []

    async def resolver(host, port):
        asked.append(host)
        return ["127.0.0.1"]

    server.page("/p", "<p>pinned</p>")
    port = server.base_url.rsplit(":", 1)[1]
    guard = AddressGuard(allow_private=False, allowed=[ipaddress.ip_network("127.0.0.1/32")],
                         resolver=resolver)
    page = await Fetcher(guard, FetchLimits()).fetch(f"http://rebind.test:{port}/p")
    assert isinstance(page, Page) and page.text == "pinned\n"
    assert asked == ["rebind.test"]
    assert server.requests[0][2]["Host"] == f"rebind.test:{port}"
    with pytest.raises(httpcore.ConnectError, match="was not checked"):
        await PinnedBackend().connect_tcp("127.0.0.1", int(port))


class Stalling:
    name = "stalling"

    async def search(self, query, limit):
        import anyio

        await anyio.sleep(30)
        return []


async def test_a_backend_that_does_not_answer_hits_the_time_limit(
        zpi_env, zpi_plugins, tmp_path):
    zpi_plugins.register(Backends(Stalling()), "my-search")
    text, error = await run_search(tmp_path, {"max_results": 3, "timeout_seconds": 0.2},
                                   query="x")
    assert error and "'stalling' did not answer within 0.2 s" in text
