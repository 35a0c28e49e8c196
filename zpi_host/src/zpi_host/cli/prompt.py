"""``zpi-host prompt``: the system prompt and tools a run would send, assembled by the same
``create_session`` path as ``run`` (same flags), without asking the model anything."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from .exits import EXIT_OK, CliUsageError, print_warning


def add_prompt_parser(commands: Any) -> None:
    import argparse

    from .run import add_assembly_options

    prompt = commands.add_parser(
        "prompt", help="print the system prompt and tools a run would use (no model call)",
        description="Assemble a session as `run` would and print its system prompt and "
                    "tools; nothing is sent to the model and no session file is written.",
        epilog="examples:\n  zpi-host prompt\n  zpi-host prompt --model sonnet --json\n"
               "  zpi-host prompt --tools read,grep --append-system-prompt 'Be brief.'",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    prompt.add_argument("--json", dest="as_json", action="store_true",
                        help="JSON: {model, system_prompt, tools: [{name, description, "
                             "parameters}]}")
    add_assembly_options(prompt)


def prompt_command(args: Any, blocked: list[str]) -> int:
    import anyio

    return anyio.run(_preview, args, blocked)


async def _preview(args: Any, blocked: list[str]) -> int:
    from ..errors import ZpiError
    from ..session.assembly import create_session
    from .run import assembly_failed, assembly_kwargs

    model = args.model or os.environ.get("ZPI_MODEL")
    try:
        from .init_agent_dir import first_run

        first_run()  # as run does: the preview shows the agent directory a run would see
        session = await create_session(persist=False,
                                       **assembly_kwargs(args, blocked, model))
    except (CliUsageError, ZpiError) as exc:
        return assembly_failed(exc)
    try:
        for warning in session.take_warnings():  # a run delivers them as events
            print_warning(warning)
        tools: list[dict[str, Any]] = [{"name": t.name, "description": t.description,
                  "parameters": dict(t.parameters)} for t in session.tools.values()]
        model_name = f"{session.provider.name}:{session.provider.model}"
        if args.as_json:
            print(json.dumps({"model": model_name, "system_prompt": session.system_prompt,
                              "tools": tools}, indent=2, default=str))
        else:
            from ..support.terminal_text import shown

            def out(text: str) -> None:  # AGENTS.md, command and tool text: shown exactly
                print(shown(text, sys.stdout, exact=True))

            out(session.system_prompt)
            out(f"\n--- model: {model_name}; {len(tools)} tool(s) ---")
            for tool in tools:
                summary = (tool["description"].strip().splitlines() or [""])[0]
                out(f"{tool['name']}: {summary}")
    finally:
        await session.dispose()
    return EXIT_OK
