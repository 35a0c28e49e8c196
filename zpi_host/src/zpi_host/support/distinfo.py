"""The name and version of an installed distribution, read from the head of its METADATA.

``Distribution.metadata`` (and so ``.name``, ``.version`` and ``importlib.metadata.version``)
imports the ``email`` parser and parses the whole file, long description included, to answer
two fields from its first lines: a fifth of a millisecond per distribution at every start,
which loads one for each plugin distribution. :func:`identity` reads the two fields from the
header block itself, and leaves anything unusual (a field missing, folded over two lines, or
a header block it would split differently) to ``Distribution.metadata``, so its answers are
the same. Standard library only.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.metadata import Distribution

__all__ = ["identity", "kernel_version", "version"]

_FIELDS = ("name", "version")


def _header_fields(text: str) -> dict[str, str] | None:
    """``Name`` and ``Version`` from the header block of METADATA ``text``, as the ``email``
    parser reads them (the first of each, leading blanks and the line end removed); None when
    either is missing or a line could be read another way."""
    found: dict[str, str] = {}
    continues = False  # the line before is one of the two fields (a folded value would follow)
    for line in text.split("\n"):
        line = line.removesuffix("\r")
        if not line:
            break
        if "\r" in line:
            return None
        if line[0] in " \t":
            if continues:
                return None
            continue
        name, colon, value = line.partition(":")
        if not colon or not name or not all("!" <= c <= "~" for c in name):
            return None  # not a header line: the email parser would end the block here
        key = name.lower()
        continues = key in _FIELDS
        if continues and key not in found:
            found[key] = value.lstrip(" \t")
        elif continues:
            continues = False  # a repeat: the first one is answered, this one is not read
    return found if len(found) == len(_FIELDS) else None


def identity(dist: Distribution) -> tuple[str | None, str | None]:
    """``(Name, Version)`` of ``dist``, as ``dist.metadata["Name"]`` and ``["Version"]``."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO")
    fields = _header_fields(text) if text else None
    if fields is None:
        metadata = dist.metadata
        return metadata["Name"], metadata["Version"]
    return fields["name"], fields["version"]


def version(name: str) -> str | None:
    """The version of the installed distribution ``name``, as ``importlib.metadata.version``
    (PackageNotFoundError when there is none)."""
    from importlib.metadata import distribution

    return identity(distribution(name))[1]


@functools.cache
def kernel_version() -> str | None:
    """The version of ``zpi-host``, read once per process (``zpi_host.__version__``, the
    plugin listing's kernel rows and every snapshot use it)."""
    return version("zpi-host")
