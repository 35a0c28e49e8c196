#!/usr/bin/env python3
"""Stop: the first time, keep the run going (decision block); once stop_hook_active is true,
let it stop. Every round is recorded in CLAUDE_PLUGIN_DATA/stops.jsonl."""

import json
import os
import sys

event = json.load(sys.stdin)
with open(event["transcript_path"]) as transcript:
    lines = sum(1 for _ in transcript)
with open(os.path.join(os.environ["CLAUDE_PLUGIN_DATA"], "stops.jsonl"), "a") as log:
    log.write(json.dumps({"stop_hook_active": event["stop_hook_active"],
                          "last_assistant_message": event["last_assistant_message"],
                          "transcript_lines": lines})
              + "\n")
if not event["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "stop.py: run the tests before you stop"}))
