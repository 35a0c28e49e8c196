"""``zpi-host run PROMPT``: one agent run from the terminal, as text, JSON or a JSON stream."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from . import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliUsageError

NO_MODEL_HELP = (
    "no model chosen: pass --model PROVIDER:MODEL or set ZPI_MODEL. To try the host offline, "
    "replay the scripted demo: zpi-host run --cwd examples/demo/workspace "
    "--model scripted:examples/demo/script.jsonl \"fix the greeting\""
)


def add_run_parser(commands: Any) -> None:
    run = commands.add_parser("run", help="run the agent on a prompt",
                              description="Run the agent on PROMPT until it stops.")
    run.add_argument("prompt", help="what the agent should do")
    run.add_argument("--model", default=None,
                     help="PROVIDER:MODEL, e.g. scripted:PATH (default: $ZPI_MODEL)")
    run.add_argument("--cwd", dest="run_cwd", default=None,
                     help="working directory of the session (default: current)")
    run.add_argument("--max-turns", type=int, default=None, help="stop after N model turns")
    run.add_argument("--output-format", choices=("text", "json", "stream-json"), default="text")


def run_command(args: Any, blocked: list[str]) -> int:
    model = args.model or os.environ.get("ZPI_MODEL")
    if not model:
        raise CliUsageError(NO_MODEL_HELP)
    if args.max_turns is not None and args.max_turns < 1:
        raise CliUsageError("--max-turns must be at least 1")
    import anyio

    return anyio.run(_run, args, model, blocked)


def result_dict(result: Any) -> dict[str, Any]:
    usage = result.usage
    return {
        "type": "result",
        "result": result.result,
        "is_error": result.is_error,
        "stop_reason": result.stop_reason,
        "num_turns": result.num_turns,
        "session_id": result.session_id,
        "duration_ms": result.duration_ms,
        "usage": _usage(usage),
        "total_cost_usd": result.total_cost_usd,
        "model_usage": {key: _usage(u) for key, u in result.model_usage.items()},
    }


def _usage(usage: Any) -> dict[str, int]:
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cache_read_input_tokens": usage.cache_read_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens}


async def _run(args: Any, model: str, blocked: list[str]) -> int:
    from ..assembly import create_session
    from ..errors import PluginLoadError, UsageError, ZpiError
    from ..plugins import PluginConfig, PluginHost

    try:
        host = PluginHost(PluginConfig.from_env(blocked=blocked)).load()
        session = await create_session(model=model, cwd=args.run_cwd or args.cwd, host=host,
                                       max_turns=args.max_turns)
    except (UsageError, CliUsageError) as exc:
        print(f"zpi-host: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (PluginLoadError, ZpiError) as exc:
        print(f"zpi-host: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    fmt = args.output_format
    if fmt == "stream-json":
        session.subscribe(_print_event)
    elif fmt == "text":
        session.subscribe(_print_activity)
    try:
        result = await session.run(args.prompt)
    finally:
        await session.dispose()
    if fmt == "text":
        if result.is_error:
            print(f"zpi-host: error: {result.result}", file=sys.stderr)
        else:
            print(result.result)
    else:
        print(json.dumps(result_dict(result)), flush=True)
    return EXIT_FAILED if result.is_error else EXIT_OK


def _print_event(event: Any) -> None:
    if event.type == "run_end":
        return  # the result object ends the stream instead
    print(json.dumps(event.to_dict(), default=str), flush=True)


def _print_activity(event: Any) -> None:
    """Text mode: tool activity, briefly, on stderr; the answer goes to stdout at the end."""
    if event.type == "tool_start":
        args = ", ".join(f"{k}={_brief(v)}" for k, v in event.arguments.items())
        print(f"• {event.name}({args})", file=sys.stderr, flush=True)
    elif event.type == "tool_end" and event.result.is_error:
        first = next((c.text for c in event.result.content if c.type == "text"), "")
        print(f"  ✗ {_brief(first.splitlines()[0] if first else 'error', 100)}",
              file=sys.stderr, flush=True)


def _brief(value: Any, limit: int = 40) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"
