"""A ZCode hook: records what it received (argv, stdin, environment) in
$ZCODE_PLUGIN_DATA/seen.jsonl, then answers as a ZCode hook does for its event."""

import json
import os
import sys

event = sys.argv[1]
data = json.load(sys.stdin)
NAMES = ["ZCODE_PLUGIN_ROOT", "ZCODE_PLUGIN_DATA", "ZCODE_PLUGIN_ID", "ZCODE_PLUGIN_NAME",
         "ZCODE_PROJECT_DIR", "CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA", "CLAUDE_PROJECT_DIR",
         "CLAUDE_ENV_FILE"]
record = {"event": event, "argv": sys.argv[2:], "input": data,
          "env": {name: os.environ.get(name) for name in NAMES}}
with open(os.path.join(os.environ["ZCODE_PLUGIN_DATA"], "seen.jsonl"), "a") as handle:
    handle.write(json.dumps(record) + "\n")

answer = None
if event == "SessionStart":
    answer = {"additionalContext": "zc-start: the codename is KESTREL"}
elif event == "UserPromptSubmit":
    if "secret" in data["prompt"]:
        answer = {"continue": False, "reason": "zc-prompt: prompts about secrets are blocked"}
    else:
        answer = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                         "additionalContext": "zc-prompt: answer briefly"}}
elif event == "PreToolUse":
    if "rm -rf" in data["tool_input"].get("command", ""):
        answer = {"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": "zc-guard: rm -rf is not allowed"}}
elif event == "PermissionRequest":
    answer = {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                     "decision": {"behavior": "allow"}}}
elif event == "PostToolUse":
    answer = {"additional_context": "zc-post: output checked",
              "hookSpecificOutput": {"hookEventName": "PostToolUse",
                                     "updatedToolOutput": "REPLACED BY HOOK"}}
elif event == "PostToolUseFailure":
    answer = {"hookSpecificOutput": {"hookEventName": "PostToolUseFailure",
                                     "additionalContext": "zc-fail: the command failed"}}
elif event == "Stop":
    answer = {"decision": "block", "reason": "zc-stop: keep going"}
if answer is not None:
    print(json.dumps(answer))
