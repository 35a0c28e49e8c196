#!/usr/bin/env bash
# Outlives its 1 s timeout: records its own and its child's pid, and would write marker files
# if it were not stopped.
cat > /dev/null
( sleep 4; touch "$CLAUDE_PLUGIN_DATA/child-finished" ) &
echo "$$ $!" > "$CLAUDE_PLUGIN_DATA/pids"
sleep 5
touch "$CLAUDE_PLUGIN_DATA/slow-finished"
