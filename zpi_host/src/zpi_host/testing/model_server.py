"""A loopback model server: real HTTP on 127.0.0.1 speaking the OpenAI Chat Completions, OpenAI
Responses and Anthropic Messages streaming formats, answering from scripted turns.

Provider tests (the host's and third-party plugins') run their real HTTP code against it: no
network, no mocks. Turns use the scripted-model format (``ScriptedTurn``); text, reasoning and
tool arguments are split into several deltas so that reassembly is exercised. Faults are
injected per upcoming request with :meth:`ModelServer.fail_next`. A request that fails by
injection does not use up a turn, so a retried request gets the turn that was meant for it.

The Responses format is stateless as with ``store: false``: a turn's thinking comes back as a
reasoning item whose ``encrypted_content`` (sent when the request's ``include`` asks for
``reasoning.encrypted_content``) only this server issued; a request whose ``input`` holds a
reasoning item it did not issue, or one without its encrypted content, is refused with a 400
as the real service refuses it.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

from ..providers.script import ScriptedTurn
from ..support.attrs_methods import FrozenFieldsEq

__all__ = ["Fault", "ModelServer", "RecordedRequest", "error_body", "sse_frames"]

ROUTES = {"/v1/chat/completions": "openai", "/chat/completions": "openai",
          "/v1/responses": "responses", "/responses": "responses",
          "/v1/messages": "anthropic", "/messages": "anthropic"}
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
               403: "permission_error", 404: "not_found_error", 408: "timeout_error",
               413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}
OVERFLOW_MESSAGES = {
    "openai": "This model's maximum context length is 128000 tokens. However, your messages "
              "resulted in 130000 tokens. Please reduce the length of the messages.",
    "responses": "Your input exceeds the context window of this model. Please adjust your "
                 "input and try again.",
    "anthropic": "prompt is too long: 210000 tokens > 200000 maximum",
}
#: The reasoning item of a Responses turn: its encrypted content is this prefix + a counter.
ENCRYPTED_PREFIX = "gAAAAzpi-encrypted-"
CREATED = 1_700_000_000


@attrs.frozen(repr=False, eq=False, slots=False)
class RecordedRequest(FrozenFieldsEq):
    """One request the server received. ``headers`` keys are lower-case."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    format: str | None

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@attrs.frozen(repr=False, eq=False, slots=False)
class Fault(FrozenFieldsEq):
    """What to do instead of (or while) answering one request; see ``fail_next``."""

    status: int | None = None
    retry_after: float | str | None = None
    body: Any = None
    headers: Mapping[str, str] = attrs.field(factory=dict)
    context_overflow: bool = False
    drop_after: int | None = None
    malformed: bytes | None = None
    at: int = 0
    delay: float | None = None
    raw: bytes | None = None


