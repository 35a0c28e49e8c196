"""Claude plugin folders through the installed ``zpi-host`` command, as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.claude_folders import copy_plugin

EXE = shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ZPI_", "CLAUDE_"))}
    return {**base, "HOME": str(home), "ZPI_AGENT_DIR": str(tmp_path / "agent")}


def zpi(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=60)


def transcript(env: dict[str, str], session_id: str) -> list[dict]:
    found = list(Path(env["ZPI_AGENT_DIR"]).glob(f"sessions/*/{session_id}.jsonl"))
    assert len(found) == 1, found
    return [json.loads(line) for line in found[0].read_text().splitlines()]


def script(path: Path, *turns: dict) -> Path:
    path.write_text("".join(json.dumps(turn) + "\n" for turn in turns))
    return path


def test_a_plugin_command_runs_end_to_end(tmp_path, env):
    plugin = copy_plugin("placeholders", tmp_path / "plugins")
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("remember the milk\n")
    model = script(tmp_path / "s.jsonl",
                   {"tool_calls": [{"name": "write", "arguments": {
                       "path": "summary.txt", "content": "summarised\n"}}]},
                   {"text": "done"})
    out = zpi("run", "--plugin-dir", str(plugin), "--model", f"scripted:{model}",
              "--output-format", "json", "--permission-mode", "acceptEdits", "--allow",
              "bash", "/placeholders:shell two words", cwd=work, env=env)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert (result["result"], result["is_error"]) == ("done", False)
    assert (work / "summary.txt").read_text() == "summarised\n"
    records = transcript(env, result["session_id"])
    commands = [r["arguments"]["command"] for r in records if r["type"] == "tool_use"
                and r["name"] == "bash"]
    cache = Path(env["ZPI_AGENT_DIR"]) / "plugin-cache" / "claude" / "placeholders"
    assert commands[0].startswith(f"cat {cache}/") and commands[0].endswith("/data.txt")
    prompt = next(r for r in records if r["type"] == "user")["message"]["content"][0]["text"]
    assert prompt.startswith("Data: data from the plugin\nArgs: TWO WORDS\n")
    assert '<file path="notes.md">\nremember the milk\n</file>' in prompt
    snapshot = next(r for r in records if r["type"] == "snapshot")["snapshot"]
    assert "placeholders:shell" in snapshot["commands"]
    assert any(p["name"] == "claude:placeholders" and p["source"] == "claude"
               for p in snapshot["plugins"])


def test_plugin_hooks_guard_the_tools(tmp_path, env):
    pytest.importorskip("zpi_compat_claude.hooks", reason="the hook engine is not installed")
    plugin = copy_plugin("minimal", tmp_path / "plugins", "guard")
    (plugin / "hooks").mkdir()
    guard = plugin / "hooks" / "guard.sh"
    guard.write_text('#!/bin/sh\ninput=$(cat)\ncase "$input" in\n'
                     '  *secret*) echo "no secrets (${CLAUDE_PLUGIN_OPTION_LEVEL})" >&2; '
                     'exit 2;;\nesac\nexit 0\n')
    guard.chmod(0o755)
    (plugin / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Write", "hooks": [{"type": "command",
                                        "command": "${CLAUDE_PLUGIN_ROOT}/hooks/guard.sh"}]}]}}))
    (plugin / ".claude-plugin").mkdir()
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({
        "name": "guard", "userConfig": {"level": {"type": "string", "default": "strict"}}}))
    work = tmp_path / "work"
    work.mkdir()
    model = script(tmp_path / "s.jsonl",
                   {"tool_calls": [
                       {"name": "write", "arguments": {"path": "secret.txt", "content": "x"}},
                       {"name": "write", "arguments": {"path": "ok.txt", "content": "y"}}]},
                   {"text": "done"})
    out = zpi("run", "--plugin-dir", str(plugin), "--model", f"scripted:{model}",
              "--output-format", "json", "--permission-mode", "acceptEdits", "write them",
              cwd=work, env=env)
    assert out.returncode == 0, out.stderr
    assert (work / "ok.txt").read_text() == "y" and not (work / "secret.txt").exists()
    records = transcript(env, json.loads(out.stdout)["session_id"])
    texts = json.dumps([r for r in records if r["type"] == "tool_result"])
    assert "no secrets (strict)" in texts


def test_list_plugins_shows_folders_and_failures(tmp_path, env):
    good = copy_plugin("full-manifest", tmp_path / "plugins")
    bad = copy_plugin("bad-json", tmp_path / "plugins")
    out = zpi("--list-plugins", "--plugin-dir", str(good), "--plugin-dir", str(bad), "--json",
              cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    found = {row["name"]: row for row in json.loads(out.stdout)}
    row = found["claude:full-kit"]
    assert (row["source"], row["status"], row["version"]) == ("claude", "ok", "2.1.0")
    assert row["contributes"]["commands"] == ["full-kit:db:migrate", "full-kit:deploy",
                                              "full-kit:one"]
    assert row["contributes"]["skills"] == ["full-kit:base", "full-kit:extra"]
    broken = found["claude:bad-json"]
    assert broken["status"] == "failed" and "invalid JSON at line 4, column 3" in broken["error"]
    table = zpi("--list-plugins", "--plugin-dir", str(bad), cwd=tmp_path, env=env)
    assert "failed: " in table.stdout and "bad-json/.claude-plugin/plugin.json" in table.stdout
    strict = zpi("--list-plugins", "--strict", "--plugin-dir", str(bad), cwd=tmp_path, env=env)
    assert strict.returncode == 1


def test_listing_parses_no_markdown_once_cached(tmp_path, env):
    plugin = copy_plugin("placeholders", tmp_path / "plugins")
    code = ("import sys; from zpi_host.cli import main; "
            f"main(['--list-plugins', '--json', '--plugin-dir', {str(plugin)!r}]); "
            "print(sorted(m for m in ('yaml', 'frontmatter', 'httpx', 'anyio', 'cattrs') "
            "if m in sys.modules), file=sys.stderr)")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           cwd=tmp_path, env=env, timeout=60) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), runs[0].stderr
    assert runs[0].stderr.strip() == "['frontmatter', 'yaml']"  # the first load parses
    assert runs[1].stderr.strip() == "[]"


def test_listing_a_folder_loads_no_openssl(tmp_path, env):
    """Hashing a folder's path and file signatures uses CPython's own SHA-256: listing does
    not load OpenSSL's binding (``_hashlib``, a few ms), with every built-in service on."""
    plugin = copy_plugin("placeholders", tmp_path / "plugins")
    code = ("import sys; from zpi_host.cli import main; "
            "main(['--list-plugins', '--json', '--plugin-dir', "
            f"{str(plugin)!r}]); "
            "print(sorted(m for m in ('_hashlib', 'hashlib', 'ssl') if m in sys.modules), "
            "file=sys.stderr)")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           cwd=tmp_path, env=env, timeout=60) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), runs[0].stderr
    assert runs[1].stderr.strip() == "[]"  # the second listing, from the folder's caches


