"""FieldsRepr prints what attrs' generated ``__repr__`` prints, for the same class declared
both ways: fields left out or shown their own way, inherited fields, nested and cyclic values."""

from __future__ import annotations

from typing import Any

import attrs

from zpi_host.support.fields_repr import FieldsRepr


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
