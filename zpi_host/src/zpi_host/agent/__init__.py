"""The agent loop and what it schedules: one run (request, stream, tool batch), tool calls,
events, slash commands, compaction, context usage. It works on a session's state
(:mod:`.state`) and never learns the front ends' names."""
