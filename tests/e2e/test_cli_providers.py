"""``zpi-host run`` with real HTTP providers against the loopback model server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zpi_host.testing import ModelServer

EXE = shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))
KEY = "sk-e2e-SECRET-0001"


def run(tmp_path: Path, *args: str, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ZPI_") and k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    home = tmp_path / "home"
    env.update({"HOME": str(home), "ZPI_AGENT_DIR": str(home / ".zpi/agent"), **env_extra})
    return subprocess.run([EXE, "run", *args], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=60)


@pytest.mark.parametrize("fmt, variable", [("openai", "OPENAI_API_KEY"),
                                           ("anthropic", "ANTHROPIC_API_KEY")])
def test_run_against_the_loopback_server(tmp_path, fmt, variable):
    (tmp_path / "todo.txt").write_text("buy milk\n")
    turns = [
        {"tool_calls": [{"name": "read", "arguments": {"path": "todo.txt"}}],
         "usage": {"input_tokens": 500, "output_tokens": 20, "cache_read_tokens": 100}},
        {"text": "You need to buy milk.", "usage": {"input_tokens": 700, "output_tokens": 9}},
        {"text": "Shopping list check"},  # the title request of builtins:title
    ]
    with ModelServer(turns) as server:
        out = run(tmp_path, "--model", f"{fmt}:gpt-test", "--base-url", server.base_url,
                  "--output-format", "json", "what is on my list?",
                  env_extra={variable: KEY})
        requests = list(server.requests)
    assert out.returncode == 0, out.stderr
    assert KEY not in out.stdout + out.stderr
    result = json.loads(out.stdout)
    assert (result["result"], result["num_turns"]) == ("You need to buy milk.", 2)
    usage = {"input_tokens": 1200, "output_tokens": 29, "cache_read_input_tokens": 100,
             "cache_creation_input_tokens": 0}
    assert result["usage"] == usage
    model_usage = result["model_usage"][f"{fmt}/gpt-test"]
    assert {k: model_usage[k] for k in usage} == usage
    assert len(requests) == 3
    assert "You name conversations" in json.dumps(requests[2].json)
    sent = requests[0].headers.get("authorization") or requests[0].headers.get("x-api-key")
    assert KEY in sent
    assert "buy milk" in json.dumps(requests[1].json["messages"][-1])
    (transcript,) = (tmp_path / "home/.zpi/agent/sessions").rglob("*.jsonl")
    assert "buy milk" in transcript.read_text() and KEY not in transcript.read_text()
    assert '"title":"Shopping list check"' in transcript.read_text()


def test_a_refused_key_fails_the_run_without_showing_it(tmp_path):
    with ModelServer() as server:
        server.fail_next(401)
        out = run(tmp_path, "--model", "openai:gpt-test", "--base-url", server.base_url,
                  "hello", env_extra={"OPENAI_API_KEY": KEY})
    assert out.returncode == 1
    assert "environment variable OPENAI_API_KEY was refused" in out.stderr
    assert KEY not in out.stdout + out.stderr and "Traceback" not in out.stderr


def test_a_bad_base_url_is_a_usage_error(tmp_path):
    out = run(tmp_path, "--model", "openai:gpt-test", "--base-url", "localhost:1", "hello",
              env_extra={"OPENAI_API_KEY": KEY})
    assert out.returncode == 2 and "must start with http:// or https://" in out.stderr


def test_openai_responses_from_the_environment_keeps_reasoning_across_a_resume(tmp_path):
    """``OPENAI_API_KEY`` + ``OPENAI_BASE_URL`` and ``--model openai-responses:gpt-5``, no
    settings file: a tool call, then ``--continue`` in a new process; every request after
    the first carries the earlier reasoning items unchanged (the server refuses others)."""
    (tmp_path / "todo.txt").write_text("buy milk\n")
    turns = [
        {"thinking": "Read the list first.",
         "tool_calls": [{"name": "read", "arguments": {"path": "todo.txt"}}],
         "usage": {"input_tokens": 500, "output_tokens": 20, "cache_read_tokens": 100}},
        {"text": "You need to buy milk.", "usage": {"input_tokens": 700, "output_tokens": 9}},
        {"text": "Shopping list check"},  # the title request of builtins:title
        {"text": "Still milk.", "usage": {"input_tokens": 900, "output_tokens": 3}},
    ]
    with ModelServer(turns) as server:
        env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.base_url}
        out = run(tmp_path, "--model", "openai-responses:gpt-5", "--output-format", "json",
                  "what is on my list?", env_extra=env)
        assert out.returncode == 0, out.stderr
        again = run(tmp_path, "--continue", "--output-format", "json", "and now?",
                    env_extra=env)
        requests = list(server.requests)
    assert again.returncode == 0, again.stderr
    result = json.loads(out.stdout)
    assert (result["result"], result["num_turns"]) == ("You need to buy milk.", 2)
    assert result["usage"]["cache_read_input_tokens"] == 100
    assert result["usage"]["input_tokens"] == 1200
    assert json.loads(again.stdout)["result"] == "Still milk."
    assert all(r.path == "/v1/responses" for r in requests)
    assert requests[0].headers["authorization"] == f"Bearer {KEY}"
    item = {"id": "rs_zpi1", "type": "reasoning", "encrypted_content": "gAAAAzpi-encrypted-1",
            "summary": [{"type": "summary_text", "text": "Read the list first."}]}
    assert item in requests[1].json["input"]
    assert requests[1].json["input"][-1]["type"] == "function_call_output"
    assert item in requests[-1].json["input"] and requests[-1].json["model"] == "gpt-5"
    assert KEY not in out.stdout + out.stderr + again.stdout + again.stderr
