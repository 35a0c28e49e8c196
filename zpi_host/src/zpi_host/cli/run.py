"""``zpi-host run PROMPT``: one agent run from the terminal, as text, JSON or a JSON stream."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from . import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliUsageError

if TYPE_CHECKING:
    from .signals import RunSignals


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
    run.add_argument("--plugin-dir", action="append", default=[], metavar="DIR",
                     help="load the plugin folder DIR (repeatable): a ZCode plugin when it "
                          "has .zcode-plugin/, else a Claude Code plugin")
    run.add_argument("--zcode-plugin-dir", action="append", default=[], metavar="DIR",
                     help="load DIR as a ZCode plugin folder (repeatable)")
    perms = run.add_argument_group("permissions (see docs/permissions.md)")
    perms.add_argument("--permission-mode", choices=("default", "ask", "plan", "bypass"),
                       default=None, help="default: workspace trust; ask: every side-effect "
                       "call asks; plan: side-effect tools denied; bypass: only deny rules")
    perms.add_argument("--allow", action="append", default=[], metavar="RULE",
                       help="allow calls matching RULE, e.g. 'bash(git status:*)' (repeatable)")
    perms.add_argument("--deny", action="append", default=[], metavar="RULE",
                       help="deny calls matching RULE, e.g. 'edit(secrets/**)' (repeatable)")
    perms.add_argument("--add-dir", action="append", default=[], metavar="DIR",
                       help="another workspace root the file tools may use (repeatable)")
    session = run.add_mutually_exclusive_group()
    session.add_argument("--resume", metavar="ID", default=None,
                         help="continue the session ID (see: zpi-host sessions list)")
    session.add_argument("--continue", dest="continue_recent", action="store_true",
                         help="continue the most recent session of this directory")
    session.add_argument("--no-session", action="store_true",
                         help="keep the session in memory only (no transcript file)")
    run.add_argument("--session-store", metavar="STORE", default=None,
                     help="also mirror the session to STORE (sqlite:PATH or "
                          "postgresql://...), and resume from it (docs/session-stores.md)")
    run.add_argument("--base-url", metavar="URL", default=None,
                     help="send the model's requests to URL instead of its base_url")


def run_command(args: Any, blocked: list[str]) -> int:
    model = args.model or os.environ.get("ZPI_MODEL")
    if args.max_turns is not None and args.max_turns < 1:
        return startup_error(args, CliUsageError("--max-turns must be at least 1"), EXIT_USAGE)
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
        "denials": [d.to_json() for d in result.denials],
        "model_usage": {
            key: {**_usage(u), "cost_usd": result.model_cost_usd.get(key, 0.0),
                  "unpriced": key in result.unpriced_models}
            for key, u in result.model_usage.items()
        },
    }


def startup_error(args: Any, error: Exception, code: int) -> int:
    """The run could not start: the message on stderr and, for ``json``/``stream-json``, a
    result object with ``is_error: true`` on stdout (the same shape as a finished run's), so
    a program reading stdout always gets one. Returns ``code``."""
    message = _redacted(error)
    print(f"zpi-host: error: {message}", file=sys.stderr)
    if args.output_format != "text":
        from ..messages import Usage
        from ..session import RunResult

        failed = RunResult(result=message, is_error=True, num_turns=0, session_id="",
                           usage=Usage(), duration_ms=0, stop_reason="error", error=message)
        print(json.dumps({**result_dict(failed), "session_id": args.resume}), flush=True)
    return code


def _usage(usage: Any) -> dict[str, int]:
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cache_read_input_tokens": usage.cache_read_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens}


async def _run(args: Any, model: str | None, blocked: list[str]) -> int:
    from .signals import RunSignals

    with RunSignals() as signals:
        return await _run_session(args, model, blocked, signals)


async def _run_session(args: Any, model: str | None, blocked: list[str],
                       signals: RunSignals) -> int:
    """Create the session, run it, print the result. The first SIGINT/SIGTERM cancels the
    start-up or aborts the run (see :mod:`.signals`)."""
    import anyio

    from ..assembly import create_session
    from ..errors import PluginLoadError, UsageError, ZpiError

    session = None
    binding = None
    with anyio.CancelScope() as startup:
        signals.on_first(startup.cancel)
        try:
            cwd, resume, continue_recent = args.run_cwd or args.cwd, args.resume, \
                args.continue_recent
            if args.session_store is not None:
                from .store_binding import StoreBinding

                binding = StoreBinding(args.session_store, cwd, no_session=args.no_session)
                resume = await binding.resolve(resume, continue_recent)
                continue_recent = False
            session = await create_session(
                model=model, cwd=cwd, max_turns=args.max_turns,
                resume=resume, continue_recent=continue_recent,
                persist=not args.no_session, blocked_plugins=blocked,
                permission_mode=args.permission_mode, allow=args.allow, deny=args.deny,
                add_dirs=args.add_dir, plugin_dirs=args.plugin_dir,
                zcode_plugin_dirs=args.zcode_plugin_dir,
                interactive=args.output_format == "text" and sys.stdin.isatty(),
                **_base_url_override(args, model),
            )
        except (UsageError, CliUsageError) as exc:
            await _unbind(binding)
            return startup_error(args, exc, EXIT_USAGE)
        except (PluginLoadError, ZpiError) as exc:
            await _unbind(binding)
            return startup_error(args, exc, EXIT_FAILED)
    signals.on_first(None)
    if binding is not None and session is not None and signals.code is None:
        return await binding.run(session, lambda: _run_started(args, session, signals))
    await _unbind(binding)
    return await _run_started(args, session, signals)


async def _unbind(binding: Any) -> None:
    if binding is not None:
        await binding.close()


async def _run_started(args: Any, session: Any, signals: RunSignals) -> int:
    from ..errors import ZpiError

    if session is None or signals.code is not None:  # stopped before the run began
        if session is not None:
            await session.dispose()
        return startup_error(args, ZpiError("stopped before the run began (a signal)"),
                             signals.code if signals.code is not None else EXIT_FAILED)
    fmt = args.output_format
    if fmt == "stream-json":
        session.subscribe(_print_event)
    elif fmt == "text":
        session.subscribe(_print_activity)
    signals.on_first(session.abort)
    try:
        result = await session.run(args.prompt)
    finally:
        signals.on_first(None)
        await session.dispose()
    if fmt == "text":
        if signals.code is not None:
            print(f"zpi-host: {_stopped(result, session)}", file=sys.stderr)
        elif result.is_error:
            print(f"zpi-host: error: {result.result}", file=sys.stderr)
        else:
            print(result.result)
    else:
        print(json.dumps(result_dict(result)), flush=True)
    if signals.code is not None:
        return signals.code
    return EXIT_FAILED if result.is_error else EXIT_OK


def _redacted(exc: BaseException) -> str:
    """An error's message without the provider keys of this environment (no session yet to
    know the catalog's: the default key variables)."""
    from ..redaction import Redactor

    return Redactor.from_settings(None, os.environ).text(str(exc))


def _stopped(result: Any, session: Any) -> str:
    """What text mode says after a signal stopped the run."""
    where = ("" if session.store.in_memory_only else
             f"; continue with: zpi-host run --resume {result.session_id} PROMPT")
    return f"the run was stopped by a signal ({result.stop_reason}){where}"


def _base_url_override(args: Any, model: str | None) -> dict[str, Any]:
    """``--base-url``: the settings files with the chosen model's base_url replaced, in
    memory only (the files are not changed)."""
    if args.base_url is None:
        return {}
    from pathlib import Path

    from ..assembly import resolve_agent_dir
    from ..providers.catalog import with_base_url
    from ..settings import SettingsManager

    cwd = Path(args.run_cwd or args.cwd or ".").expanduser().resolve()
    settings = SettingsManager(resolve_agent_dir(None, os.environ), cwd).snapshot()
    spec = model or settings.get("model")
    if not isinstance(spec, str):
        raise CliUsageError("--base-url needs a model: pass --model PROVIDER:MODEL")
    return {"settings": with_base_url(settings, spec, args.base_url)}


def _print_event(event: Any) -> None:
    if event.type == "run_end":
        return  # the result object ends the stream instead
    print(json.dumps(event.to_dict(), default=str), flush=True)


def _print_activity(event: Any) -> None:
    """Text mode: tool activity, briefly, on stderr; the answer goes to stdout at the end."""
    if event.type == "tool_start":
        args = ", ".join(f"{k}={_brief(v)}" for k, v in event.arguments.items())
        print(f"• {event.name}({args})", file=sys.stderr, flush=True)
    elif event.type == "warning":
        print(f"zpi-host: warning: {event.message}", file=sys.stderr, flush=True)
    elif event.type == "tool_end" and event.result.is_error:
        first = next((c.text for c in event.result.content if c.type == "text"), "")
        print(f"  ✗ {_brief(first.splitlines()[0] if first else 'error', 100)}",
              file=sys.stderr, flush=True)


def _brief(value: Any, limit: int = 40) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"
