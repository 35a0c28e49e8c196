"""Types and helpers shared by the @tool tests (kept out of the test modules so both can use
them). No ``from __future__ import annotations``: Python 3.11 cannot see NotRequired in string
annotations."""

import enum
from pathlib import Path
from typing import Any, Literal, NotRequired, Required, TypedDict

import attrs
import pytest

from zpi_host.tools.base import Tool, ToolArgumentError, ToolContext
from zpi_host.tools.decorator import tool


@attrs.define
class Depth:
    """How deep to look."""

    levels: int
    follow_links: bool = False


@attrs.frozen
class Options:
    depth: Depth
    mode: Literal["fast", "full"] = "fast"
    tags: list[str] = attrs.field(factory=list, metadata={"description": "Labels."})


class Filter(TypedDict):
    glob: str
    limit: NotRequired[int]


class Loose(TypedDict, total=False):
    name: Required[str]
    note: str


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.define
class Node:
    child: "Node | None" = None


@attrs.define
class Report:
    path: Path
    color: Color
    depth: Depth


def make_ctx() -> ToolContext:
    return ToolContext(cwd=Path("/tmp"))


def props_of(fn: Any) -> dict[str, Any]:
    return dict(tool(fn).parameters["properties"])


def argument_error(t: Tool, arguments: Any) -> ToolArgumentError:
    with pytest.raises(ToolArgumentError) as info:
        t.prepare_arguments(arguments)
    return info.value

