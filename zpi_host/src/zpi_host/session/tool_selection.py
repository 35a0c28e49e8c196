"""Tool selection: registered tools, overrides, custom tools and the picking options.

The rules (DESIGN 4.3), each violation a clear error: plugin overrides and ``tool_overrides``
may only replace the kernel tools; ``custom_tools`` add new names and may not collide;
``no_tools`` empties the default set; ``tools`` picks by name; ``exclude_tools`` is validated
(an unknown name is an error) and then removes; ``hide_tools`` removes the names the session
has (for layers that stand in for optional tools). There are no hidden aliases.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import AssemblyError, UsageError
from ..tools.base import Tool

if TYPE_CHECKING:
    from ..contract.plugins import PluginHost

KERNEL_TOOL_NAMES = ("read", "write", "edit", "bash")
OPTION = "option"  # the owner recorded for tools given as create_session options


class ToolSet:
    """Tools by name, with the plugin (or ``option``) that contributed each."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.owners: dict[str, str] = {}

    def add(self, tool: Any, owner: str, what: str = "registered") -> None:
        if not isinstance(tool, Tool):
            who = "the option custom_tools" if owner == OPTION else f"plugin {owner!r}"
            raise AssemblyError(f"{who} gave {tool!r:.80}, which is not a zpi_host.Tool "
                                f"({what})")
        if tool.name in self.tools:
            raise AssemblyError(f"tool {tool.name!r} is {what} by both "
                                f"{self.owners[tool.name]!r} and {owner!r}")
        self.tools[tool.name], self.owners[tool.name] = tool, owner

    def override(self, tool: Any, owner: str) -> None:
        if not isinstance(tool, Tool) or tool.name not in KERNEL_TOOL_NAMES:
            raise AssemblyError(f"{owner!r} overrides {tool!r}; only the kernel tools "
                                f"{', '.join(KERNEL_TOOL_NAMES)} can be overridden")
        self.tools[tool.name], self.owners[tool.name] = tool, owner


async def collect_tools(host: PluginHost, cwd: Path, settings: Any) -> ToolSet:
    """Registered tools, then plugin overrides of kernel tools (first in call order wins).
    A plugin that registers a name a plugin loaded before it holds fails, alone: it is
    removed with everything it registered, and the session goes on without it."""
    from ..contract.plugin_names import later_claimants

    answers = await host.hooks.register_tools(cwd, settings)
    claims = [(a.plugin, a.value.name) for a in answers if isinstance(a.value, Tool)]
    clashes = later_claimants(claims, [r.name for r in host.records], "tool")
    for plugin, reason in clashes.items():
        host.fail_plugin(plugin, reason)
    found = ToolSet()
    for answer in answers:
        if answer.plugin not in clashes:
            found.add(answer.value, answer.plugin)
    overridden: set[str] = set()
    for answer in await host.hooks.tool_overrides(cwd, settings):
        name = getattr(answer.value, "name", None)
        if name in overridden:
            continue
        found.override(answer.value, f"plugin {answer.plugin}")
        overridden.add(name)  # type: ignore[arg-type]
    return found


def select_tools(
    found: ToolSet,
    *,
    tool_overrides: Sequence[Any] = (),
    custom_tools: Sequence[Any] = (),
    no_tools: bool = False,
    tools: Sequence[str] | None = None,
    exclude_tools: Sequence[str] = (),
    hide_tools: Sequence[str] = (),
    available: Callable[[Tool], bool] | None = None,
) -> list[Tool]:
    """Apply the option rules to ``found`` (changed in place) and return the enabled tools.
    ``available`` (each tool's ``Tool.available`` for this session) leaves out what it
    refuses, also when ``tools`` names it: the name stays known, so naming it is no error."""
    for tool in tool_overrides:
        if isinstance(tool, Tool) and tool.name not in found.tools:
            raise UsageError(f"tool_overrides: {tool.name!r} is not a known tool; overrides "
                             f"replace one of {', '.join(KERNEL_TOOL_NAMES)}")
        found.override(tool, OPTION)
    default = [] if no_tools else list(found.tools)
    for tool in custom_tools:
        if isinstance(tool, Tool) and found.owners.get(tool.name) == OPTION:
            raise UsageError(f"custom_tools: {tool.name!r} is given twice")
        if isinstance(tool, Tool) and tool.name in found.tools:
            raise UsageError(f"custom_tools: {tool.name!r} collides with the tool of "
                             f"{found.owners[tool.name]!r}; choose another name, or use "
                             "tool_overrides to replace a kernel tool")
        found.add(tool, OPTION, "given in custom_tools")
        default.append(tool.name)
    names = list(default)
    if tools is not None:
        unknown = [n for n in tools if n not in found.tools]
        if unknown:
            raise UsageError(f"unknown tool(s) {', '.join(unknown)}; available: "
                             f"{', '.join(sorted(found.tools))}")
        names = list(dict.fromkeys(tools))
    unknown = [n for n in exclude_tools if n not in found.tools]
    if unknown:
        raise UsageError(f"exclude_tools: unknown tool(s) {', '.join(unknown)}; available: "
                         f"{', '.join(sorted(found.tools))}")
    removed = {*exclude_tools, *hide_tools}
    return [found.tools[n] for n in names if n not in removed
            and (available is None or available(found.tools[n]))]
