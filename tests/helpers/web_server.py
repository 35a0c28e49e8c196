"""A small real HTTP server on 127.0.0.1 for the web tests: routes map a path to a
response (status, headers, body), a redirect, or a response that stalls until the test ends;
it also answers SearXNG-style ``/search?q=...&format=json``. Every request is recorded."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

Route = tuple[int, dict[str, str], bytes]


class WebServer:
    def __init__(self) -> None:
        self.routes: dict[str, Route | Callable[[], Route]] = {}
        self.requests: list[tuple[str, dict[str, list[str]], dict[str, str]]] = []
        self.release = threading.Event()
        self.search_results: list[dict[str, Any]] = []
        self.base_url = ""

    def page(self, path: str, body: str | bytes, content_type: str = "text/html; charset=utf-8",
             status: int = 200, **headers: str) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.routes[path] = (status, {"Content-Type": content_type, **headers}, data)

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        self.routes[path] = (status, {"Location": location}, b"")

    def stall(self, path: str) -> None:
        """Headers, a first chunk, then nothing until the test ends."""
        self.routes[path] = self._stalled

    def _stalled(self) -> Route:
        self.release.wait(30)  # bounded: never hangs a test run
        return (200, {"Content-Type": "text/html"}, b"late")

    def url(self, path: str) -> str:
        return self.base_url + path


def _handler(server: WebServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            server.requests.append((parts.path, parse_qs(parts.query), dict(self.headers)))
            if parts.path == "/search":
                route: Route = (200, {"Content-Type": "application/json"}, json.dumps(
                    {"query": parse_qs(parts.query).get("q", [""])[0],
                     "results": server.search_results}).encode())
            else:
                found = server.routes.get(parts.path)
                if found is None:
                    route = (404, {"Content-Type": "text/plain"}, b"not found")
                elif callable(found):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", "100")
                    self.end_headers()
                    self.wfile.write(b"<p>first</p>")
                    self.wfile.flush()
                    found()
                    return
                else:
                    route = found
            status, headers, body = route
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            if "Content-Length" not in headers:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@contextmanager
def web_server() -> Iterator[WebServer]:
    state = WebServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)
