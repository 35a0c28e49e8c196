"""The four kernel tools, built once per process (Tool objects are immutable and stateless:
per-session state such as the file-read record travels in the ToolContext)."""

from __future__ import annotations

from functools import cache

from .base import Tool


@cache
def kernel_tools() -> tuple[Tool, ...]:
    from .bash import bash_tool
    from .edit import edit_tool
    from .read import read_tool
    from .write import write_tool

    return (read_tool(), write_tool(), edit_tool(), bash_tool())
