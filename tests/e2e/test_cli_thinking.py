"""``zpi-host run`` shows a model's thinking: stream-json carries it (the deltas, and the
signed block in the message), against the Anthropic loopback server."""

from __future__ import annotations

import json

from zpi_host.testing import ModelServer

from .test_cli_providers import KEY, run


def test_stream_json_carries_the_thinking_with_its_signature(tmp_path):
    turns = [{"thinking": "The user greets me; greet back.", "text": "Hello!"},
             {"text": "Greeting"}]  # the title request of builtins:title
    with ModelServer(turns) as server:
        out = run(tmp_path, "--model", "anthropic:claude-test", "--base-url", server.base_url,
                  "--output-format", "stream-json", "hi",
                  env_extra={"ANTHROPIC_API_KEY": KEY})
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    thinking = "".join(e["text"] for e in events if e["type"] == "reasoning_delta")
    assert thinking == "The user greets me; greet back."
    (end,) = [e for e in events if e["type"] == "message_end"]
    block = end["message"]["content"][0]
    assert (block["type"], block["thinking"], block["signature"]) == (
        "thinking", "The user greets me; greet back.", "zpi-signature-1")
    assert events[-1]["type"] == "result" and events[-1]["result"] == "Hello!"
