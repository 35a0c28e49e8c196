"""Load Claude Code plugin folders into the ZPI agent host (entry point ``claude``).

``plugin`` is the entry point and finds the folders (``discovery``); ``folder`` turns one into a
plugin, reading its ``manifest``, taking the snapshot a session keeps (``freeze``) and gathering
its skills, agents, commands and userConfig (``components``, ``commands``); ``hooks`` runs
their hook handlers. Nothing heavy is imported here: ``zpi-host --list-plugins`` loads this
package. For the same reason the classes the folder loader builds are ``records`` (not attrs
classes) and the objects it registers are ``hookable`` (``dir()`` lists their hooks only).
"""
