"""Records what a Claude Code hook receives (stdin, environment, transcript) and answers so
that every effect can be seen in the model's next request. Used by test_conformance.py."""

import json
import os
import sys

event = json.load(sys.stdin)
name = event["hook_event_name"]
transcript = []
if event.get("transcript_path") and os.path.exists(event["transcript_path"]):
    with open(event["transcript_path"], encoding="utf-8") as handle:
        transcript = [json.loads(line) for line in handle if line.strip()]
env_names = ("CLAUDECODE", "CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA", "CLAUDE_PROJECT_DIR",
             "CLAUDE_ENV_FILE")
record = {"input": event, "env": {k: os.environ.get(k) for k in env_names},
          "transcript": [[r["type"], [b.get("type") for b in r["message"]["content"]]]
                         for r in transcript],
          # toolUseResult of each tool_result record, by tool_use_id
          "results": {r["message"]["content"][0]["tool_use_id"]: r.get("toolUseResult")
                      for r in transcript if r["type"] == "user"
                      and r["message"]["content"][:1]
                      and r["message"]["content"][0].get("type") == "tool_result"}}
with open(os.path.join(os.environ["CLAUDE_PLUGIN_DATA"], "events.jsonl"), "a",
          encoding="utf-8") as out:
    out.write(json.dumps(record) + "\n")


def context(text):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": name,
                                             "additionalContext": text}}))


command = (event.get("tool_input") or {}).get("command", "")
if name == "SessionStart":
    context("start-ctx")
elif name == "UserPromptSubmit":
    if "BLOCK" in event["prompt"]:
        print("prompts saying BLOCK are blocked", file=sys.stderr)
        sys.exit(2)
    context("prompt-ctx")
elif name == "PreToolUse" and "deny-me" in command:
    print("no deny-me here", file=sys.stderr)
    sys.exit(2)
elif name == "PreToolUse" and "rewrite-me" in command:
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": name, "permissionDecision": "allow",
        "updatedInput": {"command": "echo rewritten"}}}))
elif name == "PreToolUse" and ("ask-me" in command or "perm-refused" in command):
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": name, "permissionDecision": "ask",
        "permissionDecisionReason": "ask-me needs a person"}}))
elif name == "PreToolUse" and "rule-denies-me" in command:
    context("pre-ctx survives the rule")  # no decision: a deny rule decides
elif name == "PermissionRequest" and "perm-refused" in command:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": name, "decision": {
        "behavior": "deny", "message": "no perm-refused"}}}))
elif name == "PermissionRequest" and "ask-me" in command:
    pass  # no answer: the approver decides, and there is none
elif name == "PermissionRequest":
    print(json.dumps({"hookSpecificOutput": {"hookEventName": name,
                                             "decision": {"behavior": "allow"}}}))
elif name == "PostToolUse":
    tool = event["tool_name"]
    answer = {"systemMessage": f"for-the-user {tool}",
              "hookSpecificOutput": {"hookEventName": name,
                                     "additionalContext": f"post-ctx {tool}"}}
    if tool == "Edit":  # a block after the fact: its reason is context for the model
        answer.update(decision="block", reason="post-block Edit")
    print(json.dumps(answer))
elif name == "PostToolUseFailure":
    context(f"fail-ctx {event['tool_name']}")
elif name == "Stop" and not event["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "one more"}))
