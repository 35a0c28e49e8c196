"""Claude hook handlers inside real sessions: the corpus folders' hooks (Python and bash)
registered as plugins, a scripted model, real tools and real processes."""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

import pytest
from helpers.claude_hooks import corpus_hooks, make_hooks, process_running
from helpers.contexts import contexts

from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.providers.messages import ContextMessage, ToolResultMessage, UserMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio
PY = sys.executable


def host() -> PluginHost:
    return PluginHost(PluginConfig(autoload=False)).load()


def calls(*pairs) -> dict:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in pairs]}


def bash(command: str) -> dict:
    return calls(("bash", {"command": command}))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


def results(session) -> list[ToolResultMessage]:
    return [m for m in session.messages if isinstance(m, ToolResultMessage)]


async def run(session, prompt: str = "go"):
    try:
        return await session.run(prompt)
    finally:
        await session.dispose()


# ------------------------------------------------------------------------------ corpus


async def test_python_guard_denies_blocks_and_rewrites(zpi_env, zpi_plugins, workspace,
                                                       tmp_path):
    hooks, problems = corpus_hooks("hooks-guard-py", tmp_path)
    assert problems == []
    zpi_plugins.register(hooks, "claude:hooks-guard-py")
    model = ScriptedModel([
        bash("rm -rf build"), bash("echo forbidden"), bash("echo hi"),
        calls(("write", {"path": "notes.draft", "content": "hello"})), "done",
    ])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host())
    result = await run(session)
    assert result.result == "done" and not result.is_error
    denied, blocked, echoed, written = results(session)
    assert denied.is_error and "guard.py: rm -rf is not allowed here" in denied.content[0].text
    assert blocked.is_error and "guard.py: the word 'forbidden' is forbidden" in \
        blocked.content[0].text
    assert not echoed.is_error and echoed.content[0].text.strip() == "guarded:hi"
    assert not written.is_error
    assert (workspace / "notes.txt").read_text() == "HELLO"
    assert not (workspace / "notes.draft").exists()
    assert "after_write.py: notes.txt was written" in contexts(session)
    assert [d.tool for d in result.denials] == ["bash", "bash"]
    seen = [json.loads(line) for line in
            (tmp_path / "plugin-data/hooks-guard-py/seen.jsonl").read_text().splitlines()]
    assert [e["tool_input"].get("command") for e in seen[:3]] == [
        "rm -rf build", "echo forbidden", "echo hi"]
    first = seen[0]
    assert first["hook_event_name"] == "PreToolUse" and first["tool_name"] == "Bash"
    assert first["session_id"] == session.session_id and first["cwd"] == str(workspace)
    assert first["permission_mode"] == "default" and first["tool_use_id"]
    transcript = Path(first["transcript_path"])
    assert transcript.name.startswith(session.session_id) and transcript.suffix == ".jsonl"
    assert {e["transcript_path"] for e in seen} == {str(transcript)}  # one per session
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    # as it was when the last hook ran (PostToolUse of the write: before its result)
    # (the write's result and the final answer came later)
    assert len(records) == len(session.messages) - 2
    assert records[0]["message"]["content"] == [{"type": "text", "text": "go"}]
    assert seen[3]["tool_name"] == "Write"
    assert seen[3]["tool_input"] == {"file_path": str(workspace / "notes.draft"),
                                     "content": "hello"}


