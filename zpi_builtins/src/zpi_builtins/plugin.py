"""Entry-point plugin ``builtins``.

The services (ask-user, web, sub-agents, background commands, memory, titles, notifications,
context guard, search tools) arrive in later releases; until then this plugin implements no
hook and contributes nothing, which is exactly what ``zpi-host --list-plugins`` shows.
"""
