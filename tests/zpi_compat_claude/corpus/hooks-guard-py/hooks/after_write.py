#!/usr/bin/env python3
"""PostToolUse on Write: tells the model which file was written (additionalContext)."""

import json
import os
import sys

event = json.load(sys.stdin)
path = event["tool_response"]["filePath"]
print(json.dumps({"hookSpecificOutput": {
    "hookEventName": "PostToolUse",
    "additionalContext": f"after_write.py: {os.path.basename(path)} was written",
}}))