class ModelServer:
    """``with ModelServer(turns) as server:`` then point a provider at ``server.base_url``.

    ``turns`` are scripted turns (dicts, strings or ``ScriptedTurn``), answered in order,
    whatever the format of the request. ``requests`` records every request received; with
    ``keep_bodies=N`` only the last N keep their body (older ones are recorded with an empty
    one): a long session sends its whole history with every request, and keeping every body
    would take memory quadratic in its length.
    """

    def __init__(self, turns: Iterable[Any] = (), *, pieces: int = 3,
                 keep_bodies: int | None = None) -> None:
        if keep_bodies is not None and keep_bodies < 1:
            raise ValueError(f"keep_bodies must be at least 1 (or None: all), got {keep_bodies}")
        self._turns: list[ScriptedTurn] = []
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self._pieces = pieces
        self._keep_bodies = keep_bodies
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self.requests: list[RecordedRequest] = []
        #: encrypted reasoning this server issued (Responses format), to verify what comes back
        self.issued_reasoning: set[str] = set()
        self.add_turns(*turns)

    # ------------------------------------------------------------------------ lifecycle

    def start(self) -> ModelServer:
        if self._server is None:
            self._server = _Server(("127.0.0.1", 0), _Handler)
            self._server.model_server = self
            self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                            name="zpi-model-server", daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        with self._lock:
            connections, self._connections = list(self._connections), set()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the model server is not started; call start() or use `with`")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: the base URL for both providers."""
        return f"http://127.0.0.1:{self.port}/v1"

    # ---------------------------------------------------------------------------- script

    def add_turns(self, *turns: Any) -> None:
        """Append turns; a list argument adds each of its items."""
        flat: list[Any] = []
        for turn in turns:
            flat.extend(turn if isinstance(turn, list | tuple) else [turn])
        parsed = [ScriptedTurn.parse(t, f"ModelServer turn {i}") for i, t in enumerate(flat)]
        with self._lock:
            self._turns.extend(parsed)

    @property
    def remaining(self) -> int:
        return len(self._turns)

    def fail_next(
        self,
        status: int | None = None,
        *,
        retry_after: float | str | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        context_overflow: bool = False,
        drop_after: int | None = None,
        malformed: bytes | str | bool | None = None,
        at: int = 0,
        delay: float | None = None,
        raw: bytes | None = None,
        times: int = 1,
    ) -> None:
        """Change how the next ``times`` requests are answered (queued after earlier faults):

        - ``status``: answer with this HTTP status and an error body in the request's format
          (or ``body``: bytes, str or a JSON value), with ``Retry-After: retry_after``.
        - ``context_overflow``: a 400 with that format's context-length error.
        - ``drop_after=N``: send N events of the next turn, then close the connection.
        - ``malformed``: after ``at`` events, send these bytes (``True``: an event whose
          data is not JSON) and end the body.
        - ``delay``: wait this many seconds between events (the turn is used up).
        - ``raw``: send these exact bytes as a 200 event stream.
        """
        if isinstance(malformed, bool):
            malformed = b"data: {not json\n\n" if malformed else None
        elif isinstance(malformed, str):
            malformed = malformed.encode()
        fault = Fault(status, retry_after, body, dict(headers or {}), context_overflow,
                      drop_after, malformed, at, delay, raw)
        with self._lock:
            self._faults.extend([fault] * times)

    # ------------------------------------------------------------------------- serving

    def _next(self, request_no: int) -> tuple[Fault | None, ScriptedTurn | None]:
        with self._lock:
            fault = self._faults.pop(0) if self._faults else None
            failing = fault is not None and (
                fault.status is not None or fault.context_overflow or fault.raw is not None
                or fault.drop_after is not None or fault.malformed is not None)
            if failing:
                turn = self._turns[0] if self._turns else None
            else:
                turn = self._turns.pop(0) if self._turns else None
        return fault, turn

    def _record(self, request: RecordedRequest) -> int:
        """Record ``request``, dropping the body that falls out of ``keep_bodies``; its
        number (1 for the first)."""
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
            old = number - 1 - (self._keep_bodies or number)
            if old >= 0 and self.requests[old].body:
                self.requests[old] = attrs.evolve(self.requests[old], body=b"")
        return number

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            (self._connections.add if add else self._connections.discard)(conn)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    model_server: ModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (the test is over, or it hung up on purpose) is normal."""
        import sys

        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 60

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle wait
        self.server.model_server._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.model_server._track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        owner = self.server.model_server
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        path = self.path.split("?", 1)[0]
        fmt = ROUTES.get(path)
        request_no = owner._record(RecordedRequest(
            "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body, fmt))
        if fmt is None:
            self._json(404, error_body("openai", 404, f"ModelServer serves "
                                       f"{', '.join(ROUTES)}, not {path}"))
            return
        try:
            request = json.loads(body)
        except ValueError:
            request = {}
        if fmt == "responses":
            refused = _unverified_reasoning(request, owner.issued_reasoning)
            if refused:
                self._json(400, error_body(fmt, 400, refused, code="invalid_encrypted_content"))
                return
        fault, turn = owner._next(request_no)
        if fault is not None and (fault.status is not None or fault.context_overflow):
            self._fail(fmt, fault)
            return
        if fault is not None and fault.raw is not None:
            self._stream([fault.raw[i:i + 65536] for i in range(0, len(fault.raw), 65536)])
            return
        if turn is None:
            self._json(400, error_body(fmt, 400, f"ModelServer has no scripted turn left for "
                                       f"request {request_no}; add turns with add_turns()"))
            return
        encrypted = fmt == "responses" and "reasoning.encrypted_content" in (
            request.get("include") or ())
        frames = sse_frames(fmt, turn, model=str(request.get("model", "model")),
                            request_no=request_no, pieces=owner._pieces,
                            include_usage=bool((request.get("stream_options") or {})
                                               .get("include_usage")) or fmt != "openai",
                            encrypted_reasoning=encrypted)
        if encrypted and turn.thinking:
            with owner._lock:
                owner.issued_reasoning.add(f"{ENCRYPTED_PREFIX}{request_no}")
        self._stream(frames, fault)

    # -------------------------------------------------------------------------- helpers

    def _fail(self, fmt: str, fault: Fault) -> None:
        status = 400 if fault.context_overflow else int(fault.status or 500)
        if fault.body is not None:
            payload = fault.body
        elif fault.context_overflow:
            payload = error_body(fmt, 400, OVERFLOW_MESSAGES[fmt],
                                 code="context_length_exceeded" if fmt != "anthropic" else None)
        else:
            payload = error_body(fmt, status, f"injected HTTP {status}")
        headers = dict(fault.headers)
        if fault.retry_after is not None:
            headers["Retry-After"] = str(fault.retry_after)
        self._json(status, payload, headers)

    def _json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else (
            payload.encode() if isinstance(payload, str) else json.dumps(payload).encode())
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, frames: list[bytes], fault: Fault | None = None) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        write = self.wfile.write
        for i, frame in enumerate(frames):
            if fault is not None:
                if fault.malformed is not None and i == fault.at:
                    write(_chunk(fault.malformed))
                    break
                if fault.drop_after is not None and i == fault.drop_after:
                    self._drop()
                    return
                if fault.delay and i:
                    time.sleep(fault.delay)
            write(_chunk(frame))
        write(b"0\r\n\r\n")

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(data), data)


# ---------------------------------------------------------------------------------- formats


def error_body(fmt: str, status: int, message: str, *, error_type: str | None = None,
               code: str | None = None) -> dict[str, Any]:
    """An error body as the format's real service writes it."""
    kind = error_type or ERROR_TYPES.get(status, "api_error")
    if fmt == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def sse_frames(fmt: str, turn: ScriptedTurn, *, model: str = "model", request_no: int = 1,
               pieces: int = 3, piece_chars: int | None = None,
               include_usage: bool = True, encrypted_reasoning: bool = True) -> list[bytes]:
    """The event stream a real service would send for ``turn``, one bytes frame per event.
    Strings are split into ``pieces`` deltas, or into deltas of ``piece_chars`` characters.
    ``encrypted_reasoning``: a Responses reasoning item carries its ``encrypted_content``."""
    split = (lambda s: _split_chars(s, piece_chars)) if piece_chars else \
        (lambda s: _split(s, pieces))
    if fmt == "anthropic":
        return _anthropic(turn, model, request_no, split)
    if fmt == "responses":
        return _responses(turn, model, request_no, split, encrypted_reasoning)
    return _openai(turn, model, request_no, split, include_usage)


