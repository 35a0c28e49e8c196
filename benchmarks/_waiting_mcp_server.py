"""A minimal MCP server over stdio that waits instead of computing: ``python
_waiting_mcp_server.py SECONDS``.

It speaks the protocol's start-up as any stdio server does (``initialize`` answered with its
capabilities and ``serverInfo``, ``notifications/initialized``, ``tools/list``), offers one tool
(``echo``) and answers ``ping``, but imports only the standard library and sleeps ``SECONDS``
before it reads its first message: a server that takes that long to initialise without
spending CPU on it. The start-up benchmark uses it because the tests' server (the ``mcp``
package's server API) spends over a second of CPU importing its stack, and three of those on
a shared 2-core machine measure the machine, not whether the host starts them in parallel.
"""

from __future__ import annotations

import json
import sys
import time

TOOLS = [{"name": "echo", "description": "Say the text back.",
          "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                          "required": ["text"]},
          "annotations": {"readOnlyHint": True}}]


def answer(method: str, params: dict) -> dict:
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "waiting-server", "version": "1.0"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        text = (params.get("arguments") or {}).get("text", "")
        return {"content": [{"type": "text", "text": f"echo: {text}"}], "isError": False}
    if method == "ping":
        return {}
    raise LookupError(method)


def main() -> None:
    time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 0.0)
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue  # a notification or a response: nothing to answer
        reply: dict = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            reply["result"] = answer(message["method"], message.get("params") or {})
        except LookupError:
            reply["error"] = {"code": -32601, "message": f"no method {message['method']}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
