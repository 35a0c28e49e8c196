"""One ``__repr__`` for the host's attrs classes instead of one generated and compiled per class.

attrs writes a ``__repr__`` for every class it builds (an f-string over the fields) and
compiles it when the class is created, at import; those were 44% of the source the classes of a
one-turn ``zpi-host run`` had compiled at start (f-strings are the costliest part to compile).
The host's classes are declared ``repr=False`` and derive from :class:`FieldsRepr`, whose
single method prints the same text as attrs' generated one: ``Name(field=value, ...)`` over
the fields attrs would show (``repr=False`` fields left out, a field's own ``repr`` callable
used), ``...`` for an object already being printed further up (a cycle).
"""

from __future__ import annotations

import threading
from typing import cast

import attrs

__all__ = ["FieldsRepr"]

#: ids of the objects being printed on this thread (attrs' guard against cycles, the same way)
_printing = threading.local()


class FieldsRepr:
    """Base of an attrs class declared with ``repr=False``: its repr reads the class's fields
    when it is called, so nothing is generated when the class is built."""

    __slots__ = ()

    def __repr__(self) -> str:
        cls = type(self)
        seen: set[int] | None = getattr(_printing, "ids", None)
        if seen is None:
            seen = _printing.ids = set()
        key = id(self)
        if key in seen:
            return "..."
        seen.add(key)
        try:
            shown = [f"{field.name}="
                     + (repr(value) if field.repr is True else field.repr(value))
                     for field in attrs.fields(cast("type[attrs.AttrsInstance]", cls))
                     if field.repr is not False
                     for value in (getattr(self, field.name),)]
            return f"{cls.__qualname__.rsplit('>.', 1)[-1]}({', '.join(shown)})"
        finally:
            seen.discard(key)
