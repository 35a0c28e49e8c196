#!/usr/bin/env bash
# The offline demo: a scripted model reads greet.py, fixes a typo with edit, and runs it with
# bash, in a copy of examples/demo/workspace (the repository itself is never changed).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
workspace="$(mktemp -d)/workspace"
cp -r "$here/workspace" "$workspace"
zpi-host run --cwd "$workspace" --model "scripted:$here/script.jsonl" "Fix the greeting in greet.py"
echo "--- greet.py after the run ($workspace/greet.py):"
cat "$workspace/greet.py"
echo "--- plugins:"
zpi-host --list-plugins
