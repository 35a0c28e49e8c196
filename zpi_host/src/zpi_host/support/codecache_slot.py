"""Not code to import: this module's bytecode file is where :mod:`zpi_host.support.codecache` keeps
its cache of generated methods.

``pip uninstall`` removes the bytecode of every module a distribution installed, and nothing
else it finds in ``__pycache__``. Keeping the cache in this module's ``.pyc`` slot lets an
uninstall take the cache with it instead of leaving a stray file behind. The file is not a
valid ``.pyc``: were this module imported, Python would compile it anew over the cache, which
the next run rebuilds; the cache in turn ignores and replaces a real ``.pyc`` found there.
"""
