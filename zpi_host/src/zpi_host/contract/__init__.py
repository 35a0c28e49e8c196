"""The hook contract and the plugin host: the ``zpi_*`` hookspecs, the answers hooks give
and how several combine, the awaiting facade and its runner, ``PluginHost`` (pluggy and entry
points), the frozen plugin snapshot and the diagnostics ``--list-plugins`` prints."""
