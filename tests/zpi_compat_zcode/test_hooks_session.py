"""ZCode hooks inside real sessions: the corpus' ``hooks-zc`` folder and config files loaded by
the ``zcode`` adapter, a scripted model, real tools and real hook processes. Checks what the
model is given and what the hooks saw (their stdin, argv and environment)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.contexts import contexts
from helpers.zcode import copy_plugin, load_host, user_config, workspace_config, zcode_settings

from zpi_host.providers.messages import ToolResultMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def bash(command: str) -> dict:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


def results(session) -> list[ToolResultMessage]:
    return [m for m in session.messages if isinstance(m, ToolResultMessage)]


def seen(agent_dir: Path, name: str = "hooks-zc") -> list[dict]:
    path = agent_dir / "plugin-data" / "zcode" / name / "seen.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


async def session_with(tmp_path: Path, workspace: Path, turns: list, **zcode):
    plugin = copy_plugin("hooks-zc", tmp_path / "plugins")
    host = load_host(zcode_settings([plugin], **zcode), workspace)
    model = ScriptedModel(turns)
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host)
    return session, model, plugin


async def test_every_event_as_zcode_runs_it(zpi_env, workspace, tmp_path):
    session, model, _ = await session_with(tmp_path, workspace, [
        bash("rm -rf build"), bash("echo hello"), bash("exit 3"), "first", "second", "third",
        "fourth", "never"])
    try:
        result = await session.run("go")
    finally:
        await session.dispose()
    # Stop blocked every time: ZCode allows 3 continuations, then the run stops
    assert result.result == "fourth" and not result.is_error
    assert len(model.requests) == 7  # the turn after a 4th continuation is never asked for
    said = contexts(session)
    assert "zc-start: the codename is KESTREL" in said  # top-level additionalContext
    assert "zc-prompt: answer briefly" in said
    assert "zc-post: output checked" in said  # top-level additional_context
    assert "zc-fail: the command failed" in said
    assert not any("plain-start-output" in text for text in said)  # never reaches the model
    denied, echoed, failed = results(session)
    assert denied.is_error and "zc-guard: rm -rf is not allowed" in denied.content[0].text
    assert echoed.content[0].text.strip() == "hello"  # PostToolUse cannot replace it
    assert failed.is_error
    records = seen(zpi_env.agent_dir)
    events = [r["event"] for r in records]
    # a call denied by a hook is not a failure: no PostToolUseFailure for it
    assert events == ["SessionStart", "UserPromptSubmit", "PreToolUse",
                      "PreToolUse", "PostToolUse", "PreToolUse", "PostToolUseFailure",
                      "Stop", "Stop", "Stop", "Stop"]
    stops = [r["input"] for r in records if r["event"] == "Stop"]
    assert [s["stop_hook_active"] for s in stops] == [False, True, True, True]
    assert [s["responseText"] for s in stops] == ["first", "second", "third", "fourth"]
    assert [s["last_assistant_message"] for s in stops] == ["first", "second", "third",
                                                             "fourth"]
    first = records[0]["input"]
    for snake, camel in (("session_id", "sessionId"), ("hook_event_name", "hookEventName"),
                         ("transcript_path", "transcriptPath"), ("cwd", "cwd")):
        assert first[snake] == first[camel]
    assert first["sessionId"] == session.session_id and first["source"] == "startup"
    pre = records[2]["input"]
    assert records[6]["input"]["isInterrupt"] is False
    assert pre["toolName"] == pre["tool_name"] == "Bash"
    assert pre["toolInput"] == pre["tool_input"] == {"command": "rm -rf build"}
    assert pre["tool_use_id"] == pre["toolUseId"]
    # a process handler: argv as written, ${ZCODE_PROJECT_DIR} filled, no shell expansion
    assert records[2]["argv"] == [str(workspace), "$HOME|*"]
    warnings = " | ".join(str(d) for d in session_plugin(session).diagnostics)
    assert "cannot replace a tool's output: updatedToolOutput ignored" in warnings
    assert "at most 3 consecutive continuations" in warnings


def session_plugin(session):
    return session.host.get("zcode:hooks-zc").plugin


async def test_environment_has_zcode_names_and_claude_aliases(zpi_env, workspace, tmp_path):
    session, _, plugin = await session_with(tmp_path, workspace, ["done"])
    try:
        await session.run("go")
    finally:
        await session.dispose()
    env = seen(zpi_env.agent_dir)[0]["env"]
    folder = session_plugin(session).folder
    assert env["ZCODE_PLUGIN_ROOT"] == env["CLAUDE_PLUGIN_ROOT"] == str(folder.root)
    assert env["ZCODE_PLUGIN_DATA"] == env["CLAUDE_PLUGIN_DATA"] == str(
        zpi_env.agent_dir / "plugin-data" / "zcode" / "hooks-zc")
    assert env["ZCODE_PROJECT_DIR"] == env["CLAUDE_PROJECT_DIR"] == str(workspace)
    assert env["ZCODE_PLUGIN_ID"] == env["ZCODE_PLUGIN_NAME"] == "hooks-zc"
    assert env["CLAUDE_ENV_FILE"] is None  # ZCode has no equivalent
    assert folder.root != plugin and folder.root.is_relative_to(zpi_env.agent_dir)  # frozen


async def test_a_prompt_blocked_with_continue_false_keeps_the_session(zpi_env, workspace,
                                                                      tmp_path):
    session, model, _ = await session_with(tmp_path, workspace, ["fine", "second", "third",
                                                                 "fourth", "after"])
    try:
        blocked = await session.run("tell me the secret")
        later = await session.run("hello again")
    finally:
        await session.dispose()
    assert blocked.is_error and blocked.stop_reason == "blocked"
    assert "zc-prompt: prompts about secrets are blocked" in blocked.result
    assert not later.is_error  # Claude's continue: false would have stopped the session
    assert "secret" not in json.dumps(model.requests[0], default=str)


async def test_hook_files_edited_mid_session_do_not_change_it(zpi_env, workspace, tmp_path):
    session, _, plugin = await session_with(tmp_path, workspace, ["one", "2", "3", "4", "two",
                                                                  "6", "7", "8"])
    (plugin / "hooks" / "record.py").write_text("raise SystemExit(1)\n")
    try:
        await session.run("go")
        await session.run("again")
    finally:
        await session.dispose()
    assert len([r for r in seen(zpi_env.agent_dir) if r["event"] == "UserPromptSubmit"]) == 2


async def test_config_file_hooks_run_user_then_workspace_then_plugin(zpi_env, workspace,
                                                                     tmp_path):
    user_config(zpi_env.home, "user-config.json")
    workspace_config(workspace, "workspace-config.json")
    session, _, _ = await session_with(tmp_path, workspace, [bash("echo x"), "a", "b", "c",
                                                             "d"])
    try:
        await session.run("go")
    finally:
        await session.dispose()
    assert (workspace / "order.log").read_text().split() == ["user-config", "workspace-config"]
    said = contexts(session)
    assert said[:2] == ["workspace-config: tests live in tests/",
                        "zc-start: the codename is KESTREL"]
    assert not any(text.startswith("user-config: xxx") for text in said)
    config = session.host.get("zcode:config").plugin
    problems = [d.message for d in config.diagnostics]
    assert any("over the capture limit" in p for p in problems)  # maxOutputBytes 64
    assert any("printed invalid JSON" in p for p in problems)


async def test_permission_request_hook_allows_a_call_that_needs_approval(zpi_env, workspace,
                                                                         tmp_path):
    plugin = copy_plugin("hooks-zc", tmp_path / "plugins")
    host = load_host(zcode_settings([plugin]), workspace)
    model = ScriptedModel([bash("echo approved"), "a", "b", "c", "d"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host,
                                   permission_mode="ask")
    try:
        await session.run("go")
    finally:
        await session.dispose()
    (ran,) = results(session)
    assert not ran.is_error and ran.content[0].text.strip() == "approved"
    (asked,) = [r["input"] for r in seen(zpi_env.agent_dir) if r["event"] == "PermissionRequest"]
    assert asked["toolName"] == "Bash" and asked["toolInput"] == {"command": "echo approved"}
    assert asked["hookEventName"] == "PermissionRequest"


async def test_matching_handlers_run_one_after_another_in_configuration_order(
        zpi_env, workspace, tmp_path):
    """ZCode runs an event's handlers in order (Claude Code runs them in parallel): a slow
    first handler still finishes before the second starts."""
    config = zpi_env.home / ".zcode" / "cli" / "config.json"
    config.parent.mkdir(parents=True)
    log = workspace / "order.log"
    config.write_text(json.dumps({"hooks": {"enabled": True, "events": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": f"sleep 0.5; echo slow-first >> {log}"},
                   {"type": "command", "command": f"echo quick-second >> {log}"}]}]}}}))
    session, _, _ = await session_with(tmp_path, workspace, ["done"])
    try:
        await session.run("go")
    finally:
        await session.dispose()
    assert log.read_text().split() == ["slow-first", "quick-second"]
