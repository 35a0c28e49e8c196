"""Load Claude Code plugin folders into the ZPI agent host (entry point ``claude``).

``plugin`` is the entry point and finds the folders (``discovery``); ``folder`` turns one into a
plugin, reading its ``manifest``, taking the snapshot a session keeps (``freeze``) and gathering
its skills, agents, commands and userConfig (``components``, ``commands``); ``hooks`` runs
their hook handlers. Nothing heavy is imported here: ``zpi-host --list-plugins`` loads this
package.
"""
