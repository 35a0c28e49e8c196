"""The name and version of an installed distribution, read from the head of its METADATA.

``Distribution.metadata`` (and so ``.name``, ``.version`` and ``importlib.metadata.version``)
imports the ``email`` parser and parses the whole file, long description included, to answer
two fields from its first lines: a fifth of a millisecond per distribution at every start,
which loads one for each plugin distribution. :func:`identity` reads the two fields from the
header block itself, and leaves anything unusual (a field missing, folded over two lines, or
a header block it would split differently) to ``Distribution.metadata``, so its answers are
the same. :func:`version` finds the distribution's folder on ``sys.path`` itself, as
``importlib.metadata`` looks for it, so ``zpi-host --version`` does not import that package
(63 ms of a 117 ms start). Standard library only.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not ``typing``'s (``--version`` imports this module)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.metadata import Distribution

__all__ = ["identity", "installed_versions", "kernel_version", "version"]

_FIELDS = ("name", "version")


def _header_fields(text: str) -> dict[str, str] | None:
    """``Name`` and ``Version`` from the header block of METADATA ``text``, as the ``email``
    parser reads them (the first of each, leading blanks and the line end removed); None when
    either is missing or a line could be read another way."""
    found: dict[str, str] = {}
    continues = False  # the line before is one of the two fields (a folded value would follow)
    for line in text.partition("\n\n")[0].split("\n"):  # the header block ends there at the latest
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


def _normalized(name: str) -> str:
    """``name`` as ``importlib.metadata`` compares distribution names (runs of ``-_.`` as one
    ``_``, lower case)."""
    out: list[str] = []
    for char in name.lower():
        if char in "-_.":
            if not out or out[-1] != "_":
                out.append("_")
        else:
            out.append(char)
    return "".join(out)


def _metadata_folders(names: Sequence[str]) -> dict[str, str]:
    """The ``.dist-info`` (or ``.egg-info``) folder of each of ``names`` on ``sys.path``, the
    first one as ``importlib.metadata`` finds it (one pass over the path for all of them); a
    name without one is left out; ``""`` for a name whose search reaches what this one does
    not read (a zip archive on the path, an egg-info file), left to ``importlib.metadata``."""
    wanted = {_normalized(name): name for name in names}
    found: dict[str, str] = {}
    for entry in sys.path:
        folder = entry or "."
        try:
            children = os.listdir(folder)
        except NotADirectoryError:  # a zip archive: importlib.metadata reads those
            for name in wanted.values():
                found.setdefault(name, "")
            break
        except OSError:
            continue
        for child in children:
            low = child.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            asked = wanted.get(_normalized(low.rpartition(".")[0].partition("-")[0]))
            if asked is None or asked in found:
                continue
            path = os.path.join(folder, child)
            found[asked] = path if os.path.isdir(path) else ""
        if len(found) == len(wanted):
            break
    return found


def _read_head(folder: str) -> str | None:
    for leaf in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(folder, leaf), encoding="utf-8") as stream:
                return stream.read()
        except OSError:
            continue
    return None


def installed_versions(names: Sequence[str]) -> dict[str, str | None]:
    """The version of each installed distribution of ``names``, None for one that is not
    installed; ``importlib.metadata`` is imported only when the folders of ``sys.path`` do not
    answer (a zip archive on the path, an ``.egg-info`` file, an unusual METADATA)."""
    folders = _metadata_folders(names)
    answers: dict[str, str | None] = {}
    for name in names:
        folder = folders.get(name)
        if folder is None:
            answers[name] = None
            continue
        text = _read_head(folder) if folder else None
        fields = _header_fields(text) if text else None
        if fields is not None:
            answers[name] = fields["version"]
            continue
        from importlib.metadata import PackageNotFoundError, distribution

        try:
            answers[name] = identity(distribution(name))[1]
        except PackageNotFoundError:
            answers[name] = None
    return answers


def version(name: str) -> str | None:
    """The version of the installed distribution ``name``, as ``importlib.metadata.version``
    (PackageNotFoundError when there is none)."""
    found = installed_versions((name,))[name]
    if found is None:
        from importlib.metadata import PackageNotFoundError

        raise PackageNotFoundError(name)
    return found


_kernel_version: list[str | None] = []


def kernel_version() -> str | None:
    """The version of ``zpi-host``, read once per process (``zpi_host.__version__``, the
    plugin listing's kernel rows and every snapshot use it). Kept in a module list, not
    ``functools.cache``: importing ``functools`` (and ``collections``) is a third of what
    ``zpi-host --version`` costs above a bare interpreter when the installed script does not
    import ``re`` (uv's does not; pip's does)."""
    if not _kernel_version:
        _kernel_version.append(version("zpi-host"))
    return _kernel_version[0]
