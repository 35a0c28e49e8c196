"""Load ZCode plugin folders, config-file hooks, skills and commands into the ZPI agent host
(entry point ``zcode``): ZCode's dialect (:data:`.dialect.ZCODE`) run by ``zpi_compat_claude``'s
engine."""
