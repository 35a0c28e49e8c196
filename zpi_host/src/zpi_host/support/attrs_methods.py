"""``__repr__``, ``__eq__`` and ``__hash__`` for the host's attrs classes, written once instead of
generated and compiled per class.

attrs writes these methods for every class it builds and compiles their source when the class
is created, at import: compiling them was most of what building the classes of a one-turn
``zpi-host run`` cost (the ``__repr__``, an f-string, alone 44% of the source compiled). The
host's classes are declared ``repr=False`` (and ``eq=False``) and derive from one of these
bases, whose methods read the class's fields (``attrs.fields``) and behave as attrs' generated
ones:

- :class:`FieldsRepr`: ``Name(field=value, ...)`` over the fields attrs would show
  (``repr=False`` fields left out, a field's own ``repr`` callable used), ``...`` for an object
  already being printed further up (a cycle);
- :class:`FieldsEq`: that, and equal to an object of exactly the same class whose compared
  fields (``eq=True``, through their ``eq`` key) are equal, ``NotImplemented`` for any other;
  not hashable (a mutable class);
- :class:`FrozenFieldsEq`: that, and hashed on the fields ``hash`` selects (by default the
  compared ones), as a frozen attrs class is.

The field getters are built once per class (``operator.attrgetter``, in C) on first use.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable
from typing import Any, cast

import attrs

__all__ = ["FieldsEq", "FieldsRepr", "FrozenFieldsEq"]

#: ids of the objects being printed on this thread (attrs' guard against cycles, the same way)
_printing = threading.local()

Getter = Callable[[Any], Any]


def _fields(cls: type) -> tuple[attrs.Attribute[Any], ...]:
    return attrs.fields(cast("type[attrs.AttrsInstance]", cls))


def _getter(fields: list[attrs.Attribute[Any]]) -> Getter:
    """The values (or ``eq`` keys) of ``fields`` of an instance, as one comparable value."""
    if any(getattr(field, "eq_key", None) is not None for field in fields):
        pairs = [(field.name, getattr(field, "eq_key", None)) for field in fields]
        return lambda obj: tuple(getattr(obj, name) if key is None else key(getattr(obj, name))
                                 for name, key in pairs)
    if not fields:
        return lambda obj: ()
    return operator.attrgetter(*(field.name for field in fields))


def _getters(cls: type) -> tuple[Getter, Getter]:
    """The getters of the compared and of the hashed fields of ``cls``, kept on the class."""
    found: tuple[Getter, Getter] | None = cls.__dict__.get("__zpi_field_getters__")
    if found is None:
        fields = _fields(cls)
        compared = [field for field in fields if field.eq]
        hashed = [field for field in fields if (field.eq if field.hash is None else field.hash)]
        found = (_getter(compared), _getter(hashed))
        type.__setattr__(cls, "__zpi_field_getters__", found)
    return found


def _repr(self: Any) -> str:
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
                 for field in _fields(cls) if field.repr is not False
                 for value in (getattr(self, field.name),)]
        return f"{cls.__qualname__.rsplit('>.', 1)[-1]}({', '.join(shown)})"
    finally:
        seen.discard(key)


def _eq(self: Any, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    compared = _getters(self.__class__)[0]
    return bool(compared(self) == compared(other))


def _hash(self: Any) -> int:
    cls = self.__class__
    return hash((cls, _getters(cls)[1](self)))


# Three sibling bases rather than a chain: every class built on them looks its special
# methods up along its MRO when it is created, so each level costs every class.


class FieldsRepr:
    """Base of an attrs class declared with ``repr=False``: its repr reads the class's fields
    when it is called, so nothing is generated when the class is built."""

    __slots__ = ()
    __repr__ = _repr


class FieldsEq:
    """Base of a mutable attrs class declared ``repr=False, eq=False``: compared on its fields,
    not hashable (as attrs makes a mutable class that compares its fields)."""

    __slots__ = ()
    __repr__ = _repr
    __eq__ = _eq
    __hash__ = None  # type: ignore[assignment]


class FrozenFieldsEq:
    """Base of a frozen attrs class declared ``repr=False, eq=False``: compared and hashed on
    its fields."""

    __slots__ = ()
    __repr__ = _repr
    __eq__ = _eq
    __hash__ = _hash
