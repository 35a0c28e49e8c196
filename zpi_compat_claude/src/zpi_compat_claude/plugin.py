"""Entry-point plugin ``claude``.

Folder discovery (``--plugin-dir``, ``compat.claude.plugin_dirs``, Claude's installed plugins)
and the hook runner are not implemented yet, so this plugin registers no folder and implements
no hook; ``zpi-host --list-plugins`` shows it as contributing nothing.
"""
