"""A loopback event-stream server in its own process, for the provider benchmarks.

The in-process ``zpi_host.testing.ModelServer`` shares the GIL with the code it serves and
parses every request body: in a benchmark that would charge the server's work to the client.
This server runs as a separate process (``python benchmarks/_loopback.py``, which prints its
port), reads each request body without parsing it, and answers with a recorded event stream,
ONE SSE EVENT PER NETWORK WRITE (one HTTP chunk, TCP_NODELAY), as a real service streams.

Streams are loaded once (``LoopbackServer.load``) and queued (``LoopbackServer.queue``): each
model request is answered with the next queued stream, or, when its body holds a routed text
(``LoopbackServer.route``: a compaction's summary request), with that text's stream, the
queue left as it is. The ten bytes ``NNNNNNNNNN`` in a stream are replaced by the request's
number (so tool-call ids differ between turns), and the number :data:`TOKENS` by the
request body's size in tokens (a quarter of its bytes, as a service would count the history
it was sent: what compaction reads), padded to the same ten characters.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

MARKER = b"NNNNNNNNNN"
#: usage's input tokens in a loaded stream, replaced by the request's size in tokens
TOKENS = 1234567891
_TOKENS = b"%d" % TOKENS


# ---------------------------------------------------------------------- the server process


class _State:
    def __init__(self) -> None:
        self.streams: dict[str, list[bytes]] = {}
        self.marked: dict[str, list[int]] = {}
        self.routes: list[tuple[bytes, str]] = []
        self.queue: list[str] = []
        self.served = 0
        self.lock = threading.Lock()

    def load(self, name: str, path: str) -> None:
        data = Path(path).read_bytes()
        events = [e + b"\n\n" for e in data.split(b"\n\n") if e.strip()]
        self.streams[name] = [b"%x\r\n%b\r\n" % (len(e), e) for e in events]
        self.marked[name] = [i for i, e in enumerate(events) if MARKER in e or _TOKENS in e]

    def next_stream(self, body: bytes) -> list[bytes] | None:
        with self.lock:
            name = next((name for needle, name in self.routes if needle in body), None)
            if name is None:
                if not self.queue:
                    return None
                name = self.queue.pop(0)
            self.served += 1
            number = b"%010d" % self.served
        chunks = self.streams[name]
        if self.marked[name]:
            chunks = list(chunks)
            tokens = b"%10d" % (len(body) // 4)  # JSON allows the padding's spaces
            for i in self.marked[name]:
                chunks[i] = chunks[i].replace(MARKER, number).replace(_TOKENS, tokens)
        return chunks


def _read_request(reader: Any) -> tuple[str, bytes] | None:
    line = reader.readline()
    if not line:
        return None
    path = line.split()[1].decode() if len(line.split()) > 1 else "/"
    length = 0
    while True:
        header = reader.readline()
        if header in (b"\r\n", b"\n", b""):
            break
        name, _, value = header.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return path, reader.read(length) if length else b""


def _reply(conn: socket.socket, status: int, body: bytes) -> None:
    conn.sendall(b"HTTP/1.1 %d X\r\ncontent-type: application/json\r\n"
                 b"content-length: %d\r\n\r\n%b" % (status, len(body), body))


def _serve_connection(conn: socket.socket, state: _State) -> None:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    reader = conn.makefile("rb")
    try:
        while True:
            request = _read_request(reader)
            if request is None:
                return
            path, body = request
            if path == "/bench/load":
                spec = json.loads(body)
                for name, file in spec.items():
                    state.load(name, file)
                _reply(conn, 200, b"{}")
            elif path == "/bench/queue":
                with state.lock:
                    state.queue = [name for name, count in json.loads(body)
                                   for _ in range(count)]
                _reply(conn, 200, b"{}")
            elif path == "/bench/route":
                with state.lock:
                    state.routes = [(needle.encode(), name) for needle, name in json.loads(body)]
                _reply(conn, 200, b"{}")
            elif path == "/bench/stats":
                _reply(conn, 200, json.dumps({"served": state.served,
                                              "queued": len(state.queue)}).encode())
            else:
                chunks = state.next_stream(body)
                if chunks is None:
                    _reply(conn, 400, b'{"error": {"message": "no stream queued"}}')
                    continue
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                             b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n")
                send = conn.sendall
                for chunk in chunks:
                    send(chunk)
                send(b"0\r\n\r\n")
    except OSError:
        return
    finally:
        conn.close()


def serve() -> None:
    """Accept connections until stdin closes (the parent went away)."""
    state = _State()
    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)

    def watch_parent() -> None:
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_serve_connection, args=(conn, state), daemon=True).start()


# ---------------------------------------------------------------------- realistic streams


def realistic(fmt: str, frames: list[bytes], seed: int = 7) -> bytes:
    """``frames`` from ``zpi_host.testing.model_server.sse_frames`` with the fields the real
    services add. OpenAI (with ``stream_options.include_usage``): ``service_tier``,
    ``"usage": null`` on every chunk, and the per-event ``obfuscation`` padding string that
    is on by default (random letters and digits, here 2-16 of them). Anthropic:
    ``service_tier`` and the ``cache_creation`` breakdown in ``message_start``'s usage."""
    import random
    import string

    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits
    out = []
    for frame in frames:
        head, sep, payload = frame.rpartition(b"data: ")
        text = payload.strip()
        if not sep or text == b"[DONE]":
            out.append(frame)
            continue
        data = json.loads(text)
        if fmt == "openai":
            data = {**{k: v for k, v in data.items() if k not in ("choices", "usage")},
                    "service_tier": "default", "choices": data["choices"],
                    "usage": data.get("usage"),
                    "obfuscation": "".join(rng.choices(alphabet, k=rng.randint(2, 16)))}
        elif data.get("type") == "message_start":
            usage = data["message"]["usage"]
            usage["cache_creation"] = {"ephemeral_5m_input_tokens":
                                       usage["cache_creation_input_tokens"],
                                       "ephemeral_1h_input_tokens": 0}
            usage["service_tier"] = "standard"
        out.append(head + b"data: " + json.dumps(data, separators=(",", ":"),
                                                 ensure_ascii=False).encode() + b"\n\n")
    return b"".join(out)


