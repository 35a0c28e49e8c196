"""System services for the ZPI agent host, delivered as plugins (entry point ``builtins``)."""