async def test_bash_context_at_session_start_and_on_prompts_env_file_and_redaction(
        zpi_env, zpi_plugins, workspace, tmp_path):
    hooks, _ = corpus_hooks("hooks-context-sh", tmp_path)
    zpi_plugins.register(hooks, "claude:hooks-context-sh")
    (workspace / "creds.txt").write_text("PASSWORD=hunter2\n")
    model = ScriptedModel([
        bash("echo $CONTEXT_SH_MARK $CONTEXT_SH_PATH"),
        calls(("read", {"path": "creds.txt"})), "done", "never",
    ])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host())
    try:
        result = await session.run("hello")
        blocked = await session.run("tell me the secret")
    finally:
        await session.dispose()
    assert result.result == "done"
    start, prompt = session.messages[0], session.messages[1]
    assert isinstance(start, ContextMessage) and start.source == "claude:hooks-context-sh"
    assert start.text == "start.sh: the project codename is BLUEBIRD (source: startup)"
    # UserPromptSubmit context comes before the prompt it is about
    assert isinstance(prompt, ContextMessage) and prompt.text == "prompt.sh: answer in English"
    assert isinstance(session.messages[2], UserMessage)
    exported, read = results(session)
    home = os.environ["HOME"]
    assert exported.content[0].text.strip() == f"from-session-start {home}/context-sh"
    assert session.environment["CONTEXT_SH_MARK"] == "from-session-start"
    # updatedToolOutput replaces the output of MCP tools only, as documented: Read keeps its
    # output and the user is told why
    assert read.content[0].text == "     1\tPASSWORD=hunter2"
    assert any("updatedToolOutput replaces the output of MCP tools only" in d.message
               and "Read" in d.message for d in hooks.diagnostics)
    assert blocked.is_error and blocked.stop_reason == "blocked"
    assert "prompt.sh: prompts about secrets are blocked" in blocked.result
    assert len(model.requests) == 3  # the blocked prompt never reached the model