# ------------------------------------------------------------------------- the client side


class LoopbackServer:
    """``with LoopbackServer() as server:`` starts the server process; ``base_url`` is
    ``http://127.0.0.1:PORT/v1`` for both providers."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="zpi-bench-sse-")
        self.port = 0

    def __enter__(self) -> LoopbackServer:
        self._process = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE)
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line.strip():
            raise SystemExit("the loopback server did not start")
        self.port = int(line)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            self._process.wait(timeout=10)
        self._tmp.cleanup()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _post(self, path: str, payload: Any) -> Any:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request("POST", path, body=json.dumps(payload).encode())
            response = conn.getresponse()
            return json.loads(response.read())
        finally:
            conn.close()

    def load(self, name: str, data: bytes) -> None:
        """Make ``data`` (SSE events, each ending in a blank line) available as ``name``."""
        path = Path(self._tmp.name) / f"{name}.sse"
        path.write_bytes(data)
        self._post("/bench/load", {name: str(path)})

    def queue(self, *items: tuple[str, int]) -> None:
        """Answer the next requests with these streams: ``("name", count)``, in order."""
        self._post("/bench/queue", [list(item) for item in items])

    def route(self, *items: tuple[str, str]) -> None:
        """Answer a request whose body holds ``text`` with the stream ``name``, for each
        ``(text, name)``, without taking from the queue (none: clear the routes)."""
        self._post("/bench/route", [list(item) for item in items])

    def stats(self) -> dict[str, int]:
        result: dict[str, int] = self._post("/bench/stats", {})
        return result


if __name__ == "__main__":
    serve()
