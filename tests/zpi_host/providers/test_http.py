"""Retries, timeouts and typed errors of both HTTP providers; the key never leaks."""

from __future__ import annotations

import email.utils
import gc
import os
import socket
import time
import tracemalloc
import types

import pytest

from zpi_host.errors import ContextOverflowError, ZpiError
from zpi_host.providers import http
from zpi_host.providers.base import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderHTTPError,
    ProviderStreamBroken,
    ProviderStreamError,
    Retrying,
    TextDelta,
)
from zpi_host.testing import ModelServer

from .conftest import ENV, FORMATS, KEYS, ask, collect, said

pytestmark = pytest.mark.anyio

#: How many events of a turn's stream come before its first text delta.
FIRST_TEXT = {"openai": 1, "anthropic": 3}


@pytest.fixture
def sleeps(monkeypatch):
    """Record the retry waits instead of sleeping."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(http, "anyio", types.SimpleNamespace(sleep=sleep))
    return waits


@pytest.mark.parametrize("fmt", FORMATS)
async def test_429_is_retried_after_retry_after(fmt, connect, zpi_model_server, sleeps):
    zpi_model_server.add_turns("finally")
    zpi_model_server.fail_next(429, retry_after=7)
    zpi_model_server.fail_next(429, retry_after=3600)  # capped by requests.retry_after_max
    result = said(await collect(connect(fmt, requests={"retry_after_max": 60})))
    assert result.text == "finally"
    assert sleeps == [7.0, 60.0]
    assert len(zpi_model_server.requests) == 3


@pytest.mark.parametrize("fmt", FORMATS)
async def test_each_retry_is_announced_before_its_wait(fmt, connect, zpi_model_server, sleeps):
    zpi_model_server.add_turns("finally")
    zpi_model_server.fail_next(429, retry_after=4)
    zpi_model_server.fail_next(503, retry_after=2)
    events = await collect(connect(fmt, requests={"max_retries": 4}))
    retries = [e for e in events if isinstance(e, Retrying)]
    assert retries == [Retrying("rate limited", 4.0, 2, 5),
                       Retrying("server error (HTTP 503)", 2.0, 3, 5)]
    assert events[:2] == retries and said(events).text == "finally"


@pytest.mark.parametrize("fmt", FORMATS)
async def test_5xx_is_retried_with_backoff_then_gives_up(fmt, connect, zpi_model_server,
                                                         sleeps):
    zpi_model_server.add_turns("ok")
    zpi_model_server.fail_next(500)
    zpi_model_server.fail_next(503)
    provider = connect(fmt, requests={"retry_base_delay": 1.0, "retry_max_delay": 1.5})
    assert said(await collect(provider)).text == "ok"
    assert len(sleeps) == 2 and 0 <= sleeps[0] <= 1.0 and 0 <= sleeps[1] <= 1.5
    zpi_model_server.fail_next(529, times=4)
    with pytest.raises(ProviderHTTPError) as info:
        await collect(provider)
    assert info.value.status == 529 and "gave up after 4 attempts" in str(info.value)
    assert "try again later" in str(info.value)
    assert len(zpi_model_server.requests) == 3 + 4


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_client_error_is_not_retried(fmt, connect, zpi_model_server, sleeps):
    zpi_model_server.fail_next(400, body={"error": {"message": "bad field 'x'",
                                                    "type": "invalid_request_error"}})
    with pytest.raises(ProviderHTTPError, match=r"\(HTTP 400\): bad field 'x'") as info:
        await collect(connect(fmt))
    assert info.value.error_type == "invalid_request_error"
    assert sleeps == [] and len(zpi_model_server.requests) == 1


async def test_an_http_date_retry_after_is_honoured():
    past = email.utils.formatdate(time.time() - 100, usegmt=True)
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert http.retry_after({"retry-after": past}, 60) == 0.0
    assert 20 < http.retry_after({"retry-after": future}, 60) <= 30
    assert http.retry_after({"retry-after": "2.5"}, 60) == 2.5
    assert http.retry_after({"retry-after-ms": "250", "retry-after": "9"}, 60) == 0.25
    assert http.retry_after({"retry-after": "soon"}, 60) is None
    assert http.retry_after({}, 60) is None


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("fmt", FORMATS)
async def test_connection_refused_is_retried_then_typed(fmt, connect, sleeps):
    provider = connect(fmt, base_url=f"http://127.0.0.1:{closed_port()}/v1",
                       requests={"max_retries": 2})
    with pytest.raises(ProviderConnectionError) as info:
        await collect(provider)
    assert len(sleeps) == 2
    message = str(info.value)
    assert f"model provider {fmt}: cannot reach http://127.0.0.1:" in message
    assert "check base_url" in message and "gave up after 3 attempts" in message


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_drop_before_the_first_event_is_retried(fmt, connect, zpi_model_server):
    zpi_model_server.add_turns("second try")
    zpi_model_server.fail_next(drop_after=FIRST_TEXT[fmt])  # only events without content
    assert said(await collect(connect(fmt))).text == "second try"
    assert len(zpi_model_server.requests) == 2


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_drop_after_the_stream_started_is_not_retried(fmt, connect, zpi_model_server):
    zpi_model_server.add_turns({"text": "a long answer that breaks"})
    zpi_model_server.fail_next(drop_after=FIRST_TEXT[fmt] + 2, delay=0.05)
    got = []
    with pytest.raises(ProviderStreamBroken) as info:
        async for event in connect(fmt).stream(ask()):
            got.append(event)
    assert got and all(isinstance(e, TextDelta) for e in got)
    error = info.value
    assert error.started and isinstance(error, ProviderStreamError)
    assert isinstance(error.cause, ProviderStreamError) and not error.cause.started
    assert "broke off after it had started streaming (not retried)" in str(error)
    assert "the connection broke while the answer was streaming" in str(error)
    assert len(zpi_model_server.requests) == 1


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_silent_server_times_out(fmt, connect, zpi_model_server):
    zpi_model_server.add_turns("slow")
    zpi_model_server.fail_next(delay=2)
    provider = connect(fmt, requests={"read_timeout": 0.2, "max_retries": 0})
    with pytest.raises(ProviderStreamError) as info:
        await collect(provider)
    assert "no data for 0.2 s (raise requests.read_timeout" in str(info.value)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_401_names_the_variable_and_never_the_key(fmt, connect, zpi_model_server):
    key = KEYS[fmt]
    zpi_model_server.fail_next(401, body={"error": {"message": f"Incorrect API key: {key}",
                                                    "type": "authentication_error"}})
    provider = connect(fmt)
    with pytest.raises(ProviderAuthError) as info:
        await collect(provider)
    error = info.value
    assert error.status == 401 and len(zpi_model_server.requests) == 1
    texts = [str(error), repr(error), error.detail, repr(provider), repr(provider.entry)]
    assert not any(key in t for t in texts)
    assert f"the key from environment variable {ENV[fmt]} was refused" in str(error)
    assert "Incorrect API key: [redacted]" in str(error)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_missing_key_is_explained(fmt, connect, zpi_model_server, monkeypatch):
    monkeypatch.delenv(ENV[fmt])
    zpi_model_server.fail_next(401)
    with pytest.raises(ProviderAuthError, match=f"no API key was sent because environment "
                                                f"variable {ENV[fmt]} is not set; set it"):
        await collect(connect(fmt))
    headers = zpi_model_server.requests[0].headers
    assert "authorization" not in headers and "x-api-key" not in headers


@pytest.mark.parametrize("fmt", FORMATS)
async def test_context_overflow_is_its_own_error(fmt, connect, zpi_model_server, sleeps):
    zpi_model_server.fail_next(context_overflow=True)
    with pytest.raises(ContextOverflowError) as info:
        await collect(connect(fmt))
    assert (info.value.provider, info.value.status) == (fmt, 400)
    assert isinstance(info.value, ZpiError) and "context window" in str(info.value)
    assert sleeps == []


async def test_context_overflow_inside_an_openai_stream(connect, zpi_model_server):
    zpi_model_server.fail_next(raw=b'data: {"error":{"message":"This model\'s maximum context '
                                   b'length is 8192 tokens","code":"context_length_exceeded"}}'
                                   b"\n\n")
    with pytest.raises(ContextOverflowError, match="maximum context length"):
        await collect(connect("openai"))


@pytest.mark.parametrize("fmt", FORMATS)
async def test_malformed_events_are_stream_errors(fmt, connect, zpi_model_server):
    zpi_model_server.add_turns("never", "fine")
    zpi_model_server.fail_next(malformed=True)
    with pytest.raises(ProviderStreamError) as info:
        await collect(connect(fmt))
    assert "not valid JSON" in str(info.value) and "'{not json'" in str(info.value)
    zpi_model_server.fail_next(malformed=b"HTTP/1.1 502 Bad Gateway\n\n")
    with pytest.raises(ProviderStreamError, match="malformed server-sent events"):
        await collect(connect(fmt))
    assert len(zpi_model_server.requests) == 2  # neither is retried


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_stream_without_its_stop_event_is_an_error(fmt, connect, zpi_model_server):
    start = (b'data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n'
             if fmt == "openai" else
             b'event: message_start\ndata: {"type":"message_start","message":{}}\n\n')
    zpi_model_server.fail_next(raw=start)
    with pytest.raises(ProviderStreamError, match="the answer is incomplete") as info:
        await collect(connect(fmt))
    assert not isinstance(info.value, ProviderStreamBroken)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_json_instead_of_an_event_stream(fmt, connect, zpi_model_server):
    zpi_model_server.fail_next(200, body={"error": {"message": "streaming is not enabled"}})
    with pytest.raises(ProviderHTTPError, match="streaming is not enabled; the service "
                                                "answered with JSON"):
        await collect(connect(fmt))


async def test_a_wrong_path_is_a_404_with_a_hint(connect, zpi_model_server):
    provider = connect("openai", base_url=zpi_model_server.base_url + "/nowhere")
    with pytest.raises(ProviderHTTPError, match=r"\(HTTP 404\).*check the model name and "
                                                r"base_url \(http://127"):
        await collect(provider)


# ------------------------------------------------- no certificate store for plain HTTP


def _streamer(url: str) -> http.HTTPStreamer:
    from zpi_host.providers.catalog import Credential, RequestPolicy

    return http.HTTPStreamer("openai", url, {}, Credential("none", None, None), RequestPolicy())


def _ca_certificates(streamer: http.HTTPStreamer) -> int:
    context = streamer._client_for_request()._transport._pool._ssl_context  # type: ignore
    return int(context.cert_store_stats()["x509_ca"])


def test_a_plain_http_client_skips_the_certificate_store(monkeypatch) -> None:
    for name in http.HTTP_PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    import ssl

    local = _streamer("http://127.0.0.1:8080/v1/chat/completions")
    assert _ca_certificates(local) == 0
    context = local._client_for_request()._transport._pool._ssl_context  # type: ignore
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname  # refuses TLS
    assert _ca_certificates(_streamer("https://api.example/v1/chat/completions")) > 0
    monkeypatch.setenv("HTTP_PROXY", "https://proxy.example:3128")  # TLS to the proxy
    assert _ca_certificates(_streamer("http://127.0.0.1:8080/v1/chat/completions")) > 0


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_sent_body_is_not_kept_alive_with_the_finished_response(fmt, connect):
    """httpx holds a finished response, and its request, in reference cycles until the
    collector runs: the body (in a long session the whole history, megabytes) must not stay
    with them. It is still sent in one piece with its length, not chunked. Only what the
    client side keeps counts: the loopback server runs in this process too, and what its
    handler threads keep with the collector off is not the provider's."""
    big = "x" * (2 << 20)
    with ModelServer(["ok"] * 4, keep_bodies=1) as server:
        provider = connect(fmt, base_url=server.base_url)
        gc.disable()
        try:
            await collect(provider, ask(big))  # the pool, the imports
            tracemalloc.start()
            try:
                before = tracemalloc.take_snapshot()
                for _ in range(3):
                    assert said(await collect(provider, ask(big))).text == "ok"
                after = tracemalloc.take_snapshot()
            finally:
                tracemalloc.stop()
        finally:
            gc.enable()
        sent = server.requests[-1]
    server_side = [tracemalloc.Filter(False, f"*{os.sep}{name}")
                   for name in ("model_server.py", "server.py", "socketserver.py", "socket.py",
                                "threading.py", "tracemalloc.py")]
    kept = sum(stat.size_diff for stat in after.filter_traces(server_side).compare_to(
        before.filter_traces(server_side), "filename"))
    # what stays by design: the provider's encoded history of the last request (2 MiB); after
    # many other tests in the same process one more 2 MiB has been seen to stay (not yet
    # explained); a body kept with each finished response makes it 8 MiB for the three
    assert kept < 5 << 20, f"{kept / (1 << 20):.1f} MiB still held after three 2 MiB requests"
    assert sent.headers["content-length"] == str(len(sent.body))
    assert "transfer-encoding" not in sent.headers and big in sent.body.decode()