@pytest.mark.parametrize("folder", ["hooks-stop-py", "hooks-stop-sh"])
async def test_stop_hook_continues_once_then_lets_the_run_stop(zpi_env, zpi_plugins, workspace,
                                                               tmp_path, folder):
    hooks, _ = corpus_hooks(folder, tmp_path)
    zpi_plugins.register(hooks, f"claude:{folder}")
    model = ScriptedModel(["first answer", "second answer", "never"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host())
    result = await run(session)
    assert result.result == "second answer" and len(model.requests) == 2
    reason = ("stop.py: run the tests before you stop" if folder == "hooks-stop-py"
              else "stop.sh: also update the changelog")
    continued = [m for m in session.messages if isinstance(m, ContextMessage)][-1]
    assert continued.text == f"Stop hook feedback: {reason}"
    if folder == "hooks-stop-py":
        rounds = [json.loads(line) for line in
                  (tmp_path / f"plugin-data/{folder}/stops.jsonl").read_text().splitlines()]
        assert [r["stop_hook_active"] for r in rounds] == [False, True]
        assert [r["last_assistant_message"] for r in rounds] == ["first answer",
                                                                 "second answer"]
        assert rounds[0]["transcript_lines"] == 2 and rounds[1]["transcript_lines"] == 4


async def test_failing_handlers_are_diagnostics_and_a_timed_out_one_is_killed(
        zpi_env, zpi_plugins, workspace, tmp_path):
    hooks, _ = corpus_hooks("hooks-failing-sh", tmp_path)
    zpi_plugins.register(hooks, "claude:hooks-failing-sh")
    model = ScriptedModel([bash("echo still runs"), "done"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host())
    events = []
    session.subscribe(events.append)
    result = await run(session)
    assert result.result == "done"
    (ran,) = results(session)
    assert not ran.is_error and ran.content[0].text.strip() == "still runs"
    assert contexts(session) == ["failing-sh: look at the output again"]
    warned = [e.message for e in events if e.type == "warning"]
    assert any("timed out" in w for w in warned) and any("exited 1" in w for w in warned)
    messages = [d.message for d in hooks.diagnostics]
    assert any(m.startswith("timed out") for m in messages), messages
    assert any(m.startswith("printed invalid JSON") for m in messages), messages
    assert "exited 1: failing-sh: broken hook" in messages
    data = tmp_path / "plugin-data/hooks-failing-sh"
    for pid in map(int, (data / "pids").read_text().split()):
        assert not process_running(pid), f"process {pid} of the timed-out hook is still running"
    assert not (data / "slow-finished").exists() and not (data / "child-finished").exists()


async def test_bad_config_keeps_its_good_handler(zpi_env, zpi_plugins, workspace, tmp_path):
    hooks, problems = corpus_hooks("hooks-bad-config", tmp_path)
    text = "\n".join(problems)
    for expected in ("not a valid regular expression",
                     "\"url\" must start with http:// or https://",
                     "\"prompt\" must be a non-empty string",
                     "handler type 'agent' is not supported",
                     "shell 'powershell' is not supported",
                     "unknown hook event 'PreToolUsed' (did you mean PreToolUse?)",
                     "PermissionDenied is a Claude Code event this host does not have",
                     "hooks.Stop: must be a list"):
        assert expected in text, (expected, text)
    assert hooks.hook_events() == ["PreToolUse"]
    zpi_plugins.register(hooks, "claude:hooks-bad-config")
    model = ScriptedModel([bash("echo x"), "done"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host())
    assert (await run(session)).result == "done"
    assert list(hooks.diagnostics) == []


# ------------------------------------------------------------------------------ inline configs


def command(text: str, **extra) -> dict:
    return {"type": "command", "command": text, **extra}


def on(event: str, *handlers: dict, matcher: str | None = None) -> dict:
    group: dict = {"hooks": list(handlers)}
    if matcher is not None:
        group["matcher"] = matcher
    return {event: [group]}


async def test_matching_handlers_run_in_parallel_and_identical_commands_once(
        zpi_env, zpi_plugins, workspace, tmp_path):
    # each waits (up to ~10 s) for the other's marker: run one after the other, both fail
    wait = ('touch "$CLAUDE_PLUGIN_DATA/{me}"; for i in $(seq 100); do '
            '[ -f "$CLAUDE_PLUGIN_DATA/{other}" ] && exit 0; sleep 0.1; done; exit 1')
    count = 'echo once >> "$CLAUDE_PLUGIN_DATA/count"'
    config = {"PreToolUse": [
        {"matcher": "Bash", "hooks": [command(wait.format(me="a", other="b")), command(count)]},
        {"matcher": "Ba.*", "hooks": [command(wait.format(me="b", other="a")), command(count)]},
        {"matcher": "Read", "hooks": [command("echo never >> \"$CLAUDE_PLUGIN_DATA/count\"")]},
    ]}
    hooks, problems = make_hooks(config, tmp_path)
    assert problems == []
    zpi_plugins.register(hooks, "claude:inline")
    model = ScriptedModel([bash("true"), "done"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host())
    assert (await run(session)).result == "done"
    assert list(hooks.diagnostics) == []  # neither waiter gave up
    assert (tmp_path / "plugin-data/inline/count").read_text() == "once\n"


async def test_hooks_exist_only_for_configured_events(zpi_env, tmp_path):
    only_stop, _ = make_hooks(on("Stop", command("true")), tmp_path, name="stop")
    tools, _ = make_hooks(on("PostToolUse", command("true")), tmp_path, name="tools")
    h = host()
    h.register_plugin(only_stop, "claude:stop", source="claude")
    assert h.implemented_hooks("claude:stop") == ["zpi_stop"]
    assert not h.hooks.tool_hooks_registered  # read-only calls may still start early
    h.register_plugin(tools, "claude:tools", source="claude")
    # zpi_before_tool keeps a Write/Edit target for tool_response.originalFile
    assert h.implemented_hooks("claude:tools") == ["zpi_after_tool", "zpi_before_tool"]
    assert h.hooks.tool_hooks_registered
    assert not hasattr(type(only_stop), "zpi_stop")


async def test_edit_input_is_shown_and_rewritten_in_claudes_shape(zpi_env, zpi_plugins,
                                                                  workspace, tmp_path):
    script = tmp_path / "edit_hook.py"
    script.write_text(
        "import json, os, sys\n"
        "e = json.load(sys.stdin)\n"
        "open(os.environ['CLAUDE_PLUGIN_DATA'] + '/input.json', 'w').write("
        "json.dumps(e['tool_input']))\n"
        "i = dict(e['tool_input'], new_string=e['tool_input']['new_string'].upper())\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse',"
        " 'permissionDecision': 'allow', 'updatedInput': i}}))\n")
    hooks, _ = make_hooks(on("PreToolUse", command(f"{PY} {script}"), matcher="Edit"), tmp_path)
    zpi_plugins.register(hooks, "claude:inline")
    (workspace / "a.txt").write_text("one two\n")
    model = ScriptedModel([
        calls(("read", {"path": "a.txt"})),
        calls(("edit", {"path": "a.txt", "edits": [{"old_text": "two", "new_text": "three"}]})),
        "done"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host())
    assert (await run(session)).result == "done"
    seen = json.loads((tmp_path / "plugin-data/inline/input.json").read_text())
    assert seen == {"file_path": str(workspace / "a.txt"), "old_string": "two",
                    "new_string": "three", "replace_all": False}
    assert (workspace / "a.txt").read_text() == "one THREE\n"


async def test_pre_tool_use_context_without_a_decision_reaches_the_model(
        zpi_env, zpi_plugins, workspace, tmp_path):
    out = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                             "additionalContext": "ctx: careful with bash"}})
    hooks, _ = make_hooks(on("PreToolUse", command(f"echo '{out}'"), matcher="Bash"), tmp_path)
    zpi_plugins.register(hooks, "claude:inline")
    model = ScriptedModel([bash("echo hi"), "done"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host(),
                                   permission_mode="bypass")
    assert (await run(session)).result == "done"
    (ran,) = results(session)
    assert not ran.is_error  # no decision: the mode decides
    assert contexts(session) == ["ctx: careful with bash"]
    assert ran.content[-1].text == "<system-reminder>\nctx: careful with bash\n</system-reminder>"


async def test_permission_request_hook_allows_or_denies(zpi_env, zpi_plugins, workspace,
                                                        tmp_path):
    allow = json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                               "decision": {"behavior": "allow"}}})
    config = {"PermissionRequest": [
        {"matcher": "Bash", "hooks": [command(
            'grep -q danger && { echo "no dangerous commands" >&2; exit 2; }; '
            f"echo '{allow}'")]}]}
    hooks, _ = make_hooks(config, tmp_path)
    zpi_plugins.register(hooks, "claude:inline")
    model = ScriptedModel([bash("echo safe"), bash("echo danger"), "done"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host(),
                                   permission_mode="ask")
    result = await run(session)
    safe, danger = results(session)
    assert not safe.is_error and safe.content[0].text.strip() == "safe"
    assert danger.is_error and "no dangerous commands" in danger.content[0].text
    assert [d.tool for d in result.denials] == ["bash"]


async def test_tool_failure_hook_sees_the_error(zpi_env, zpi_plugins, workspace, tmp_path):
    script = ("import json,sys; e=json.load(sys.stdin); print(json.dumps({'hookSpecificOutput':"
              " {'hookEventName': 'PostToolUseFailure', 'additionalContext': 'failed: ' +"
              " e['tool_name'] + ' ' + str(e['is_interrupt']) + ' ' + e['error'][:20]}}))")
    hooks, _ = make_hooks(on("PostToolUseFailure", command(f'{PY} -c "{script}"')), tmp_path)
    zpi_plugins.register(hooks, "claude:inline")
    model = ScriptedModel([calls(("read", {"path": "missing.txt"})), "done"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host())
    assert (await run(session)).result == "done"
    (text,) = contexts(session)
    assert text.startswith("failed: Read False ")


async def test_once_handlers_run_once_per_session(zpi_env, zpi_plugins, workspace, tmp_path):
    config = on("UserPromptSubmit", command('echo x >> "$CLAUDE_PLUGIN_DATA/n"', once=True))
    hooks, _ = make_hooks(config, tmp_path)
    zpi_plugins.register(hooks, "claude:inline")
    model = ScriptedModel(["a", "b"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host())
    try:
        await session.run("one")
        await session.run("two")
    finally:
        await session.dispose()
    assert (tmp_path / "plugin-data/inline/n").read_text() == "x\n"


async def test_continue_false_blocks_a_prompt_and_overrides_a_stop_block(
        zpi_env, zpi_plugins, workspace, tmp_path):
    stop = json.dumps({"continue": False, "stopReason": "enough", "decision": "block",
                       "reason": "go on"})
    prompt = json.dumps({"continue": False, "stopReason": "no prompts with STOP"})
    config = {**on("Stop", command(f"echo '{stop}'")),
              **on("UserPromptSubmit", command(f"grep -q STOP && echo '{prompt}'; true"))}
    hooks, _ = make_hooks(config, tmp_path)
    zpi_plugins.register(hooks, "claude:inline")
    model = ScriptedModel(["answer", "never"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host())
    try:
        first = await session.run("hello")
        second = await session.run("please STOP")
    finally:
        await session.dispose()
    # continue: false ends the run (RunStopped) and wins over a Stop hook's block
    assert (first.result, first.stop_reason) == ("answer", "hook_stopped")
    assert len(model.requests) == 1
    assert second.stop_reason == "hook_stopped" and not second.is_error
    assert second.result == "stopped by a hook: no prompts with STOP"
    assert not any(isinstance(m, UserMessage) and "STOP" in m.text_content
                   for m in session.messages)  # the prompt never reached the history


async def test_system_message_is_a_message_for_the_user_and_session_end_runs(
        zpi_env, zpi_plugins, workspace, tmp_path):
    config = {**on("SessionStart", command(
        "echo '{\"systemMessage\": \"hello from the hook\"}'")),
        **on("SessionEnd", command('cat > "$CLAUDE_PLUGIN_DATA/end.json"'))}
    hooks, _ = make_hooks(config, tmp_path)
    zpi_plugins.register(hooks, "claude:inline")
    session = await create_session(model="t:m", provider=ScriptedModel(["ok"]), cwd=workspace,
                                   host=host())
    told, warned = [], []
    session.subscribe(told.append, {"system"})
    session.subscribe(warned.append, {"warning"})
    await run(session)
    (diagnostic,) = hooks.diagnostics
    assert diagnostic.level == "message" and diagnostic.message == "hello from the hook"
    assert [(e.message, e.source) for e in told] == [("hello from the hook", "claude:inline")]
    assert warned == []
    assert "hello from the hook" in str(diagnostic) and "claude:inline" in str(diagnostic)
    end = json.loads((tmp_path / "plugin-data/inline/end.json").read_text())
    assert end["hook_event_name"] == "SessionEnd" and end["reason"] == "other"


async def test_transcript_path_holds_claudes_shape(zpi_env, zpi_plugins, workspace, tmp_path):
    copy = ("import json,os,shutil,sys; e=json.load(sys.stdin); "
            "shutil.copy(e['transcript_path'], os.environ['CLAUDE_PLUGIN_DATA'] + '/t.jsonl')")
    hooks, _ = make_hooks(on("Stop", command(f'{PY} -c "{copy}"')), tmp_path)
    zpi_plugins.register(hooks, "claude:inline")
    model = ScriptedModel([bash("echo hi"), "bye"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host())
    await run(session)
    records = [json.loads(line) for line in
               (tmp_path / "plugin-data/inline/t.jsonl").read_text().splitlines()]
    assert [r["type"] for r in records] == ["user", "assistant", "user", "assistant"]
    assert records[0]["message"] == {"role": "user", "content": [{"type": "text",
                                                                   "text": "go"}]}
    tool_use = records[1]["message"]["content"][0]
    assert tool_use["type"] == "tool_use" and tool_use["name"] == "Bash"
    assert tool_use["input"] == {"command": "echo hi"}
    tool_result = records[2]["message"]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["tool_use_id"] == tool_use["id"]
    assert records[3]["message"]["content"] == [{"type": "text", "text": "bye"}]
    assert records[0]["parentUuid"] is None
    for before, after in itertools.pairwise(records):
        assert after["parentUuid"] == before["uuid"]
    assert {r["sessionId"] for r in records} == {session.session_id}
    assert {r["cwd"] for r in records} == {str(workspace)}
    assert all(r["timestamp"].endswith("Z") for r in records)


async def test_options_reach_commands_as_environment(zpi_env, zpi_plugins, workspace, tmp_path):
    hooks, _ = make_hooks(on("UserPromptSubmit", command(
        'echo "$CLAUDE_PLUGIN_OPTION_TEAM $CLAUDE_PROJECT_DIR $(basename $CLAUDE_PLUGIN_ROOT)"')),
        tmp_path, env={"CLAUDE_PLUGIN_OPTION_TEAM": "blue"})
    zpi_plugins.register(hooks, "claude:inline")
    session = await create_session(model="t:m", provider=ScriptedModel(["ok"]), cwd=workspace,
                                   host=host())
    await run(session)
    assert contexts(session) == [f"blue {workspace} plugin-inline"]


# ------------------------------------------------------------------------------ other events


class _Preparation:
    def __init__(self, trigger: str, instructions: str | None = None) -> None:
        self.trigger, self.instructions = trigger, instructions


class _Compacted:
    trigger, summary = "manual", "the summary"


async def test_sub_agent_compaction_and_notification_events(zpi_env, workspace, tmp_path):
    record = 'cat >> "$CLAUDE_PLUGIN_DATA/events.jsonl"; echo >> "$CLAUDE_PLUGIN_DATA/events.jsonl"'
    block = json.dumps({"decision": "block", "reason": "finish the review"})
    config = {
        **on("SubagentStart", command(record), command(
            "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"SubagentStart\", "
            "\"additionalContext\": \"review carefully\"}}'"), matcher="reviewer"),
        **on("SubagentStop", command(record), command(
            f"grep -q '\"stop_hook_active\": false' && echo '{block}'; true")),
        **on("PreCompact", command(record), command("echo 'not now' >&2; exit 2"),
             matcher="manual"),
        **on("PostCompact", command(record)),
        **on("Notification", command(record), matcher="idle_prompt"),
    }
    hooks, problems = make_hooks(config, tmp_path)
    assert problems == []
    h = host()
    h.register_plugin(hooks, "claude:inline", source="claude")
    session = await create_session(model="t:m", provider=ScriptedModel(["x"]), cwd=workspace,
                                   host=h)
    view, calls_ = session.view, h.hooks
    try:
        (context,) = await calls_.subagent_start(view, "reviewer", "agent-1", "review it")
        assert (context.plugin, context.value) == ("claude:inline", "review carefully")
        assert await calls_.subagent_start(view, "writer", "agent-2", "write it") == ()
        from zpi_host.providers.messages import AssistantMessage, TextContent

        final = AssistantMessage((TextContent("reviewed"),))
        first = await calls_.subagent_stop(view, "reviewer", "agent-1", final, 0)
        second = await calls_.subagent_stop(view, "reviewer", "agent-1", final, 1)
        assert first.continue_with == "SubagentStop hook feedback: finish the review"
        assert second.continue_with is None
        cancelled = await calls_.before_compact(view, _Preparation("manual", "keep it short"))
        assert cancelled.cancel and cancelled.reason == "not now"
        assert not (await calls_.before_compact(view, _Preparation("auto"))).cancel
        await calls_.after_compact(view, _Compacted())
        await calls_.notification(view, "waiting for you", "zpi", "idle_prompt")
        await calls_.notification(view, "allow bash?", None, "permission_prompt")
    finally:
        await session.dispose()
    events = [json.loads(line) for line in
              (tmp_path / "plugin-data/inline/events.jsonl").read_text().splitlines() if line]
    names = [e["hook_event_name"] for e in events]
    assert names == ["SubagentStart", "SubagentStop", "SubagentStop", "PreCompact",
                     "PostCompact", "Notification"]
    start, stop, _, compact, compacted, notification = events
    assert (start["agent_type"], start["agent_id"]) == ("reviewer", "agent-1")
    assert stop["last_assistant_message"] == "reviewed" and stop["stop_hook_active"] is False
    assert (compact["trigger"], compact["custom_instructions"]) == ("manual", "keep it short")
    assert (compacted["trigger"], compacted["compact_summary"]) == ("manual", "the summary")
    assert notification == {**notification, "message": "waiting for you", "title": "zpi",
                            "notification_type": "idle_prompt"}
    assert all(e["session_id"] == session.session_id for e in events)


@pytest.mark.parametrize("own_timeout", [True, False], ids=["own timeout", "default timeout"])
async def test_a_hanging_handler_times_out_as_a_non_blocking_error_not_a_deny(
        zpi_env, zpi_plugins, workspace, tmp_path, own_timeout):
    """The handler's timeout (its own, or the default when it has none) governs, even when
    the kernel budget is shorter: a timed-out handler is a warning and the tool runs."""
    script = tmp_path / "hang.sh"
    script.write_text(f"#!/bin/sh\necho $$ > {tmp_path / 'hang.pid'}\nexec sleep 30\n")
    script.chmod(0o755)
    handler = {"type": "command", "command": str(script)}
    if own_timeout:
        handler["timeout"] = 1
    hooks, _ = make_hooks({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]}},
                          tmp_path, name="hang", timeout_s=60 if own_timeout else 1)
    zpi_plugins.register(hooks, "claude:hang")
    model = ScriptedModel([bash("echo ran"), "done"])
    session = await create_session(model="t:m", provider=model, cwd=workspace, host=host(),
                                   settings={"hooks": {"timeout": 0.3}})
    events = []
    session.subscribe(events.append)
    result = await run(session)
    assert result.result == "done" and not result.denials
    (ran,) = results(session)
    assert not ran.is_error and ran.content[0].text.strip() == "ran"
    warned = [e.message for e in events if e.type == "warning"]
    assert any("timed out" in w for w in warned), warned
    assert not process_running(int((tmp_path / "hang.pid").read_text()))


@pytest.mark.parametrize("passed", [False, True], ids=["default", "passed by setting"])
async def test_hook_commands_do_not_get_the_key_variables(zpi_env, zpi_plugins, workspace,
                                                          tmp_path, monkeypatch, passed):
    key = "sk-hook-test-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    seen = tmp_path / "seen.txt"
    command = f'echo "${{ANTHROPIC_API_KEY:-unset}}" > {seen}'
    hooks, _ = make_hooks({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": command}]}]}}, tmp_path, name="env")
    zpi_plugins.register(hooks, "claude:env")
    settings = {"secrets": {"pass_to_commands": True}} if passed else {}
    session = await create_session(model="t:m", provider=ScriptedModel([bash("true"), "done"]),
                                   cwd=workspace, host=host(), settings=settings)
    await run(session)
    assert seen.read_text().strip() == (key if passed else "unset")


async def test_a_key_a_hook_prints_is_redacted_in_its_diagnostic(zpi_env, zpi_plugins,
                                                                 workspace, tmp_path,
                                                                 monkeypatch, caplog):
    key = "sk-hook-test-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    hooks, _ = make_hooks({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": 'echo "oops $OPENAI_API_KEY" >&2; exit 1'}]}]}},
        tmp_path, name="leaky")
    zpi_plugins.register(hooks, "claude:leaky")
    session = await create_session(model="t:m", provider=ScriptedModel([bash("true"), "done"]),
                                   cwd=workspace, host=host(),
                                   settings={"secrets": {"pass_to_commands": True}})
    await run(session)
    (diagnostic,) = hooks.diagnostics
    assert diagnostic.message == "exited 1: oops [redacted]"
    assert key not in caplog.text and "oops [redacted]" in caplog.text


