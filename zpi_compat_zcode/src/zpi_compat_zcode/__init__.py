"""Load ZCode plugin folders into the ZPI agent host (entry point ``zcode``), built on
``zpi_compat_claude``."""
