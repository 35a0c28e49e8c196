"""The hooks of the official marketplace's plugins, loaded unchanged from
tests/fixtures/claude_plugins_official, have the effect their source says they have, in a
session against the scripted model:

- explanatory-output-style / learning-output-style: the SessionStart hook adds the style's
  instructions as context the model sees (hooks-handlers/session-start.sh);
- ralph-loop / ralph-wiggum: ``/ralph-loop`` runs setup-ralph-loop.sh (its ```` ```! ````
  block, allowed by the command's ``allowed-tools``), and the Stop hook feeds the same prompt
  back until the completion promise appears or ``--max-iterations`` is reached;
- hookify: rules in ``.claude/hookify.*.local.md`` block (PreToolUse deny) or warn
  (``systemMessage``) on bash commands and file edits, and a ``stop`` rule reading the
  transcript blocks the stop until the transcript shows tests were run;
- security-guidance: the PostToolUse hook warns the model (``additionalContext``) about a
  risky pattern in a file it wrote, and stays quiet about a safe one.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from helpers.cli import EXE, clean_environment
from helpers.marketplace import FIXTURES

from zpi_host.providers.messages import ToolResultMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio

OFFICIAL = FIXTURES / "claude-plugins-official" / "plugins"
CLAUDE_CODE = FIXTURES / "claude-code" / "plugins"
needs_jq = pytest.mark.skipif(shutil.which("jq") is None or shutil.which("perl") is None,
                              reason="ralph-loop's scripts need jq and perl")


def bash(command: str) -> dict:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


def write(path: str, content: str) -> dict:
    return {"tool_calls": [{"name": "write", "arguments": {"path": path, "content": content}}]}


def request_text(request) -> str:
    """Everything a request shows the model: system prompt and every message's text."""
    parts = [request.system_prompt or ""]
    for message in request.messages:
        text = getattr(message, "text_content", None) or getattr(message, "text", None)
        if not isinstance(text, str):
            text = " ".join(getattr(c, "text", "") for c in getattr(message, "content", ()))
        parts.append(text)
    return "\n".join(parts)


#: session -> plugin -> the messages its hooks showed, read before the session's dispose
#: releases the plugin host (and its records)
SHOWN: dict[int, dict[str, list[str]]] = {}


def messages_of(session, plugin: str) -> list[str]:
    """The ``systemMessage`` texts plugin ``plugin``'s hooks showed the user."""
    return SHOWN[id(session)][plugin]


def keep_messages(session) -> None:
    SHOWN[id(session)] = {
        record.name: [d.message for d in getattr(record.plugin, "diagnostics", ())
                      if d.level == "message"]
        for record in session.host.records}


def workspace(tmp_path):
    work = tmp_path / "work"
    (work / ".claude").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    return work


async def run(work, folder, model, prompt, **options):
    session = await create_session(model="t:m", provider=model, cwd=work,
                                   plugin_dirs=[folder], **options)
    try:
        result = await session.run(prompt)
    finally:
        keep_messages(session)
        await session.dispose()
    return session, result


# ---------------------------------------------------------------- output styles


def style_context(folder) -> str:
    """The ``additionalContext`` session-start.sh prints (its heredoc, read from the script
    itself so the test follows the plugin's text)."""
    script = (folder / "hooks-handlers" / "session-start.sh").read_text()
    heredoc = re.search(r"<< 'EOF'\n(.*?)\nEOF", script, re.S)
    assert heredoc is not None
    return json.loads(heredoc.group(1))["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("folder", [OFFICIAL / "explanatory-output-style",
                                    OFFICIAL / "learning-output-style",
                                    CLAUDE_CODE / "explanatory-output-style",
                                    CLAUDE_CODE / "learning-output-style"],
                         ids=lambda f: f"{f.parents[1].name}/{f.name}")
async def test_the_output_style_hooks_add_their_instructions(zpi_env, tmp_path, folder):
    context = style_context(folder)
    assert "output style mode" in context
    model = ScriptedModel(["hello", "again"])
    work = tmp_path / "work"
    work.mkdir()
    session = await create_session(model="t:m", provider=model, cwd=work,
                                   plugin_dirs=[folder])
    try:
        await session.run("hi")
        await session.run("more")
    finally:
        await session.dispose()
    assert context in request_text(model.requests[0])
    # once per session, as SessionStart: the second prompt does not add it again
    assert request_text(model.requests[1]).count(context) == 1


# ---------------------------------------------------------------- ralph loop


