"""create_session(): plugins -> providers -> model -> tools -> system prompt -> session.

The CLI and embedding programs build sessions only through this function, so what a preview
shows is what a run uses.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import UsageError, ZpiError
from .plugins import PluginHost

if TYPE_CHECKING:
    from .providers.base import Provider, ProviderFactory
    from .session import AgentSession
    from .tools.base import Tool

KERNEL_TOOL_NAMES = ("read", "write", "edit", "bash")

BASE_PROMPT = """\
You are a coding agent working in the directory {cwd}. You read and change the workspace only \
through your tools. Read a file before you change it; prefer edit for small changes; use bash \
to run commands. When the task is done, answer briefly with what you did."""


class AssemblyError(ZpiError):
    """A session could not be assembled from the plugins' contributions."""


def parse_model(spec: str) -> tuple[str, str]:
    """``PROVIDER:MODEL`` -> (provider, model); the model part may itself contain colons."""
    provider, sep, model = spec.partition(":")
    if not sep or not provider:
        raise UsageError(f"model {spec!r} must look like PROVIDER:MODEL, for example "
                         "scripted:examples/demo/script.jsonl")
    return provider, model


async def collect_providers(
    host: PluginHost, settings: Mapping[str, Any]
) -> dict[str, ProviderFactory]:
    factories: dict[str, ProviderFactory] = {}
    owners: dict[str, str] = {}
    for answer in await host.hooks.register_providers(settings):
        name = getattr(answer.value, "name", None)
        if not isinstance(name, str) or not callable(getattr(answer.value, "create", None)):
            raise AssemblyError(f"plugin {answer.plugin!r} registered {answer.value!r}, which is "
                                "not a provider factory (needs .name and .create)")
        if name in factories:
            raise AssemblyError(f"provider {name!r} is registered by both {owners[name]!r} and "
                                f"{answer.plugin!r}; block one with -p no:NAME")
        factories[name], owners[name] = answer.value, answer.plugin
    return factories


async def collect_tools(
    host: PluginHost, cwd: Path, settings: Mapping[str, Any]
) -> list[Tool]:
    """Registered tools, then overrides of kernel tools; collisions are errors naming both."""
    from .tools.base import Tool

    tools: dict[str, Tool] = {}
    owners: dict[str, str] = {}
    for answer in await host.hooks.register_tools(cwd, settings):
        tool = answer.value
        if not isinstance(tool, Tool):
            raise AssemblyError(f"plugin {answer.plugin!r} registered {tool!r}, not a Tool")
        if tool.name in tools:
            raise AssemblyError(f"tool {tool.name!r} is registered by both "
                                f"{owners[tool.name]!r} and {answer.plugin!r}")
        tools[tool.name], owners[tool.name] = tool, answer.plugin
    overridden: set[str] = set()
    for answer in await host.hooks.tool_overrides(cwd, settings):
        tool = answer.value
        if not isinstance(tool, Tool) or tool.name not in KERNEL_TOOL_NAMES:
            raise AssemblyError(f"plugin {answer.plugin!r} overrides {tool!r}; only the kernel "
                                f"tools {', '.join(KERNEL_TOOL_NAMES)} can be overridden")
        if tool.name in overridden:
            continue  # first in call order wins
        overridden.add(tool.name)
        tools[tool.name], owners[tool.name] = tool, answer.plugin
    return list(tools.values())


async def create_session(
    *,
    model: str,
    cwd: str | Path | None = None,
    host: PluginHost | None = None,
    settings: Mapping[str, Any] | None = None,
    max_turns: int | None = None,
    session_id: str | None = None,
    tools: Sequence[str] | None = None,
    provider: Provider | None = None,
) -> AgentSession:
    """Assemble a session. ``model`` is ``PROVIDER:MODEL``; ``provider`` may be given directly
    (``FunctionModel`` in tests), then ``model`` only names it."""
    from .session import AgentSession
    from .tools.file_state import FileReadState

    if max_turns is not None and max_turns < 1:
        raise UsageError(f"max_turns must be at least 1, got {max_turns}")
    root = Path(cwd if cwd is not None else Path.cwd()).expanduser().resolve()
    if not root.is_dir():
        raise UsageError(f"working directory {root} does not exist or is not a directory")
    host = host if host is not None else PluginHost().load()
    settings = settings or {}
    if provider is None:
        provider_name, model_id = parse_model(model)
        factories = await collect_providers(host, settings)
        if provider_name not in factories:
            known = ", ".join(sorted(factories)) or "none"
            raise UsageError(f"unknown model provider {provider_name!r} (installed: {known})")
        provider = factories[provider_name].create(model_id, settings)
    selected = await collect_tools(host, root, settings)
    if tools is not None:
        unknown = sorted(set(tools) - {t.name for t in selected})
        if unknown:
            raise UsageError(f"unknown tool(s) {', '.join(unknown)}; available: "
                             f"{', '.join(sorted(t.name for t in selected))}")
        selected = [t for t in selected if t.name in set(tools)]
    instructions = await host.hooks.instructions(root, settings, None)
    prompt = BASE_PROMPT.format(cwd=root)
    if instructions:
        prompt += "\n\n" + "\n\n".join(i.text for i in instructions)
    prompt = await host.hooks.system_prompt(prompt, selected, instructions, None)
    return AgentSession(
        host=host, provider=provider, tools=selected, system_prompt=prompt, cwd=root,
        file_state=FileReadState(), settings=settings, session_id=session_id,
        max_turns=max_turns, spill_dir=Path(tempfile.gettempdir()) / "zpi-spill",
    )
