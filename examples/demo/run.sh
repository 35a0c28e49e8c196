#!/usr/bin/env bash
# The offline demo: a scripted model reads greet.py, fixes a typo with edit, and runs it with
# bash, in a copy of examples/demo/workspace (the repository itself is never changed). Its
# session goes to a temporary agent dir, never into your ~/.zpi.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
scratch="$(mktemp -d)"
workspace="$scratch/workspace"
export ZPI_AGENT_DIR="$scratch/agent"
cp -r "$here/workspace" "$workspace"
# The edit runs by --permission-mode acceptEdits; the command by the rule that names it (by
# default an edit or a command asks, and a run without a terminal denies it).
zpi-host run --cwd "$workspace" --model "scripted:$here/script.jsonl" \
  --permission-mode acceptEdits --allow "bash(python3 greet.py)" "Fix the greeting in greet.py"
echo "--- greet.py after the run ($workspace/greet.py):"
cat "$workspace/greet.py"
echo "--- plugins:"
zpi-host --list-plugins