async def test_an_if_rule_picks_the_tool_calls_a_handler_runs_for(zpi_env, zpi_plugins,
                                                                  tmp_path):
    """security-guidance's shape: one command under the ``Bash`` matcher twice, with
    ``"if": "Bash(git commit:*)"`` and ``"if": "Bash(git push:*)"``: it runs for a commit
    and for a push (once for ``git commit && git push``), never for other commands."""
    work = tmp_path / "work"
    work.mkdir()
    log = tmp_path / "ran.log"
    command = (f"{sys.executable} -c \"import json, sys; "
               f"print(json.load(sys.stdin)['tool_input']['command'])\" >> {log}")
    config = {"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": command, "if": "Bash(git commit:*)"},
        {"type": "command", "command": command, "if": "Bash(git push:*)"}]}]}}
    hooks, problems = make_hooks(config, tmp_path, name="sg")
    assert problems == []
    zpi_plugins.register(hooks, "claude:sg")
    calls = ["echo hi", "git commit -m x || true", "git push || true",
             "git commit -m y || true && git push || true", "git status || true"]
    model = ScriptedModel([*({"tool_calls": [{"name": "bash", "arguments": {"command": c}}]}
                             for c in calls), "done"])
    session = await create_session(model="t:m", provider=model, cwd=work,
                                   permission_mode="bypass",
                                   host=PluginHost(PluginConfig(autoload=False)).load())
    try:
        await session.run("go")
    finally:
        await session.dispose()
    ran = log.read_text()
    assert "echo hi" not in ran and "git status" not in ran
    assert ran.count("git commit -m x") == 1 and ran.count("git push || true") == 2
    assert ran.count("git commit -m y") == 1  # both rules match: the command runs once