def test_listing_shows_what_a_folder_cannot_do_as_warnings(tmp_path, env):
    plugin = copy_plugin("servers", tmp_path)
    skills = copy_plugin("one-skill", tmp_path)
    rows = json.loads(zpi("--list-plugins", "--json", "--plugin-dir", str(plugin),
                          "--plugin-dir", str(skills), cwd=tmp_path, env=env).stdout)
    by_name = {row["name"]: row for row in rows}
    servers = by_name["claude:servers"]
    assert servers["status"] == "ok"
    assert any("LSP servers are not supported" in w for w in servers["warnings"])
    (skill_row,) = [row for name, row in by_name.items()
                    if name.startswith("claude:") and name != "claude:servers"]
    sources = skill_row["contributes"]["resources"]
    assert all(source.startswith("/") for source in sources)  # folders, not object reprs
    table = zpi("--list-plugins", "--plugin-dir", str(plugin), cwd=tmp_path, env=env).stdout
    assert "    warning: LSP servers are not supported" in table


def test_listing_names_a_symlink_leading_out_of_a_plugin(tmp_path, env):
    plugin = copy_plugin("minimal", tmp_path / "plugins")
    secret = tmp_path / "secret.txt"
    secret.write_text("not the plugin's")
    os.symlink(secret, plugin / "leak.txt")
    rows = json.loads(zpi("--list-plugins", "--json", "--plugin-dir", str(plugin),
                          cwd=tmp_path, env=env).stdout)
    (row,) = [row for row in rows if row["name"] == "claude:minimal"]
    assert row["status"] == "ok"
    assert any(f"{plugin / 'leak.txt'}: skipped: a symlink that leads outside" in w
               for w in row["warnings"]), row["warnings"]
    copies = list((Path(env["ZPI_AGENT_DIR"]) / "plugin-cache" / "claude" / "minimal").glob(
        "*/leak.txt"))
    assert copies == []


