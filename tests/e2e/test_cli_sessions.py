"""Whole-process runs: saved sessions (--resume, --continue, --no-session), the sessions
command, and the models command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXE = shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))


@pytest.fixture
def cli(tmp_path):
    agent = tmp_path / "agent"
    work = tmp_path / "work"
    work.mkdir()

    def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        environ = {k: v for k, v in os.environ.items()
                   if not k.startswith(("ZPI_", "OPENAI_", "ANTHROPIC_"))}
        environ.update({"ZPI_AGENT_DIR": str(agent), **(env or {})})
        return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=work,
                              env=environ, timeout=60)

    run.agent, run.work = agent, work  # type: ignore[attr-defined]
    return run


def script(path: Path, *texts: str) -> str:
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    return f"scripted:{path}"


def test_continue_resume_and_no_session(cli, tmp_path):
    model = script(tmp_path / "s.jsonl", "first answer")
    out = cli("run", "--model", model, "--output-format", "json", "hello")
    assert out.returncode == 0, out.stderr
    session_id = json.loads(out.stdout)["session_id"]
    out = cli("run", "--model", script(tmp_path / "t.jsonl", "second"), "--continue",
              "--output-format", "json", "more")
    assert json.loads(out.stdout)["session_id"] == session_id
    out = cli("run", "--resume", session_id, "--output-format", "json", "again")
    assert out.returncode == 0, out.stderr  # the session's last model: the second script
    assert json.loads(out.stdout)["result"] == "second"
    listing = json.loads(cli("sessions", "list", "--json").stdout)
    assert [s["session_id"] for s in listing] == [session_id]
    assert listing[0]["first_prompt"] == "hello" and listing[0]["message_count"] == 6
    out = cli("run", "--no-session", "--model", model, "--output-format", "json", "x")
    assert out.returncode == 0
    assert len(json.loads(cli("sessions", "list", "--json").stdout)) == 1


def test_session_flags_conflict_and_bad_ids_are_usage_errors(cli, tmp_path):
    model = script(tmp_path / "s.jsonl", "x")
    out = cli("run", "--model", model, "--continue", "--no-session", "x")
    assert out.returncode == 2 and "not allowed with argument" in out.stderr
    out = cli("run", "--model", model, "--continue", "--output-format", "json", "x")
    assert out.returncode == 0, out.stderr  # nothing to continue: a new session
    assert "no session to continue" in out.stderr and "started a new one" in out.stderr
    assert json.loads(cli("sessions", "list", "--json").stdout)[0]["session_id"] == \
        json.loads(out.stdout)["session_id"]
    model = script(tmp_path / "s2.jsonl", "x")
    out = cli("run", "--model", model, "--resume", "nope", "x")
    assert out.returncode == 2 and "invalid session id 'nope'" in out.stderr
    out = cli("run", "--model", model, "--resume", "../missing.jsonl", "x")
    assert out.returncode == 1 and "no session file ../missing.jsonl" in out.stderr


def test_sessions_show_rename_tag_fork_delete(cli, tmp_path):
    out = cli("run", "--model", script(tmp_path / "s.jsonl", "the answer"),
              "--output-format", "json", "the question")
    session_id = json.loads(out.stdout)["session_id"]
    assert cli("sessions", "rename", session_id, "My title").returncode == 0
    assert cli("sessions", "tag", session_id, "a", "b").returncode == 0
    shown = json.loads(cli("sessions", "show", session_id, "--json").stdout)
    assert (shown["title"], shown["tags"]) == ("My title", ["a", "b"])
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant"]
    text = cli("sessions", "show", session_id).stdout
    assert "[user] the question" in text and "[assistant] the answer" in text
    fork = cli("sessions", "fork", session_id)
    assert fork.returncode == 0, fork.stderr
    forked = fork.stdout.strip()
    assert forked != session_id
    listing = cli("sessions", "list").stdout
    assert session_id in listing and forked in listing and "My title" in listing
    assert cli("sessions", "delete", session_id).returncode == 0
    assert cli("sessions", "delete", session_id).returncode == 0  # missing: still fine
    missing = cli("sessions", "show", session_id)
    assert missing.returncode == 1 and "no session" in missing.stderr
    assert json.loads(cli("sessions", "list", "--all", "--json").stdout)[0]["session_id"] \
        == forked


def test_models_lists_the_catalog_and_credentials_without_keys(cli):
    cli.agent.mkdir(parents=True)
    (cli.agent / "settings.json").write_text(json.dumps({"model": "ds", "models": {
        "ds": {"provider": "openai", "model": "deepseek-chat",
               "base_url": "https://api.deepseek.com/v1", "api_key_env": "DEEPSEEK_API_KEY",
               "context_window": 65536, "price": {"input": 0.27, "output": 1.1}},
        "claude": {"provider": "anthropic", "model": "claude-sonnet-4-5"},
    }}))
    out = cli("models", env={"DEEPSEEK_API_KEY": "sk-secret-value"})
    assert out.returncode == 0, out.stderr
    assert "sk-secret-value" not in out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split()[:3] == ["NAME", "PROVIDER", "MODEL"]
    assert lines[1].startswith("ds *") and "yes (environment variable DEEPSEEK_API_KEY)" \
        in lines[1]
    assert "missing (environment variable ANTHROPIC_API_KEY)" in lines[2]
    rows = json.loads(cli("models", "--json").stdout)
    assert [(r["name"], r["credentials"], r["default"]) for r in rows][:2] == [
        ("ds", False, True), ("claude", False, False)]
    assert [r["source"] for r in rows][1:3] == ["settings", "built-in"]
    assert rows[0]["price"]["input"] == 0.27 and rows[0]["context_window"] == 65536


def test_models_with_a_broken_settings_file_says_where(cli):
    cli.agent.mkdir(parents=True)
    (cli.agent / "settings.json").write_text('{"models": {')
    out = cli("models")
    assert out.returncode == 0
    assert "settings.json: line 1, column 13" in out.stderr
    assert "claude-sonnet-4-5" in out.stdout  # the built-in catalog is still listed


def test_settings_can_disable_a_plugin_for_listing_and_runs(cli, tmp_path):
    cli.agent.mkdir(parents=True)
    (cli.agent / "settings.json").write_text('{"plugins": {"disabled": ["zpi.tools"]}}')
    rows = json.loads(cli("--list-plugins", "--json").stdout)
    (tools,) = [r for r in rows if r["name"] == "zpi.tools"]
    assert tools["status"] == "blocked" and "settings plugins.disabled" in tools["error"]
    model = script(tmp_path / "s.jsonl", "no tools here")
    out = cli("run", "--model", model, "--output-format", "json", "hi")
    assert out.returncode == 0, out.stderr
    (cli.agent / "settings.json").write_text('{"plugins": {"disabled": "zpi.tools"}}')
    out = cli("--list-plugins")  # a wrong type is a warning; the key falls back to []
    assert out.returncode == 0 and "setting plugins.disabled must be a list" in out.stderr


def test_permission_flags_and_denials_in_the_json_result(cli, tmp_path):
    (cli.work / "notes.txt").write_text("notes\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    turns = [{"tool_calls": [{"name": "write", "arguments": {"path": "x.txt", "content": "x"}},
                             {"name": "read", "arguments": {"path": str(tmp_path /
                                                                        "outside.txt")}},
                             {"name": "bash", "arguments": {"command": "git status"}}]},
             {"text": "done"}]
    path = tmp_path / "perm.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    out = cli("run", "--model", f"scripted:{path}", "--output-format", "json",
              "--permission-mode", "plan", "--allow", "bash(git status:*)", "go")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    # plan mode denies every side effect, even one an allow rule names
    assert [(d["tool"], d["source"]) for d in result["denials"]] == [
        ("write", "mode"), ("read", "path"), ("bash", "mode")]
    assert not (cli.work / "x.txt").exists()
    out = cli("run", "--model", f"scripted:{path}", "--output-format", "json",
              "--add-dir", str(tmp_path), "--deny", "bash(git:*)", "--permission-mode",
              "acceptEdits", "go")
    result = json.loads(out.stdout)
    assert [(d["tool"], d["source"]) for d in result["denials"]] == [("bash", "rule")]
    assert (cli.work / "x.txt").read_text() == "x"
    out = cli("run", "--model", f"scripted:{path}", "--permission-mode", "yolo", "go")
    assert out.returncode == 2 and "invalid choice: 'yolo'" in out.stderr
    out = cli("run", "--model", f"scripted:{path}", "--allow", "bash(", "go")
    assert out.returncode == 2 and "bash(" in out.stderr


def test_session_id_prefixes_show_without_none_and_delete_says_what(cli, tmp_path):
    model = script(tmp_path / "s.jsonl", "first", "second")
    assert cli("run", "--model", model, "hello").returncode == 0
    (info,) = json.loads(cli("sessions", "list", "--json").stdout)
    full, prefix = info["session_id"], info["session_id"][:8]
    shown = cli("sessions", "show", prefix)
    assert shown.returncode == 0, shown.stderr
    assert f"session_id: {full}" in shown.stdout and "None" not in shown.stdout
    assert "title:" not in shown.stdout  # no title set: the line is left out
    resumed = cli("run", "--model", model, "--resume", prefix, "again")
    assert resumed.returncode == 0, resumed.stderr
    assert "[user] again" in cli("sessions", "show", prefix).stdout
    deleted = cli("sessions", "delete", prefix)
    assert deleted.returncode == 0
    assert deleted.stdout.startswith(f"deleted session {full} (") and ".jsonl)" in deleted.stdout
    again = cli("sessions", "delete", full)
    assert again.returncode == 0 and "nothing deleted" in again.stderr


def test_an_ambiguous_session_prefix_is_a_usage_error(cli):
    from zpi_host.cli import CliUsageError
    from zpi_host.cli.sessions import match_session_id

    ids = ["0b6b1c1e-aaaa", "0b6b9999-bbbb", "7f00aaaa-cccc"]
    assert match_session_id("7f", ids) == "7f00aaaa-cccc"
    assert match_session_id("0b6b1", ids) == "0b6b1c1e-aaaa"
    assert match_session_id("zz", ids) == "zz"  # unknown: the caller's error names it
    with pytest.raises(CliUsageError, match="matches 2 sessions"):
        match_session_id("0b6b", ids)
    out = cli("sessions", "show", "0")
    assert out.returncode == 2 and "invalid session id '0'" in out.stderr


def test_a_saved_run_keeps_file_checkpoints_for_sessions_rewind(cli, tmp_path):
    """``run`` turns file checkpoints on for a saved session, so ``sessions rewind`` can put
    back what its write changed."""
    (cli.work / "plan.md").write_text("before\n")
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"tool_calls": [{"name": "read", "arguments": {
        "path": "plan.md"}}]}) + "\n" + json.dumps({"tool_calls": [{"name": "write",
        "arguments": {"path": "plan.md", "content": "after\n"}}]}) + "\n"
        + json.dumps({"text": "rewrote it"}) + "\n")
    out = cli("run", "--model", f"scripted:{path}", "--permission-mode", "acceptEdits",
              "--output-format", "json", "rewrite the plan")
    assert out.returncode == 0, out.stderr
    session_id = json.loads(out.stdout)["session_id"]
    assert (cli.work / "plan.md").read_text() == "after\n"
    points = cli("sessions", "rewind", session_id, "--json")
    assert points.returncode == 0, points.stderr
    (point,) = json.loads(points.stdout)
    assert point["prompt"] == "rewrite the plan" and point["files"] == 1
    done = cli("sessions", "rewind", session_id, point["message_id"])
    assert done.returncode == 0, done.stderr
    assert f"restored {(cli.work / 'plan.md').resolve()}" in done.stdout
    assert (cli.work / "plan.md").read_text() == "before\n"
