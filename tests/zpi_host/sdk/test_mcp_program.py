"""A program written for claude-agent-sdk's in-process MCP servers (programs/mcp_calculator.py,
with the import line changed) runs as its own process against the loopback model server: its
handlers run inside that process, through query() and ClaudeSDKClient."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PROGRAM = Path(__file__).parent / "programs" / "mcp_calculator.py"


def test_the_calculator_program_runs_its_tools_in_process(zpi_env: Any, zpi_model_server: Any,
                                                          tmp_path: Path) -> None:
    zpi_model_server.add_turns(
        {"tool_calls": [{"name": "mcp__calc__add", "arguments": {"a": 15, "b": 27}}]},
        "15 + 27 = 42",
        {"tool_calls": [{"name": "mcp__calc__divide", "arguments": {"a": 100, "b": 0}},
                        {"name": "mcp__calc__multiply", "arguments": {"a": 6, "b": 7}}]},
        "100 / 0 is undefined; 6 * 7 = 42")
    env = {**os.environ, "ZPI_DISABLE_PLUGIN_AUTOLOAD": "1", "ZPI_MODEL": "anthropic:test-model",
           "ANTHROPIC_BASE_URL": zpi_model_server.base_url, "ANTHROPIC_API_KEY": "sk-ant-test"}
    done = subprocess.run([sys.executable, str(PROGRAM), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    calls = lines[-1]
    assert [c["tool"] for c in calls["calls"]] == ["add", "divide", "multiply"]
    assert {c["pid"] for c in calls["calls"]} == {calls["pid"]}  # no other process ran them
    assert calls["calls"][0]["args"] == {"a": 15, "b": 27}
    inits = [m for m in lines if m["type"] == "SystemMessage"]
    assert inits and all(m["mcp_servers"] == [{"name": "calc", "status": "connected",
                                               "source": "sdk"}] for m in inits)
    results = [r for m in lines if m["type"] == "UserMessage" for r in m["results"]]
    assert "15 + 27 = 42" in str(results[0]["content"]) and not results[0]["is_error"]
    assert results[1]["is_error"] and "Division by zero" in str(results[1]["content"])
    assert "6 * 7 = 42" in str(results[2]["content"]) and not results[2]["is_error"]
    assert [m["result"] for m in lines if m["type"] == "ResultMessage"] == [
        "15 + 27 = 42", "100 / 0 is undefined; 6 * 7 = 42"]
    [status] = [m for m in lines if m["type"] == "status"]
    assert [s["status"] for s in status["servers"]] == ["connected"]
    # the model got the results: the second request carries the add's result
    assert "15 + 27 = 42" in json.dumps(zpi_model_server.requests[1].json)
