"""Tools, policies and a one-call check shared by the permission tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zpi_host.permissions import (
    PermissionPolicy,
    PermissionResult,
    PermissionRules,
    WorkspaceRoots,
)
from zpi_host.tools.base import Tool, ToolCall, ToolMetadata, ToolResult
from zpi_host.tools.bash import bash_tool
from zpi_host.tools.edit import edit_tool
from zpi_host.tools.read import read_tool
from zpi_host.tools.write import write_tool

READ, WRITE, EDIT, BASH = read_tool(), write_tool(), edit_tool(), bash_tool()


def plugin_tool(name: str, *, read_only: bool = False) -> Tool:
    return Tool(name, "a plugin tool", {"type": "object"},
                lambda args, ctx: ToolResult.text("ok"), ToolMetadata(read_only=read_only))


def policy(ws: Path, mode: str = "default", *, allow: tuple[str, ...] = (),
           deny: tuple[str, ...] = (), ask: tuple[str, ...] = (), extra: tuple[Path, ...] = (),
           can_use_tool: Any = None) -> PermissionPolicy:
    rules = PermissionRules.build(None, allow=allow, deny=deny, ask=ask)
    return PermissionPolicy(mode, rules, WorkspaceRoots(ws, extra), can_use_tool)  # type: ignore[arg-type]


async def check(p: PermissionPolicy, tool: Tool, hook: Any = None, **arguments: Any
                ) -> PermissionResult:
    return await p.check(tool, ToolCall("call-1", tool.name, arguments), hook=hook)
