"""Reading a file because a repository contains it: no-follow out of its root, regular, bounded.

A repository decides what its ``.gitignore``, ``.zpi/settings.json``, ``AGENTS.md`` or command
files are, so each could be a symlink to ``/dev/zero`` (read until memory runs out), a FIFO
(an ``open`` that never returns), or a link to a file of the user's outside the project.
:func:`read_shipped` is the one way the host reads such a file:

- the path is resolved once; when ``root`` is given, the file must lie inside it: a symlink
  within the project to another file of the project is followed (``CLAUDE.md -> AGENTS.md``
  is common, and the target is the repository's own text as much as the link is), one that
  leads out of the root is refused;
- the resolved path is opened one component at a time without following symlinks and with
  ``O_NONBLOCK`` (:mod:`zpi_host.fs.nofollow`): anything but a regular file (a FIFO, device,
  socket, directory) is refused without being opened, and again after ``fstat``;
- at most ``limit`` bytes are read; a longer file is refused whole (never cut silently).

Every refusal is a :class:`ShippedFileError` naming the file, what it is and what to do; the
caller decides what a refusal means (a broken settings file, an ignore file left out, a
problem of a command). A file that does not exist raises FileNotFoundError, as ``open`` does.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Final

from ..errors import ZpiError
from . import nofollow

__all__ = ["CONFIG_LIMIT", "TEXT_LIMIT", "ShippedFileError", "read_shipped"]

MIB: Final = 1024 * 1024
#: settings, configuration, manifest, hook, ``.mcp.json`` and ignore files
CONFIG_LIMIT: Final = 1 * MIB
#: instruction text: ``AGENTS.md``/``CLAUDE.md``, commands, skills, agent definitions
TEXT_LIMIT: Final = 4 * MIB


class ShippedFileError(ZpiError):
    """A file a repository ships that the host refused to read: ``problem`` says why,
    ``detail`` also what to do (the message without the path)."""

    def __init__(self, path: Path | str, problem: str, advice: str) -> None:
        self.path, self.problem = Path(path), problem
        self.detail = f"{problem}; it was not read: {advice}"
        super().__init__(f"{path}: {self.detail}")


def _size(n: int) -> str:
    return f"{n // MIB} MiB" if n % MIB == 0 else f"{n} bytes"


def _a(what: str) -> str:
    return f"{'an' if what[:1] in 'aeiou' else 'a'} {what}"


def _inside(real: Path, root: Path) -> bool:
    return real == root or root in real.parents


def read_shipped(path: Path | str, *, limit: int, root: Path | str | None = None,
                 what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them. ``root``: the folder
    the file must resolve inside (None: anywhere, for the user's own files, which are still
    read only when regular and bounded). ``what`` names the file in messages ("settings
    file"). Raises FileNotFoundError when it does not exist, ShippedFileError otherwise."""
    absolute = Path(os.path.abspath(path))
    try:
        real = nofollow.resolve(absolute)
        top = nofollow.resolve(Path(os.path.abspath(root))) if root is not None else None
    except nofollow.UnusablePathError as exc:
        raise ShippedFileError(path, str(exc), "rename or remove it") from None
    if top is not None and not _inside(real, top):
        how = "is a symlink to" if os.path.islink(absolute) else "leads to"
        raise ShippedFileError(path, f"it {how} {real}, outside {top}",
                               f"{_a(what)} a repository ships may only link to files inside it; "
                               "copy the file in or remove the link")
    try:
        fd, st = nofollow.open_regular(real)
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(errno.ENOENT, "no such file", str(path)) from None
    except nofollow.SpecialFileError as exc:
        linked = f" (it links to {real})" if real != absolute else ""
        raise ShippedFileError(path, f"it is {exc.kind}{linked}, not a regular file",
                               f"{_a(what)} must be a regular file; replace or remove it") from None
    except nofollow.PathChangedError as exc:
        raise ShippedFileError(path, str(exc), "try again") from None
    except OSError as exc:
        raise ShippedFileError(path, f"cannot open it: {exc.strerror or exc}",
                               "check its permissions") from None
    try:
        if st.st_size > limit:
            raise _too_large(path, f"{st.st_size} bytes", limit, what)
        chunks: list[bytes] = []
        total = 0
        while total <= limit and (chunk := os.read(fd, limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise ShippedFileError(path, f"cannot read it: {exc.strerror or exc}",
                               "check the file") from None
    finally:
        os.close(fd)
    if total > limit:  # it grew while being read
        raise _too_large(path, f"more than {_size(limit)}", limit, what)
    return b"".join(chunks)


def _too_large(path: Path | str, size: str, limit: int, what: str) -> ShippedFileError:
    return ShippedFileError(path, f"it is {size}, more than the {_size(limit)} {_a(what)} may "
                                  "have", "make it smaller (or split it)")
