"""Load Claude Code plugin folders into the ZPI agent host (entry point ``claude``)."""