@needs_jq
@pytest.mark.parametrize("folder", [OFFICIAL / "ralph-loop", CLAUDE_CODE / "ralph-wiggum"],
                         ids=lambda f: f.name)
async def test_ralph_loop_feeds_the_prompt_back_until_the_promise(zpi_env, tmp_path, folder):
    work = workspace(tmp_path)
    plugin = folder.name
    model = ScriptedModel(["first try", "second try",
                           "third try <promise>FIXED</promise>", "never sent"])
    # "ask", the CLI's mode without a terminal: only the command's allowed-tools
    # (Bash(${CLAUDE_PLUGIN_ROOT}/scripts/setup-ralph-loop.sh:*)) let its block run
    session, result = await run(
        work, folder, model,
        f"/{plugin}:ralph-loop Fix the flaky test --completion-promise FIXED "
        "--max-iterations 5", permission_mode="ask")
    first = request_text(model.requests[0])
    assert "Ralph loop activated" in first and "```!" not in first
    assert len(model.requests) == 3
    for request in model.requests[1:]:
        assert request_text(request).endswith("Fix the flaky test")
    assert "FIXED" in result.result
    assert not (work / ".claude" / "ralph-loop.local.md").exists()  # the hook removed it
    shown = messages_of(session, f"claude:{plugin}")
    assert [m.split(" |")[0] for m in shown] == ["🔄 Ralph iteration 2",
                                                "🔄 Ralph iteration 3"]