def _openai(turn: ScriptedTurn, model: str, n: int, split: Any, usage: bool) -> list[bytes]:
    head = {"id": f"chatcmpl-zpi{n}", "object": "chat.completion.chunk", "created": CREATED,
            "model": model, "system_fingerprint": "fp_zpi"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _data({**head, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                           "finish_reason": finish}]})

    frames = [chunk({"role": "assistant", "content": ""})]
    frames += [chunk({"reasoning_content": p}) for p in split(turn.thinking)]
    frames += [chunk({"content": p}) for p in split(turn.text)]
    for i, call in enumerate(turn.tool_calls):
        call_id = call.id or f"call_{n}_{i}"
        frames.append(chunk({"tool_calls": [{"index": i, "id": call_id, "type": "function",
                                             "function": {"name": call.name,
                                                          "arguments": ""}}]}))
        frames += [chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
                   for p in split(json.dumps(dict(call.arguments)))]
    frames.append(chunk({}, "tool_calls" if turn.tool_calls else "stop"))
    if usage:
        u = turn.usage
        prompt = (u.input_tokens + u.cache_read_tokens) if u else 0
        frames.append(_data({**head, "choices": [], "usage": {
            "prompt_tokens": prompt, "completion_tokens": u.output_tokens if u else 0,
            "total_tokens": prompt + (u.output_tokens if u else 0),
            "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens if u else 0}}}))
    frames.append(b"data: [DONE]\n\n")
    return frames


def _anthropic(turn: ScriptedTurn, model: str, n: int, split: Any) -> list[bytes]:
    u = turn.usage
    frames = [_event("message_start", {"type": "message_start", "message": {
        "id": f"msg_zpi{n}", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": u.input_tokens if u else 0, "output_tokens": 1,
                  "cache_read_input_tokens": u.cache_read_tokens if u else 0,
                  "cache_creation_input_tokens": u.cache_write_tokens if u else 0}}}),
        _event("ping", {"type": "ping"})]
    index = 0

    def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        frames.append(_event("content_block_start", {"type": "content_block_start",
                                                     "index": index, "content_block": start}))
        frames.extend(_event("content_block_delta", {"type": "content_block_delta",
                                                     "index": index, "delta": d})
                      for d in deltas)
        frames.append(_event("content_block_stop", {"type": "content_block_stop",
                                                    "index": index}))
        index += 1

    if turn.thinking:
        block({"type": "thinking", "thinking": ""},
              [{"type": "thinking_delta", "thinking": p} for p in split(turn.thinking)]
              + [{"type": "signature_delta", "signature": f"zpi-signature-{n}"}])
    if turn.text:
        block({"type": "text", "text": ""},
              [{"type": "text_delta", "text": p} for p in split(turn.text)])
    for i, call in enumerate(turn.tool_calls):
        block({"type": "tool_use", "id": call.id or f"toolu_{n}_{i}", "name": call.name,
               "input": {}},
              [{"type": "input_json_delta", "partial_json": p}
               for p in ["", *split(json.dumps(dict(call.arguments)))]])
    frames.append(_event("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use" if turn.tool_calls else "end_turn",
                  "stop_sequence": None},
        "usage": {"output_tokens": u.output_tokens if u else 0}}))
    frames.append(_event("message_stop", {"type": "message_stop"}))
    return frames


def _responses(turn: ScriptedTurn, model: str, n: int, split: Any,
               encrypted: bool) -> list[bytes]:
    """The Responses API stream: reasoning item (summary deltas), message item (text deltas),
    function_call items (argument deltas), then ``response.completed`` with the output and
    usage. Every event carries ``type`` and ``sequence_number``, as the service's do."""
    frames: list[bytes] = []
    output: list[dict[str, Any]] = []

    def send(kind: str, **fields: Any) -> None:
        frames.append(_event(kind, {"type": kind, "sequence_number": len(frames), **fields}))

    response: dict[str, Any] = {
        "id": f"resp_zpi{n}", "object": "response", "created_at": CREATED,
        "status": "in_progress", "model": model, "output": [], "usage": None,
        "store": False, "error": None, "incomplete_details": None}
    send("response.created", response=response)
    send("response.in_progress", response=response)

    def item(added: dict[str, Any], done: dict[str, Any], body: Any) -> None:
        index = len(output)
        send("response.output_item.added", output_index=index, item=added)
        body(index, added["id"])
        send("response.output_item.done", output_index=index, item=done)
        output.append(done)

    if turn.thinking:
        rs_id = f"rs_zpi{n}"
        done: dict[str, Any] = {"id": rs_id, "type": "reasoning",
                                "summary": [{"type": "summary_text", "text": turn.thinking}]}
        if encrypted:
            done["encrypted_content"] = f"{ENCRYPTED_PREFIX}{n}"

        def summary(index: int, item_id: str) -> None:
            part = {"item_id": item_id, "output_index": index, "summary_index": 0}
            send("response.reasoning_summary_part.added", **part,
                 part={"type": "summary_text", "text": ""})
            for p in split(turn.thinking):
                send("response.reasoning_summary_text.delta", **part, delta=p)
            send("response.reasoning_summary_text.done", **part, text=turn.thinking)
            send("response.reasoning_summary_part.done", **part,
                 part={"type": "summary_text", "text": turn.thinking})

        item({"id": rs_id, "type": "reasoning", "summary": []}, done, summary)
    if turn.text:
        msg_id = f"msg_zpi{n}"

        def text(index: int, item_id: str) -> None:
            part = {"item_id": item_id, "output_index": index, "content_index": 0}
            send("response.content_part.added", **part,
                 part={"type": "output_text", "text": "", "annotations": []})
            for p in split(turn.text):
                send("response.output_text.delta", **part, delta=p, logprobs=[])
            send("response.output_text.done", **part, text=turn.text, logprobs=[])
            send("response.content_part.done", **part,
                 part={"type": "output_text", "text": turn.text, "annotations": []})

        item({"id": msg_id, "type": "message", "status": "in_progress", "role": "assistant",
              "content": []},
             {"id": msg_id, "type": "message", "status": "completed", "role": "assistant",
              "content": [{"type": "output_text", "text": turn.text, "annotations": []}]}, text)
    for i, call in enumerate(turn.tool_calls):
        fc = {"id": f"fc_zpi{n}_{i}", "type": "function_call", "call_id": call.id or
              f"call_{n}_{i}", "name": call.name}
        arguments = json.dumps(dict(call.arguments))

        def deltas(index: int, item_id: str, arguments: str = arguments) -> None:
            for p in split(arguments):
                send("response.function_call_arguments.delta", item_id=item_id,
                     output_index=index, delta=p)
            send("response.function_call_arguments.done", item_id=item_id,
                 output_index=index, arguments=arguments)

        item({**fc, "status": "in_progress", "arguments": ""},
             {**fc, "status": "completed", "arguments": arguments}, deltas)
    u = turn.usage
    output_tokens = u.output_tokens if u else 0
    send("response.completed", response={**response, "status": "completed", "output": output,
                                         "usage": {
        "input_tokens": (u.input_tokens + u.cache_read_tokens) if u else 0,
        "input_tokens_details": {"cached_tokens": u.cache_read_tokens if u else 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": min(output_tokens,
                                                          len(turn.thinking.split()))},
        "total_tokens": ((u.input_tokens + u.cache_read_tokens) if u else 0) + output_tokens}})
    return frames


def _unverified_reasoning(request: Any, issued: set[str]) -> str | None:
    """Why the service would refuse the reasoning items in a Responses request's ``input``
    (stateless: each must carry encrypted content this server issued), or None."""
    items = request.get("input") if isinstance(request, dict) else None
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict) or item.get("type") != "reasoning":
            continue
        content = item.get("encrypted_content")
        if content is None:
            return (f"Item with id {item.get('id')!r} not found. Items are not persisted when "
                    "`store` is set to false. Try again with `store` set to true, or remove "
                    "this item from your input.")
        if content not in issued:
            return (f"The encrypted content for item {item.get('id')!r} could not be "
                    "verified.")
    return None


def _data(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def _event(name: str, payload: Any) -> bytes:
    return b"event: " + name.encode() + b"\n" + _data(payload)


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(pieces, 1)))
    return [text[i:i + size] for i in range(0, len(text), size)]


def _split_chars(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]