def test_a_hook_system_message_is_shown_to_the_user_only(tmp_path, env):
    """``systemMessage``: a ``system`` event in stream-json, a line on stderr in text mode,
    never in what the model is sent."""
    pytest.importorskip("zpi_compat_claude.hooks", reason="the hook engine is not installed")
    plugin = copy_plugin("minimal", tmp_path / "plugins", "teller")
    (plugin / "hooks").mkdir()
    (plugin / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"PostToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command":
                                       "echo '{\"systemMessage\": \"lint is clean\"}'"}]}]}}))
    work = tmp_path / "work"
    work.mkdir()
    turns = ({"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
             {"text": "done"})
    model = script(tmp_path / "s.jsonl", *turns)
    out = zpi("run", "--plugin-dir", str(plugin), "--model", f"scripted:{model}",
              "--output-format", "stream-json", "--allow", "bash", "go", cwd=work, env=env)
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert {"type": "system", "message": "lint is clean", "source": "claude:teller"} in events
    assert not any(e["type"] == "warning" for e in events)
    records = transcript(env, events[-1]["session_id"])
    assert "lint is clean" not in json.dumps([r for r in records if r["type"] != "event"])
    text = zpi("run", "--plugin-dir", str(plugin), "--model",
               f"scripted:{script(tmp_path / 't.jsonl', *turns)}", "--allow", "bash", "go",
               cwd=work, env=env)
    assert text.returncode == 0, text.stderr
    assert "claude:teller: lint is clean" in text.stderr.splitlines()
    assert text.stdout.strip() == "done"


def test_a_commands_allowed_tools_let_its_blocks_run_in_the_cli(tmp_path, env):
    """As commit-commands' /commit does: `` !`git status` `` with ``allowed-tools:
    Bash(git status:*)`` runs in a non-interactive run without --allow; a ```` ```! ````
    block too; the model's own bash call is still refused."""
    plugin = tmp_path / "plugins" / "ctx"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "ctx"}')
    (plugin / "commands").mkdir()
    (plugin / "commands" / "show.md").write_text(
        "---\nallowed-tools: Bash(echo:*), Bash(pwd)\n---\n"
        "Said: !`echo from-the-block`\n```!\npwd\necho fenced\n```\nDone.\n")
    work = tmp_path / "work"
    work.mkdir()
    model = script(tmp_path / "s.jsonl",
                   {"tool_calls": [{"name": "bash", "arguments": {"command": "echo model"}}]},
                   {"text": "finished"})
    out = zpi("run", "--plugin-dir", str(plugin), "--model", f"scripted:{model}",
              "--output-format", "json", "/ctx:show", cwd=work, env=env)
    assert out.returncode == 0, out.stderr
    records = transcript(env, json.loads(out.stdout)["session_id"])
    prompt = next(r for r in records if r["type"] == "user")["message"]["content"][0]["text"]
    assert prompt.rstrip("\n") == f"Said: from-the-block\n{work}\nfenced\nDone.", prompt
    result = next(r for r in records if r["type"] == "tool_result")
    assert result["message"]["isError"] is True, result
