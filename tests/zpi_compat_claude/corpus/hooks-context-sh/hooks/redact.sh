#!/usr/bin/env bash
# PostToolUse on Read: output mentioning PASSWORD is replaced (updatedToolOutput).
input=$(cat)
if printf '%s' "$input" | grep -q 'PASSWORD'; then
  printf '%s\n' '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": "[redacted by redact.sh]"}}'
fi
