"""Whole-process runs of the context plugins of zpi-builtins: the guard's error, the hint."""

from __future__ import annotations

import json

from tests.e2e.test_builtins import zpi


def write_script(tmp_path, turns) -> str:
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return f"scripted:{script}"


def test_the_guard_refuses_an_oversized_request_with_a_clear_error(tmp_path):
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({
        "compaction": {"enabled": False},
        "plugins": {"builtins": {"context_guard": {"max_tokens": 4000, "ratio": 0.5}}}}))
    model = write_script(tmp_path, ["never sent"])
    out = zpi(tmp_path, "run", "--model", model, "summarise " + "word " * 3000)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert "context guard: the request to scripted" in out.stderr
    assert "over the ceiling of 2,000 tokens (4,000 (max_tokens) x ratio 0.5" in out.stderr
    assert "Compact the conversation (/compact)" in out.stderr


def test_an_unknown_tool_gets_the_closest_names_and_the_disabled_plugin(tmp_path):
    model = write_script(tmp_path, [
        {"tool_calls": [{"name": "Raed", "arguments": {}},
                        {"name": "ask_user", "arguments": {}}]},
        {"text": "noted"}])
    out = zpi(tmp_path, "run", "--model", model, "-p", "no:builtins:ask",
              "--output-format", "json", "look")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"] == "noted"
    transcript = next((tmp_path / "agent" / "sessions").rglob("*.jsonl")).read_text()
    assert "unknown tool 'Raed'" in transcript and "Did you mean 'read'" in transcript
    assert "'ask_user' is provided by the plugin builtins:ask, which is blocked" in transcript
    assert "-p no:builtins:ask" in transcript


def test_past_the_threshold_a_run_ends_with_a_hand_off_document_and_a_rebuilt_context(
        tmp_path):
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"plugins": {"builtins": {
        "context_guard": {"max_tokens": 20_000},
        "auto_migrate": {"enabled": True, "threshold": 0.2, "executor": "summary",
                         "strategy": "omit"}}}}))
    document = "\n\n".join(f"## {s}\n{s} text" for s in (
        "Goal", "State", "Changed files", "Decisions", "Next steps"))
    model = write_script(tmp_path, [{"text": "the answer"},
                                    {"purpose": "handoff", "text": document}])
    out = zpi(tmp_path, "run", "--model", model, "--output-format", "json",
              "fix it " + "word " * 5000)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"] == "the answer"
    (written,) = (tmp_path / ".zpi" / "handoffs").glob("handoff-*.md")
    assert written.read_text() == document + "\n"
    transcript = next((agent / "sessions").rglob("*.jsonl")).read_text()
    assert '"type":"compaction"' in transcript.replace(" ", "")
    assert "kept in the session's transcript for audit" in transcript
    assert f"The hand-off document is {written}" in transcript
