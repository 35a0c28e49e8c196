"""Session stores: the ``SessionStore`` protocol (duck-type compatible with
claude-agent-sdk's), the in-memory, SQLite and PostgreSQL stores, the mirror that copies each
committed record to a store, and resuming a session from one. The CLI and the SDK both use
them."""
