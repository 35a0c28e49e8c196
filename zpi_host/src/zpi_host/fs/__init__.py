"""The file system, safely: atomic multi-file commits with rollback, opening a checked path
without following symlinks, each session's spill folder, and sweeping temp files a killed
process left."""
