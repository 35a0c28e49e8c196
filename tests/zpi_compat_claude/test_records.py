"""Light records (``zpi_compat_claude.records``) behave as the attrs classes they replace, and
registered plugin objects list only their hook implementations (``hookable``)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from attrs.exceptions import FrozenInstanceError
from helpers.claude_folders import claude_settings, copy_plugin, load_host

from zpi_compat_claude.records import evolve, field, record


@record
class Point:
    x: int
    y: int = 0
    tags: Mapping[str, str] = field(factory=dict, eq=False)
    secret: str = field(default="s", repr=False)

    def norm(self) -> int:
        return abs(self.x) + abs(self.y)


@record(frozen=False)
class Box:
    items: list[int] = field(factory=list)
    label: str = ""

    def __repr__(self) -> str:  # the class's own method is kept
        return f"<box {self.label}>"


def test_a_record_takes_its_fields_in_order_or_by_name_with_defaults() -> None:
    assert (Point(1).x, Point(1).y, Point(1).tags, Point(1).secret) == (1, 0, {}, "s")
    assert Point(1, 2) == Point(y=2, x=1) == Point(1, 2, {"a": "b"})  # tags: eq=False
    assert Point(1, 2) != Point(1, 3) and Point(1) != (1, 0)
    assert Point(1, 2).norm() == 3
    assert Point(1).tags is not Point(1).tags  # a factory is called for each record
    assert repr(Point(1, 2, {"k": "v"})) == "Point(x=1, y=2, tags={'k': 'v'})"
    with pytest.raises(TypeError, match=r"missing required argument: 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'z'"):
        Point(1, z=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"takes 4 positional arguments but 5"):
        Point(1, 2, {}, "s", 5)  # type: ignore[call-arg]


def test_a_frozen_record_is_hashable_and_refuses_changes() -> None:
    point = Point(1, 2)
    assert hash(point) == hash(Point(1, 2, {"other": "tags"}))
    assert {point, Point(1, 2)} == {point}
    with pytest.raises(FrozenInstanceError):
        point.x = 5  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del point.x  # type: ignore[misc]
    moved = evolve(point, y=7)
    assert (moved.x, moved.y, point.y) == (1, 7, 2)
    with pytest.raises(TypeError, match="has no field 'z'"):
        evolve(point, z=1)


def test_a_mutable_record_changes_and_is_unhashable() -> None:
    box = Box()
    box.items.append(1)
    box.label = "a"
    assert box == Box([1], "a") and repr(box) == "<box a>"
    with pytest.raises(TypeError, match="unhashable"):
        hash(box)


def test_a_field_without_a_default_cannot_follow_one_with_a_default() -> None:
    class Wrong:
        __annotations__ = {"a": "int", "b": "int"}
        a = 1

    with pytest.raises(TypeError, match=r"Wrong.b: a field without a default follows"):
        record(Wrong)


def test_a_record_cannot_extend_a_record() -> None:
    class Point3(Point):
        z: int = 0

    with pytest.raises(TypeError, match=r"Point3: a record cannot extend another record"):
        record(Point3)


def test_registered_plugin_objects_list_only_their_hook_implementations(tmp_path) -> None:
    """pluggy looks up every name ``dir()`` gives; the folder plugin (with its hook engine)
    and ``claude/skills`` list their ``zpi_*`` names only, and every hook is still found."""
    plugin = copy_plugin("hooks-guard-py", tmp_path / "plugins", as_name="guard")
    skills = copy_plugin("skills-kit", tmp_path / "plugins")
    host = load_host(claude_settings([plugin, skills]), tmp_path)
    for name in ("claude:guard", "claude:skills-kit", "claude/skills"):
        record_ = host.get(name)
        assert record_ is not None and record_.status == "ok", record_
        names = dir(record_.plugin)
        assert names and all(n.startswith("zpi_") for n in names), names
        hooks = host.implemented_hooks(name)
        assert hooks and set(hooks) <= set(names)
    assert "zpi_before_tool" in host.implemented_hooks("claude:guard")
    assert hasattr(host.get("claude:guard").plugin, "diagnostics")  # still there, not listed
