#!/usr/bin/env python3
"""PreToolUse guard: records every event it sees, then
- Bash with `rm -rf`: JSON deny (exit 0);
- Bash with `forbidden`: exit 2 with the reason on stderr;
- Bash `echo ...`: allowed, its command rewritten (updatedInput);
- Write to `*.draft`: allowed, rewritten to `*.txt` with the content upper-cased."""

import json
import os
import sys

event = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PLUGIN_DATA"], "seen.jsonl"), "a") as log:
    log.write(json.dumps(event) + "\n")

tool, tool_input = event["tool_name"], event["tool_input"]


def answer(**specific):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", **specific}}))
    sys.exit(0)


if tool == "Bash":
    command = tool_input["command"]
    if "rm -rf" in command:
        answer(permissionDecision="deny",
               permissionDecisionReason="guard.py: rm -rf is not allowed here")
    if "forbidden" in command:
        print("guard.py: the word 'forbidden' is forbidden", file=sys.stderr)
        sys.exit(2)
    if command.startswith("echo "):
        answer(permissionDecision="allow", permissionDecisionReason="guard.py: echo is fine",
               updatedInput={**tool_input, "command": command.replace("echo ", "echo guarded:", 1)})
elif tool == "Write" and tool_input["file_path"].endswith(".draft"):
    answer(permissionDecision="allow",
           updatedInput={"file_path": tool_input["file_path"][: -len(".draft")] + ".txt",
                         "content": tool_input["content"].upper()})
sys.exit(0)
