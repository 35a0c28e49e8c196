#!/usr/bin/env bash
# UserPromptSubmit: a prompt that mentions a secret is blocked (exit 2, reason on stderr);
# any other prompt gets context through JSON additionalContext.
input=$(cat)
if printf '%s' "$input" | grep -q 'secret'; then
  echo "prompt.sh: prompts about secrets are blocked" >&2
  exit 2
fi
printf '%s\n' '{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "prompt.sh: answer in English"}}'
