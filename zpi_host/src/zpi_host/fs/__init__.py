"""The file system, safely: atomic multi-file commits with rollback, opening a checked path
without following symlinks, reading a file a repository ships (regular, bounded, not linked
out of the project), each session's spill folder, and sweeping temp files a killed process
left."""
