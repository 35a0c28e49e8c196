"""Plugins and a host factory shared by the hook runtime tests (policies and answers)."""

from __future__ import annotations

import time
from typing import Any

import anyio

from zpi_host import hookimpl
from zpi_host.contract.decisions import (
    CompactDecision,
    StopDecision,
    ToolDecision,
    ToolResultPatch,
)
from zpi_host.contract.plugins import PluginConfig, PluginHost


def make_host(zpi_plugins, settings: dict[str, Any] | None = None, **plugins) -> PluginHost:
    for name, plugin in plugins.items():
        zpi_plugins.register(plugin, name)
    host = PluginHost(PluginConfig(autoload=False, disabled=["zpi.tools", "zpi.models"])).load()
    if settings is not None:
        host.hooks.configure(settings)
    return host


def hooks_settings(**hooks: Any) -> dict[str, Any]:
    return {"hooks": hooks}


# ------------------------------------------------------------------------------ plugins


class Broken:
    """Raises from every guarded hook."""

    @hookimpl
    def zpi_before_tool(self, call):
        raise ValueError(f"cannot judge {call}")

    @hookimpl
    def zpi_permission_request(self, call):
        raise ValueError("no opinion")

    @hookimpl
    def zpi_user_prompt(self, prompt):
        raise KeyError("scanner missing")

    @hookimpl
    def zpi_after_tool(self, result):
        raise RuntimeError("redactor crashed")

    @hookimpl
    def zpi_stop(self, continuation):
        raise RuntimeError("stop check crashed")

    @hookimpl
    def zpi_subagent_stop(self, continuation):
        raise RuntimeError("subagent stop check crashed")

    @hookimpl
    def zpi_before_compact(self, preparation):
        raise RuntimeError("summariser crashed")

    @hookimpl
    def zpi_turn_start(self, turn):
        raise RuntimeError("turn counter crashed")

    @hookimpl
    def zpi_event(self, event):
        raise RuntimeError(f"observer broke on {event}")

    @hookimpl
    def zpi_register_tools(self, cwd):
        raise RuntimeError("no tools today")

    @hookimpl
    def zpi_system_prompt(self, prompt):
        raise RuntimeError("prompt rewriter crashed")


class Kind:
    """Answers every guarded hook favourably; runs after Broken (registered first)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    @hookimpl
    def zpi_before_tool(self, call):
        self.calls.append("before_tool")
        return ToolDecision.allow("kind says yes")

    @hookimpl
    def zpi_user_prompt(self, prompt):
        return "kind context"

    @hookimpl
    def zpi_after_tool(self, result):
        return ToolResultPatch(context="kind note")

    @hookimpl
    def zpi_stop(self, continuation):
        return StopDecision("keep going")

    @hookimpl
    def zpi_before_compact(self, preparation):
        return CompactDecision(summary="kind summary")

    @hookimpl
    def zpi_event(self, event):
        self.calls.append(f"event:{event}")

    @hookimpl
    def zpi_register_tools(self, cwd):
        return ["kind-tool"]

    @hookimpl
    def zpi_system_prompt(self, prompt):
        return prompt + " (kind)"


class Slow:
    """Async implementations that outlive any tiny budget; record being cancelled."""

    def __init__(self) -> None:
        self.cancelled: list[str] = []

    async def _sleep(self, hook: str) -> None:
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            self.cancelled.append(hook)
            raise

    @hookimpl
    async def zpi_before_tool(self, call):
        await self._sleep("zpi_before_tool")
        return ToolDecision.allow()

    @hookimpl
    async def zpi_user_prompt(self, prompt):
        await self._sleep("zpi_user_prompt")

    @hookimpl
    async def zpi_request_options(self, request):
        await self._sleep("zpi_request_options")
        return {"temperature": 1.0}


class SlowSync:
    @hookimpl
    def zpi_request_options(self, request):
        time.sleep(0.02)
        return {"temperature": 0.5}
