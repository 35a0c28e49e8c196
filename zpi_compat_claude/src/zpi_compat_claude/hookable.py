"""The base of the objects this package registers as plugins: ``dir()`` lists only their
``zpi_*`` names.

pluggy registers an object by looking up every name ``dir()`` gives (through the class
hierarchy, with ``inspect.getattr_static``) for a hook implementation, and the kernel checks
the ``zpi_*`` ones again. A folder with hooks registers one object that is both the folder
plugin and its hook engine, about a hundred names: registering it cost 12 million
instructions, as much as loading the folder. Its hook implementations are all ``zpi_*``
names (methods of the class, or installed on the object for the events it handles), so
listing only those changes nothing pluggy finds. The attributes are all still there; only
``dir()`` leaves them out.
"""

from __future__ import annotations

PREFIX = "zpi_"


class Hookable:
    """A plugin object whose ``dir()`` is its ``zpi_*`` names (hook implementations)."""

    __slots__ = ()

    def __dir__(self) -> list[str]:
        return [name for name in object.__dir__(self) if name.startswith(PREFIX)]
