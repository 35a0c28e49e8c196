"""The conformance corpus: what Claude Code 2.1 hook scripts receive and what the model then
sees, fixed per event and per tool. ``corpus/hooks-dump-py`` records every event's stdin (real
processes) and answers so that each effect shows up in the model's next request."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

import pytest
from helpers.claude_hooks import corpus_hooks

from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.providers.anthropic import messages_body
from zpi_host.providers.messages import AssistantMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel
from zpi_host.tools.base import TextContent

pytestmark = pytest.mark.anyio

COMMON = {"session_id": str, "transcript_path": str, "cwd": str, "permission_mode": str,
          "hook_event_name": str}
TOOL = {"prompt_id": str, "tool_name": str, "tool_input": dict, "tool_use_id": str}
#: per event: every key of the input and the type of its value (Claude Code 2.1)
KEYS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "SessionStart": {**COMMON, "source": str, "model": str},
    "UserPromptSubmit": {**COMMON, "prompt_id": str, "prompt": str},
    "PreToolUse": {**COMMON, **TOOL},
    "PermissionRequest": {**COMMON, "prompt_id": str, "tool_name": str, "tool_input": dict,
                          "permission_suggestions": list},
    "PostToolUse": {**COMMON, **TOOL, "tool_response": (dict, str), "duration_ms": int},
    "PostToolUseFailure": {**COMMON, **TOOL, "error": str, "is_interrupt": bool,
                           "duration_ms": int},
    "Stop": {**COMMON, "prompt_id": str, "stop_hook_active": bool,
             "last_assistant_message": str, "background_tasks": list},
    "SubagentStart": {**COMMON, "prompt_id": str, "agent_id": str, "agent_type": str},
    "SubagentStop": {**COMMON, "prompt_id": str, "stop_hook_active": bool, "agent_id": str,
                     "agent_type": str, "last_assistant_message": str},
    "PreCompact": {**COMMON, "prompt_id": str, "trigger": str, "custom_instructions": str},
    "PostCompact": {**COMMON, "prompt_id": str, "trigger": str, "compact_summary": str},
    "Notification": {**COMMON, "prompt_id": str, "message": str, "title": (str, type(None)),
                     "notification_type": str},
    "SessionEnd": {**COMMON, "prompt_id": str, "reason": str},
}
#: events the kernel raises outside a plain run (sub-agents, compaction, notifications):
#: the test raises them through the kernel's hook facade, as the kernel does
SIDE_EVENTS = ("SubagentStart", "SubagentStop", "PreCompact", "PostCompact", "Notification")


class _Preparation:
    trigger, instructions = "manual", "keep it short"


class _Compacted:
    trigger, summary = "manual", "the summary"
#: per tool: the keys of PostToolUse's tool_response
RESPONSES = {
    "Read": {"type", "file"},
    "Write": {"type", "filePath", "content", "structuredPatch", "originalFile", "userModified"},
    "Edit": {"filePath", "oldString", "newString", "originalFile", "structuredPatch",
             "userModified", "replaceAll"},
    "Bash": {"stdout", "stderr", "interrupted", "isImage", "noOutputExpected"},
}


#: a 1x1 transparent PNG
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA"
                       "60e6kgAAAABJRU5ErkJggg==")


def calls(*pairs) -> dict:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in pairs]}


def bash(command: str) -> dict:
    return calls(("bash", {"command": command}))


def reminder(text: str) -> dict:
    return {"type": "text", "text": f"<system-reminder>\n{text}\n</system-reminder>"}


async def run_corpus(zpi_env, zpi_plugins, tmp_path):
    """One session through every tool and effect; (records, model, session, workspace)."""
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "a.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "outside.txt").write_text("far away\n")
    (workspace / "dot.png").write_bytes(PNG)  # reading it asks in default mode
    hooks, problems = corpus_hooks("hooks-dump-py", tmp_path)
    assert problems == []
    zpi_plugins.register(hooks, "claude:hooks-dump-py")
    model = ScriptedModel([
        calls(("read", {"path": "a.txt", "offset": 2, "limit": 1})),
        calls(("read", {"path": str(tmp_path / "outside.txt")})),
        calls(("write", {"path": "new.txt", "content": "fresh\n"})),
        calls(("write", {"path": "a.txt", "content": "one\nTWO\nthree\n"})),
        calls(("edit", {"path": "a.txt", "edits": [{"old_text": "three", "new_text": "3"}]})),
        bash("echo hi; echo oops >&2"), bash("echo rewrite-me"), bash("echo deny-me"),
        bash("exit 3"),
        bash("echo ask-me"), bash("echo rule-denies-me"), bash("echo perm-refused"),
        calls(("read", {"path": "dot.png"})),
        "first answer", "final answer",
    ])
    session = await create_session(model="t:m", provider=model, cwd=workspace,
                                   deny=["bash(echo rule-denies-me)"],
                                   host=PluginHost(PluginConfig(autoload=False)).load())
    warnings: list[str] = []
    told: list[tuple[str, str | None]] = []
    session.subscribe(lambda event: warnings.append(event.message), {"warning"})
    session.subscribe(lambda event: told.append((event.message, event.source)), {"system"})
    try:
        result = await session.run("go")
        blocked = await session.run("please BLOCK this")
        hooks, view = session.host.hooks, session.view
        await hooks.subagent_start(view, "reviewer", "agent-1", "review it")
        await hooks.subagent_stop(view, "reviewer", "agent-1",
                                  AssistantMessage((TextContent("reviewed"),)), 0)
        await hooks.before_compact(view, _Preparation())
        await hooks.after_compact(view, _Compacted())
        await hooks.notification(view, "waiting for you", None, "idle_prompt")
    finally:
        await session.dispose()
    assert result.result == "final answer" and not result.is_error
    # a prompt blocked by UserPromptSubmit ends the run as an error, with the hook's words
    # (zpi-host run -p: exit code 1), and never reaches the model
    assert blocked.is_error and blocked.stop_reason == "blocked"
    assert blocked.result == ("the prompt was blocked by a hook: prompts saying BLOCK are "
                              "blocked")
    assert len(model.requests) == 15  # fifteen turns for "go", none for the blocked prompt
    # systemMessage goes to the user only, as a message (a `system` event), not a warning
    assert ("for-the-user Read", "claude:hooks-dump-py") in told
    assert {m for m, _ in told} == {f"for-the-user {t}" for t in ("Read", "Write", "Edit",
                                                                  "Bash")}
    assert not any("for-the-user" in w for w in warnings)
    assert not any("for-the-user" in json.dumps(messages_body(r.messages))
                   for r in model.requests)
    lines = (tmp_path / "plugin-data/hooks-dump-py/events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines], model, session, workspace


def check_every_event_has_exactly_claudes_keys_and_types(conformance):
    records, _, session, workspace = conformance
    inputs = [r["input"] for r in records]
    assert {e["hook_event_name"] for e in inputs} == set(KEYS)
    for event in inputs:
        expected = KEYS[event["hook_event_name"]]
        assert set(event) == set(expected), event["hook_event_name"]
        for key, kind in expected.items():
            assert isinstance(event[key], kind), (event["hook_event_name"], key)
            if kind is int:
                assert not isinstance(event[key], bool)
        assert event["session_id"] == session.session_id
        assert event["cwd"] == str(workspace)
    # one UUID per user prompt: "go" and then the blocked one (SessionEnd came after it)
    ids = [e["prompt_id"] for e in inputs if "prompt_id" in e]
    first, second = dict.fromkeys(ids)
    assert uuid.UUID(first) and uuid.UUID(second)
    assert ids[-7:] == [second] * 7 and set(ids[:-7]) == {first}


def check_events_fire_in_claudes_order_and_a_denied_call_is_no_failure(conformance):
    records = conformance[0]
    tools = [(r["input"]["hook_event_name"], r["input"].get("tool_name"))
             for r in records if "tool_name" in r["input"]]
    bash_events = [name for name, tool in tools if tool == "Bash"]
    # bash runs without asking in the default mode: no PermissionRequest; the call denied by
    # PreToolUse fires no PostToolUseFailure
    assert bash_events == ["PreToolUse", "PostToolUse", "PreToolUse", "PostToolUse",
                           "PreToolUse", "PreToolUse", "PostToolUseFailure",
                           # a PreToolUse ask: PermissionRequest, then denied (no approver)
                           "PreToolUse", "PermissionRequest",
                           # context without a decision, then a deny rule: nothing follows
                           "PreToolUse",
                           # an ask the PermissionRequest handler denies
                           "PreToolUse", "PermissionRequest"]
    # PermissionRequest only where an approval would be asked: the read outside the workspace
    reads = [name for name, tool in tools if tool == "Read"]
    assert reads == ["PreToolUse", "PostToolUse", "PreToolUse", "PermissionRequest",
                     "PostToolUse", "PreToolUse", "PostToolUse"]
    names = [r["input"]["hook_event_name"] for r in records]
    assert names[:2] == ["SessionStart", "UserPromptSubmit"]
    assert names[-9:] == ["Stop", "Stop", "UserPromptSubmit", *SIDE_EVENTS, "SessionEnd"]


def check_tool_responses_have_claudes_shape_per_tool(conformance):
    records, _, _, workspace = conformance
    post = [r["input"] for r in records if r["input"]["hook_event_name"] == "PostToolUse"]
    by_tool: dict[str, list[dict]] = {}
    for event in post:
        by_tool.setdefault(event["tool_name"], []).append(event)
    for tool, keys in RESPONSES.items():
        for event in by_tool[tool]:
            assert set(event["tool_response"]) == keys, tool
    read, _, image = by_tool["Read"]
    assert read["tool_response"] == {"type": "text", "file": {
        "filePath": str(workspace / "a.txt"), "content": "two", "numLines": 1,
        "startLine": 2, "totalLines": 3}}
    # an image: Claude Code's image shape, the file's bytes in base64
    assert image["tool_response"] == {"type": "image", "file": {
        "base64": base64.b64encode(PNG).decode(), "type": "image/png",
        "originalSize": len(PNG)}}
    created, updated = by_tool["Write"]
    assert created["tool_response"]["type"] == "create"
    assert created["tool_response"]["originalFile"] is None
    assert updated["tool_response"]["type"] == "update"
    assert updated["tool_response"]["originalFile"] == "one\ntwo\nthree\n"
    assert updated["tool_response"]["structuredPatch"] == [{
        "oldStart": 1, "oldLines": 3, "newStart": 1, "newLines": 3,
        "lines": [" one", "-two", "+TWO", " three"]}]
    (edit,) = by_tool["Edit"]
    assert edit["tool_response"]["originalFile"] == "one\nTWO\nthree\n"
    assert (edit["tool_response"]["oldString"], edit["tool_response"]["newString"]) == (
        "three", "3")
    echoed, rewritten = by_tool["Bash"]
    # stdout and stderr apart, as Claude Code gives them (the model reads both, merged)
    assert (echoed["tool_response"]["stdout"], echoed["tool_response"]["stderr"]) == (
        "hi", "oops")
    assert rewritten["tool_response"]["stderr"] == ""
    # PostToolUse tool_input is the input that ran (after updatedInput)
    assert rewritten["tool_input"] == {"command": "echo rewritten"}
    assert rewritten["tool_response"]["stdout"] == "rewritten"
    for event in post:
        assert event["duration_ms"] >= 0


def check_permission_request_suggests_what_claude_code_suggests(conformance):
    records = conformance[0]
    requests = [r["input"] for r in records
                if r["input"]["hook_event_name"] == "PermissionRequest"]
    read, bash, _ = requests
    assert bash["permission_suggestions"] == [{
        "type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "echo ask-me"}],
        "behavior": "allow", "destination": "localSettings"}]
    outside = str(Path(read["tool_input"]["file_path"]).parent)
    assert read["permission_suggestions"] == [
        {"type": "addDirectories", "directories": [outside], "destination": "session"}]


def check_environment_and_transcript_as_claude_code_gives_them(conformance, zpi_env):
    records, _, session, workspace = conformance
    for record in records:
        env = record["env"]
        assert env["CLAUDECODE"] == "1"
        assert env["CLAUDE_PROJECT_DIR"] == str(workspace)
        assert Path(env["CLAUDE_PLUGIN_DATA"]).is_dir()
        # CLAUDE_ENV_FILE only where the documentation gives it: SessionStart
        assert (env["CLAUDE_ENV_FILE"] is not None) == (
            record["input"]["hook_event_name"] == "SessionStart")
    path = Path(records[0]["input"]["transcript_path"])
    slug = "".join(c if c.isascii() and c.isalnum() else "-" for c in str(workspace))
    assert path == zpi_env.agent_dir / "projects" / slug / f"{session.session_id}.jsonl"
    # kept current: the PostToolUse of the first call sees the prompt, the call and no result
    first_post = next(r for r in records if r["input"]["hook_event_name"] == "PostToolUse")
    assert first_post["transcript"][-1] == ["assistant", ["tool_use"]]
    assert ["user", ["text"]] in first_post["transcript"]
    stop = [r for r in records if r["input"]["hook_event_name"] == "Stop"][-1]
    assert ["user", ["tool_result"]] in stop["transcript"]
    assert stop["transcript"][-1] == ["assistant", ["text"]]
    # each tool_result record has toolUseResult: what PostToolUse got as tool_response (the
    # Write/Edit responses but for originalFile/structuredPatch, which only a call's own
    # PostToolUse gets), "Error: <text>" for a failed or denied call
    for post in (r["input"] for r in records if r["input"]["hook_event_name"] == "PostToolUse"):
        written = stop["results"][post["tool_use_id"]]
        if post["tool_name"] in ("Read", "Bash"):
            assert written == post["tool_response"], post["tool_name"]
        else:
            assert set(written) == set(post["tool_response"]), post["tool_name"]
    failed = next(r["input"] for r in records
                  if r["input"]["hook_event_name"] == "PostToolUseFailure")
    assert stop["results"][failed["tool_use_id"]] == f"Error: {failed['error']}"


def check_what_the_model_sees(conformance):
    _, model, _, _ = conformance
    first = messages_body(model.requests[0].messages)
    # SessionStart and UserPromptSubmit context: system-reminders before the prompt
    assert first == [{"role": "user", "content": [
        reminder("start-ctx"), reminder("prompt-ctx"), {"type": "text", "text": "go"}]}]
    results = {}
    for request in model.requests:
        for message in messages_body(request.messages):
            for block in message["content"]:
                if block["type"] == "tool_result":
                    results[block["tool_use_id"]] = block
    ordered = list(results.values())
    edited = ordered[4]  # PostToolUse block reason and context, inside the result
    assert not edited["is_error"]
    assert edited["content"][-1] == reminder("post-block Edit\n\npost-ctx Edit")
    echoed = ordered[5]
    # both streams, in the order they arrived (two pipes: either order)
    assert sorted(echoed["content"][0]["text"].splitlines()) == ["hi", "oops"]
    read = ordered[0]
    # PostToolUse context inside the tool result, after the output
    assert read["content"][-1] == reminder("post-ctx Read") and not read["is_error"]
    denied = ordered[7]
    assert denied["is_error"]
    assert denied["content"] == [{"type": "text",
                                  "text": "PreToolUse:Bash hook error: no deny-me here"}]
    failed = ordered[8]
    assert failed["is_error"] and failed["content"][-1] == reminder("fail-ctx Bash")
    asked = ordered[9]  # an ask with no approver: the hook's reason alone
    assert asked["is_error"] and asked["content"] == [{"type": "text",
                                                       "text": "ask-me needs a person"}]
    # PreToolUse context without a decision survives a deny rule, inside the result
    ruled = ordered[10]
    assert ruled["is_error"] and ruled["content"][0]["text"].startswith(
        "permission denied for bash: denied by rule 'bash(echo rule-denies-me)'")
    assert ruled["content"][-1] == reminder("pre-ctx survives the rule")
    # a PermissionRequest deny: the model reads the hook's message alone, as in Claude Code
    assert ordered[11]["is_error"] and ordered[11]["content"] == [
        {"type": "text", "text": "no perm-refused"}]
    last = messages_body(model.requests[-1].messages)[-1]
    assert last["role"] == "user"
    assert last["content"][-1] == reminder("Stop hook feedback: one more")


async def test_conformance_corpus(zpi_env, zpi_plugins, tmp_path):
    """One run (about twenty real hook processes) checked from every side."""
    conformance = await run_corpus(zpi_env, zpi_plugins, tmp_path)
    check_every_event_has_exactly_claudes_keys_and_types(conformance)
    check_events_fire_in_claudes_order_and_a_denied_call_is_no_failure(conformance)
    check_tool_responses_have_claudes_shape_per_tool(conformance)
    check_permission_request_suggests_what_claude_code_suggests(conformance)
    check_environment_and_transcript_as_claude_code_gives_them(conformance, zpi_env)
    check_what_the_model_sees(conformance)
