"""Light record classes for what the folder loader builds while plugins are listed.

``zpi-host --list-plugins`` with one Claude folder imported twenty attrs classes (the dialect,
the manifest, the folder, the snapshot, the hook configuration ...). attrs builds each class
when its module is imported, about 1.7 million instructions (0.4 ms) for one of ten fields
even with its generated code cached; these twenty were 25 of the 76 million instructions the
benchmark's folder added to the listing. :func:`record` does the part of that this package
uses at a small fraction of the cost: the methods are shared functions reading the class's
field table, nothing is generated or compiled, and the class is not rebuilt with slots.

A record has attrs' behaviour where this package relies on it: ``__init__`` takes the fields
in order (positionally or by name) with their defaults or factories; ``__eq__`` and
``__repr__`` cover the fields (less those marked ``eq=False`` or ``repr=False``); a frozen
record (the default) is hashable and refuses assignment with attrs' ``FrozenInstanceError``;
a mutable one (``frozen=False``) is unhashable; :func:`evolve` copies one with some fields
changed. Type checkers see the class as a dataclass (``dataclass_transform``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

from attr.exceptions import FrozenInstanceError

__all__ = ["evolve", "field", "record"]

T = TypeVar("T")
R = TypeVar("R")

_MISSING: Any = object()


class _Field:
    """A field's options, as :func:`field` returns them in the class body."""

    __slots__ = ("default", "eq", "factory", "repr")

    def __init__(self, default: Any, factory: Callable[[], Any] | None, eq: bool,
                 repr: bool) -> None:
        self.default, self.factory, self.eq, self.repr = default, factory, eq, repr


@overload
def field(*, default: T, eq: bool = True, repr: bool = True) -> T: ...
@overload
def field(*, factory: Callable[[], T], eq: bool = True, repr: bool = True) -> T: ...
@overload
def field(*, eq: bool = True, repr: bool = True) -> Any: ...
def field(*, default: Any = _MISSING, factory: Callable[[], Any] | None = None, eq: bool = True,
          repr: bool = True) -> Any:
    """A field with a ``default`` or a ``factory`` (called for each new record), left out of
    equality (``eq=False``) or of the repr (``repr=False``)."""
    return _Field(default, factory, eq, repr)


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    cls = type(self)
    fields = cls.__record_fields__
    if len(args) > len(fields):
        raise TypeError(f"{cls.__name__}() takes {len(fields)} positional arguments but "
                        f"{len(args)} were given")
    put = object.__setattr__
    for (name, _, _), value in zip(fields, args, strict=False):
        put(self, name, value)
    for name, default, factory in fields[len(args):]:
        if name in kwargs:
            value = kwargs.pop(name)
        elif factory is not None:
            value = factory()
        elif default is not _MISSING:
            value = default
        else:
            raise TypeError(f"{cls.__name__}() missing required argument: {name!r}")
        put(self, name, value)
    if kwargs:
        raise TypeError(f"{cls.__name__}() got an unexpected keyword argument "
                        f"{next(iter(kwargs))!r}")


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return all(getattr(self, n) == getattr(other, n) for n in self.__record_eq__)


def _hash(self: Any) -> int:
    return hash((self.__class__.__qualname__, *(getattr(self, n) for n in self.__record_eq__)))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__record_repr__)
    return f"{self.__class__.__qualname__}({shown})"


def _refuse(self: Any, name: str, value: Any = None) -> None:
    raise FrozenInstanceError()


def _build(cls: type[R], frozen: bool) -> type[R]:
    if any("__record_fields__" in vars(base) for base in cls.__mro__[1:]):
        raise TypeError(f"{cls.__name__}: a record cannot extend another record (the fields "
                        "of the base would be lost); use attrs for a class hierarchy")
    table: list[tuple[str, Any, Callable[[], Any] | None]] = []
    eq: list[str] = []
    shown: list[str] = []
    for name, annotation in inspect.get_annotations(cls).items():
        if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = cls.__dict__.get(name, _MISSING)
        spec = value if isinstance(value, _Field) else _Field(value, None, True, True)
        if isinstance(value, _Field):
            delattr(cls, name)  # the instance holds the value; no class attribute shadows it
        if table and table[-1][1] is not _MISSING and spec.default is _MISSING \
                and spec.factory is None:
            raise TypeError(f"{cls.__name__}.{name}: a field without a default follows one "
                            "with a default")
        table.append((name, spec.default, spec.factory))
        if spec.eq:
            eq.append(name)
        if spec.repr:
            shown.append(name)
    attributes: dict[str, Any] = {
        "__record_fields__": tuple(table), "__record_eq__": tuple(eq),
        "__record_repr__": tuple(shown), "__init__": _init, "__eq__": _eq, "__repr__": _repr,
        "__hash__": _hash if frozen else None,
    }
    if frozen:
        attributes.update(__setattr__=_refuse, __delattr__=_refuse)
    for key, value in attributes.items():
        if key.startswith("__record") or key not in cls.__dict__:  # the class's own wins
            setattr(cls, key, value)
    return cls


@overload
def record(cls: type[R], /) -> type[R]: ...
@overload
def record(*, frozen: bool = True) -> Callable[[type[R]], type[R]]: ...
@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[R] | None = None, /, *, frozen: bool = True) -> Any:
    """Make ``cls`` a record of its annotated fields (frozen unless ``frozen=False``)."""
    if cls is None:
        return lambda c: _build(c, frozen)
    return _build(cls, frozen)


def evolve(instance: R, **changes: Any) -> R:
    """A copy of the record ``instance`` with ``changes`` (field name -> value)."""
    cls = type(instance)
    values = {name: getattr(instance, name) for name, _, _ in cls.__record_fields__}  # type: ignore[attr-defined]
    unknown = set(changes) - set(values)
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {sorted(unknown)[0]!r}")
    values.update(changes)
    return cls(**values)
