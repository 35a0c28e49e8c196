"""Shared fixtures for the transcript tests: an agent dir, a project dir, sample messages."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from zpi_host.providers.messages import (
    AssistantMessage,
    ContextMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCallContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    return tmp_path / "agent"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def sample_messages() -> list[Any]:
    """One of every message shape, with every optional part filled in somewhere."""
    return [
        UserMessage((TextContent("look at this"),
                     ImageContent.from_bytes(b"\x89PNG", "image/png"))),
        AssistantMessage(
            (ThinkingContent("let me think", "sig-abc=="), ThinkingContent("unsigned"),
             TextContent("reading it"),
             ToolCallContent("toolu_01", "read", {"path": "a.py", "nested": {"n": [1, 2.5, None]}}),
             ToolCallContent("toolu_02", "bash", {})),
            "tool_use", Usage(10, 20, 30, 40), "anthropic", "claude-x", None),
        ToolResultMessage("toolu_01", "read", (TextContent("1\tprint()\n"),), False,
                          {"duration_ms": 1.25, "lines": [1, 2]}),
        ToolResultMessage("toolu_02", "bash", (TextContent("boom"),
                                               ImageContent("aGk=", "image/jpeg")), True, None),
        ContextMessage("remember: tabs", "memory"),
        AssistantMessage((TextContent("failed \u2028 \U0001f600 \udcff"),), "error", Usage(), "",
                         "", "provider said no"),
    ]


@pytest.fixture
def messages() -> list[Any]:
    return sample_messages()


@pytest.fixture
def read_lines() -> Callable[[Path], list[dict[str, Any]]]:
    """The JSON objects of a transcript's lines."""

    def read(path: Path) -> list[dict[str, Any]]:
        return [json.loads(line) for line in path.read_bytes().split(b"\n") if line]

    return read


@pytest.fixture
def write_lines(tmp_path: Path) -> Callable[..., Path]:
    """Write records (dicts are dumped, strings written as they are) as a .jsonl file."""

    def write(records: list[Any], name: str = "t.jsonl", end: str = "\n") -> Path:
        path = tmp_path / name
        text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records)
        path.write_text(text + end if records else "")
        return path

    return write
