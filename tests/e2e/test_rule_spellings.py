"""Whole-process runs: a rule in Claude Code's spelling (``Bash(rm:*)``, ``Read(.env)``)
stops the kernel's ``bash`` and ``read`` in the CLI, from the user's settings or ``--deny``."""

from __future__ import annotations

import json

from helpers.cli import zpi


def _script(tmp_path, *turns):
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return f"scripted:{path}"


def test_claude_spelled_rules_deny_the_kernel_tools_in_the_cli(tmp_path):
    (tmp_path / "x").write_text("keep me\n")
    (tmp_path / ".env").write_text("TOKEN=hunter2\n")
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps(
        {"permissions": {"deny": ["Read(.env)"]}}))
    model = _script(tmp_path, {"tool_calls": [
        {"name": "bash", "arguments": {"command": "rm -f x"}},
        {"name": "read", "arguments": {"path": ".env"}},
        {"name": "bash", "arguments": {"command": "echo fine"}}]}, {"text": "done"})
    out = zpi(tmp_path, "run", "--model", model, "--output-format", "json",
              "--permission-mode", "bypass", "--deny", "Bash(rm:*)", "go")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert [(d["tool"], d["source"]) for d in result["denials"]] == [
        ("bash", "rule"), ("read", "rule")]
    assert (tmp_path / "x").read_text() == "keep me\n"
    assert "names no tool" not in out.stderr  # Bash and Read name bash and read