@needs_jq
def test_ralph_loop_through_the_cli(tmp_path):
    """``zpi-host run`` with the scripted model: the loop runs without a terminal (the
    command's allowed-tools grant its setup script) and the iterations are shown."""
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    script = tmp_path / "turns.jsonl"
    script.write_text("\n".join(json.dumps({"text": t}) for t in (
        "first try", "second try", "done <promise>FIXED</promise>")) + "\n")
    done = subprocess.run(
        [EXE, "run", "--cwd", str(work), "--model", f"scripted:{script}",
         "--plugin-dir", str(OFFICIAL / "ralph-loop"),
         "/ralph-loop:ralph-loop Fix it --completion-promise FIXED --max-iterations 5"],
        capture_output=True, text=True, cwd=tmp_path, env=clean_environment(tmp_path),
        timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "denied" not in done.stderr, done.stderr
    assert "Ralph iteration 2" in done.stderr and "Ralph iteration 3" in done.stderr
    assert "<promise>FIXED</promise>" in done.stdout
    assert not (work / ".claude" / "ralph-loop.local.md").exists()


@needs_jq
async def test_ralph_loop_stops_at_max_iterations(zpi_env, tmp_path):
    work = workspace(tmp_path)
    model = ScriptedModel(["one", "two", "three", "four"])
    await run(work, OFFICIAL / "ralph-loop", model,
              "/ralph-loop:ralph-loop Keep going --max-iterations 2")
    assert len(model.requests) == 2
    assert not (work / ".claude" / "ralph-loop.local.md").exists()


@needs_jq
async def test_cancel_ralph_reads_the_state_file(zpi_env, tmp_path):
    """/cancel-ralph's ``!`` block tests for the state file and the model is told."""
    work = workspace(tmp_path)
    model = ScriptedModel(["ok"])
    await run(work, OFFICIAL / "ralph-loop", model, "/ralph-loop:cancel-ralph")
    assert "ralph-loop.local.md" in request_text(model.requests[0])


# ---------------------------------------------------------------- hookify


def hookify_rules(work, folder, *names: str) -> None:
    """Copy hookify's example rules into the project, as its README says to."""
    for name in names:
        shutil.copy(folder / "examples" / f"{name}.local.md",
                    work / ".claude" / f"hookify.{name}.local.md")


async def test_hookify_rules_block_and_warn(zpi_env, tmp_path):
    folder = OFFICIAL / "hookify"
    work = workspace(tmp_path)
    (work / "build").mkdir()
    (work / "build" / "keep.txt").write_text("x")
    (work / "app.js").write_text("let a = 1\n")
    hookify_rules(work, folder, "dangerous-rm", "console-log-warning",
                  "sensitive-files-warning")
    model = ScriptedModel([
        bash("rm -rf build"),
        {"tool_calls": [{"name": "read", "arguments": {"path": "app.js"}}]},
        {"tool_calls": [{"name": "edit", "arguments": {"path": "app.js", "edits": [
            {"old_text": "let a = 1", "new_text": "console.log(a)"}]}}]},
        write(".env", "TOKEN=1\n"),
        write("notes.txt", "plain\n"),
        "done"])
    session, _ = await run(work, folder, model, "clean up", permission_mode="bypass")
    results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    assert results[0].is_error and "PreToolUse" in results[0].content[0].text
    assert (work / "build" / "keep.txt").exists()  # the rm never ran
    assert not any(r.is_error for r in results[1:]), [r.content[0].text for r in results]
    assert (work / "app.js").read_text() == "console.log(a)\n"
    shown = messages_of(session, "claude:hookify")
    assert any("[block-dangerous-rm]" in m for m in shown)
    assert sum("[warn-console-log]" in m for m in shown) >= 1
    assert sum("[warn-sensitive-files]" in m for m in shown) >= 1
    assert not any("Hookify error" in m or "import error" in m for m in shown), shown
    tags = ("**[block-dangerous-rm]**", "**[warn-console-log]**", "**[warn-sensitive-files]**")
    assert all(m.startswith(tags) for m in shown), shown  # nothing about notes.txt


async def test_a_hookify_stop_rule_reads_the_transcript(zpi_env, tmp_path):
    """A ``stop`` rule on the ``transcript`` field (require-tests-stop's shape) blocks the stop
    until the transcript (Claude Code's JSONL at ``transcript_path``) holds the text. The
    shipped example cannot pass: its ``not_contains`` tests the literal text
    ``npm test|pytest|cargo test`` (hookify's operator is a substring test), so it blocks
    every stop in Claude Code too; this rule uses one word."""
    folder = OFFICIAL / "hookify"
    work = workspace(tmp_path)
    (work / ".claude" / "hookify.require-tests.local.md").write_text(
        "---\nname: require-tests-run\nenabled: true\nevent: stop\naction: block\n"
        "conditions:\n  - field: transcript\n    operator: not_contains\n"
        "    pattern: RUN-THE-SUITE\n---\n\n**Tests not detected in transcript!**\n")
    model = ScriptedModel(["all done", bash("echo RUN-THE-SUITE"), "now really done",
                           "never sent"])
    _, result = await run(work, folder, model, "fix it", permission_mode="bypass")
    assert len(model.requests) == 3
    assert "Tests not detected" in request_text(model.requests[1])
    assert result.result == "now really done"


async def test_claude_codes_older_hookify_copy_fails_open(zpi_env, tmp_path):
    """claude-code's copy of hookify imports ``hookify.core`` from the folder above
    ``${CLAUDE_PLUGIN_ROOT}``, which holds no ``hookify/`` in a frozen copy (nor in Claude
    Code's own plugin cache, ``<plugin>/<version>/``); its scripts then allow everything
    and say why, as they are written to. The official repository's copy imports from the
    plugin root and works (above)."""
    folder = CLAUDE_CODE / "hookify"
    work = workspace(tmp_path)
    (work / "build").mkdir()
    hookify_rules(work, folder, "dangerous-rm")
    model = ScriptedModel([bash("rm -rf build"), "done"])
    session, _ = await run(work, folder, model, "clean up", permission_mode="bypass")
    assert not (work / "build").exists()
    assert any("Hookify import error: No module named 'hookify'" in m
               for m in messages_of(session, "claude:hookify"))


# ---------------------------------------------------------------- security-guidance


def quiet_bootstrap(tmp_path, monkeypatch):
    """security-guidance's SessionStart builds a venv and pip-installs claude-agent-sdk
    unless another session is doing it: its own sentinel file says so (no network here)."""
    state = tmp_path / "sg-state"
    state.mkdir()
    (state / "agent-sdk-venv.building").write_text("")
    monkeypatch.setenv("SECURITY_WARNINGS_STATE_DIR", str(state))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


@pytest.mark.parametrize("folder", [OFFICIAL / "security-guidance",
                                    CLAUDE_CODE / "security-guidance"],
                         ids=lambda f: f.parents[1].name)
async def test_security_guidance_warns_the_model_about_a_risky_edit(zpi_env, tmp_path,
                                                                  monkeypatch, folder):
    quiet_bootstrap(tmp_path, monkeypatch)
    work = workspace(tmp_path)
    model = ScriptedModel([write("calc.py", "def run(s):\n    return eval(s)\n"),
                           write("safe.py", "def run(s):\n    return int(s)\n"),
                           "done"])
    await run(work, folder, model, "add a calculator", permission_mode="bypass")
    after_risky, after_safe = request_text(model.requests[1]), request_text(model.requests[2])
    assert "eval() executes arbitrary code" in after_risky
    assert after_safe.count("eval() executes arbitrary code") == after_risky.count(
        "eval() executes arbitrary code")  # nothing new for the safe file


