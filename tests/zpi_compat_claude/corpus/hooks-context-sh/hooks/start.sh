#!/usr/bin/env bash
# SessionStart: plain stdout becomes context; exports go to CLAUDE_ENV_FILE for later bash calls.
input=$(cat)
source=$(printf '%s' "$input" | sed -n 's/.*"source": *"\([a-z]*\)".*/\1/p')
echo "export CONTEXT_SH_MARK=from-session-start" >> "$CLAUDE_ENV_FILE"
echo "CONTEXT_SH_PATH=\"\$HOME/context-sh\"" >> "$CLAUDE_ENV_FILE"
echo "start.sh: the project codename is BLUEBIRD (source: $source)"
