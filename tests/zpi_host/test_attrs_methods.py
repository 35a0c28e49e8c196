"""The shared methods behave as attrs' generated ones, for the same class declared both ways:
the repr (fields left out or shown their own way, inherited fields, nested and cyclic values),
equality (fields left out, ``eq`` keys, other classes) and the hash (frozen: hashable, the
``hash=False`` fields left out; mutable: not hashable)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from zpi_host.support.attrs_methods import FieldsEq, FieldsRepr, FrozenFieldsEq


def _pair(frozen: bool = True) -> tuple[Any, Any]:
    decorate = attrs.frozen if frozen else attrs.define

    @decorate
    class Generated:
        name: str
        secret: str = attrs.field(default="key", repr=False)
        size: int = attrs.field(default=3, repr=lambda value: f"<{value} bytes>")
        items: tuple[Any, ...] = ()

    @decorate(repr=False)
    class Shared(FieldsRepr):
        name: str
        secret: str = attrs.field(default="key", repr=False)
        size: int = attrs.field(default=3, repr=lambda value: f"<{value} bytes>")
        items: tuple[Any, ...] = ()

    return Generated, Shared


def _same_name(text: str) -> str:
    return text.replace("Generated", "X").replace("Shared", "X")


def test_the_same_text_as_attrs() -> None:
    generated, shared = _pair()
    for args in (("a",), ("b", "s", 10, (1, "two", None))):
        assert _same_name(repr(shared(*args))) == _same_name(repr(generated(*args)))
    assert repr(shared("a")) == "Shared(name='a', size=<3 bytes>, items=())"


def test_nested_and_inherited_fields() -> None:
    _, shared = _pair()

    @attrs.frozen(repr=False)
    class Child(shared):  # type: ignore[misc,valid-type]
        extra: int = 7

    inner = shared("in")
    assert repr(Child("c", items=(inner,))).endswith(
        f"Child(name='c', size=<3 bytes>, items=({inner!r},), extra=7)")


def test_a_cycle_prints_dots_as_attrs_does() -> None:
    generated, shared = _pair(frozen=False)
    made = []
    for cls in (generated, shared):
        first = cls("first")
        first.items = (first,)
        made.append(_same_name(repr(first)))
    assert made[0] == made[1]
    assert "items=(...,)" in made[1]


def test_a_failing_field_repr_leaves_no_mark() -> None:
    """An exception from a value's repr propagates; the object prints normally after."""

    class Bad:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    _, shared = _pair()
    value = shared("x", items=(Bad(),))
    try:
        repr(value)
    except RuntimeError:
        pass
    else:
        raise AssertionError("the value's error was swallowed")
    assert repr(shared("x")).endswith("Shared(name='x', size=<3 bytes>, items=())")


def _compared(frozen: bool) -> tuple[Any, Any]:
    decorate = attrs.frozen if frozen else attrs.define
    base = FrozenFieldsEq if frozen else FieldsEq

    @decorate
    class Generated:
        name: str
        note: str = attrs.field(default="", eq=False)
        tag: str = attrs.field(default="A", eq=str.lower)
        extra: int = attrs.field(default=0, hash=False)

    @decorate(repr=False, eq=False)
    class Shared(base):  # type: ignore[valid-type,misc]
        name: str
        note: str = attrs.field(default="", eq=False)
        tag: str = attrs.field(default="A", eq=str.lower)
        extra: int = attrs.field(default=0, hash=False)

    return Generated, Shared


CASES = [(("a",), ("a",)), (("a", "x"), ("a", "y")), (("a", "", "A"), ("a", "", "a")),
         (("a",), ("b",)), (("a", "", "A", 1), ("a", "", "A", 2)), (("a", "", "A"), ("a", "", "B"))]


@pytest.mark.parametrize("frozen", [True, False])
def test_equality_as_attrs(frozen: bool) -> None:
    generated, shared = _compared(frozen)
    for left, right in CASES:
        assert (shared(*left) == shared(*right)) == (generated(*left) == generated(*right))
        assert (shared(*left) != shared(*right)) == (generated(*left) != generated(*right))
    assert shared("a") != generated("a")
    assert shared("a") != ("a",)
    assert shared("a").__eq__(object()) is NotImplemented


def test_frozen_hash_follows_the_hashed_fields() -> None:
    generated, shared = _compared(frozen=True)
    for left, right in CASES:
        if generated(*left) == generated(*right):
            assert hash(shared(*left)) == hash(shared(*right))
    assert len({shared("a", "x", "A", 1), shared("a", "y", "a", 1), shared("b")}) == 2
    assert hash(shared("a")) != hash(shared("b"))


def test_a_mutable_class_is_not_hashable() -> None:
    generated, shared = _compared(frozen=False)
    for cls in (generated, shared):
        with pytest.raises(TypeError, match="unhashable"):
            hash(cls("a"))


def test_subclasses_compare_their_own_fields() -> None:
    _, shared = _compared(frozen=True)

    @attrs.frozen(repr=False, eq=False)
    class Child(shared):  # type: ignore[misc,valid-type]
        more: int = 0

    assert Child("a", more=1) != Child("a", more=2)
    assert Child("a", more=1) == Child("a", more=1)
    assert Child("a") != shared("a")
    assert hash(Child("a", more=1)) != hash(Child("a", more=2))
