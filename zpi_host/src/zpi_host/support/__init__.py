"""Small helpers every layer may use and that know nothing of agents: lazy package
attributes, digests, distribution metadata, read-only list views, process groups, secret
redaction, text safe for a terminal."""
