"""``zpi-host run PROMPT``: one agent run from the terminal, as text, JSON or a JSON stream."""

from __future__ import annotations

import gc
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import docs_url
from ..support.terminal_text import shown
from .exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliUsageError, print_error, print_warning
from .quick_args import OUTPUT_FORMATS, PERMISSION_MODES, PICK
from .startup import import_plugin_modules, resume_gc

if TYPE_CHECKING:
    from .live import LiveDisplay
    from .signals import RunSignals


RUN_EXAMPLES = """examples:
  zpi-host run "fix the failing test" --permission-mode acceptEdits
  zpi-host run -c "now add a test for it"          # continue this directory's last session
  zpi-host run "what changed?" -r                  # pick a recent session (on a terminal)
  zpi-host run --allow 'bash(pytest:*)' "run the tests and fix what fails"
  zpi-host run --image screenshot.png "what is wrong in this dialog?"
  git diff | zpi-host run - --output-format json   # the prompt from stdin, a JSON result"""


def add_run_parser(commands: Any) -> None:
    import argparse

    run = commands.add_parser("run", help="run the agent on a prompt",
                              description="Run the agent on PROMPT until it stops.",
                              epilog=RUN_EXAMPLES,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("prompt", nargs="?", default=None,
                     help="what the agent should do; '-' or no PROMPT with piped input: read "
                          "it from stdin")
    add_assembly_options(run)
    run.add_argument("--max-turns", type=int, default=None, help="stop after N model turns")
    run.add_argument("--image", dest="images", action="append", default=[], metavar="FILE",
                     help="attach the image FILE (PNG, JPEG, GIF, WebP) to the prompt, for a "
                          "model that reads images (repeatable)")
    run.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text")
    run.add_argument("--verbose", action="store_true",
                     help="show the model's reasoning whole on a terminal; after the run, "
                          "print usage, cost and timings on stderr")
    add_permission_options(run)
    add_session_options(run)
    run.add_argument("--session-store", metavar="STORE", default=None,
                     help="also mirror the session to STORE (sqlite:PATH or "
                          f"postgresql://...), and resume from it ({docs_url('session-stores')})")
    run.add_argument("--project-key", metavar="KEY", default=None,
                     help="with --session-store: the store's project scope (default: derived "
                          "from the working directory), e.g. one per project shared by hosts")


def add_permission_options(parser: Any) -> None:
    """``--permission-mode``, ``--allow``, ``--deny``, ``--add-dir`` (run and chat)."""
    perms = parser.add_argument_group(f"permissions (see {docs_url('permissions')})")
    perms.add_argument("--permission-mode", choices=PERMISSION_MODES,
                       default=None, help="default (also 'ask'): reads run, edits and "
                       "commands ask (denied when nobody can be asked); acceptEdits: edits "
                       "inside the workspace run too; plan: only reads run; "
                       "bypassPermissions (also 'bypass'): only deny rules")
    perms.add_argument("--allow", action="append", default=[], metavar="RULE",
                       help="allow calls matching RULE, e.g. 'bash(git status:*)' (repeatable)")
    perms.add_argument("--deny", action="append", default=[], metavar="RULE",
                       help="deny calls matching RULE, e.g. 'edit(secrets/**)' (repeatable)")
    perms.add_argument("--add-dir", action="append", default=[], metavar="DIR",
                       help="another workspace root the file tools may use (repeatable)")


def add_session_options(parser: Any) -> None:
    """``-r``/``--resume``, ``-c``/``--continue``, ``--no-session`` (run and chat)."""
    session = parser.add_mutually_exclusive_group()
    session.add_argument("-r", "--resume", metavar="ID", nargs="?", const=PICK, default=None,
                         help="continue the session ID (a prefix will do; see: zpi-host "
                              "sessions list); without ID on a terminal: pick one of the "
                              "recent sessions")
    session.add_argument("-c", "--continue", dest="continue_recent", action="store_true",
                         help="continue the most recent session of this directory")
    session.add_argument("--no-session", action="store_true",
                         help="keep the session in memory only (no transcript file)")


def add_assembly_options(parser: Any) -> None:
    """The options that shape a session (model, folder, plugins, prompt, tools): shared by
    ``run`` and ``prompt`` so the preview assembles exactly what a run would."""
    parser.add_argument("--model", default=None,
                        help="PROVIDER:MODEL, e.g. scripted:PATH (default: $ZPI_MODEL)")
    parser.add_argument("--cwd", dest="run_cwd", default=None, metavar="DIR",
                        help="working directory of the session (default: current)")
    group = parser.add_argument_group("system prompt and tools")
    group.add_argument("--system-prompt", metavar="TEXT", default=None,
                       help="replace the assembled system prompt with TEXT")
    group.add_argument("--append-system-prompt", metavar="TEXT", default=None,
                       help="append TEXT to the system prompt")
    group.add_argument("--tools", metavar="NAMES", default=None,
                       help="only these tools, comma-separated (e.g. read,grep); '' for none")
    group.add_argument("--disallowed-tools", metavar="NAMES", default=None,
                       help="remove these tools, comma-separated")
    group.add_argument("--agent", metavar="NAME", default=None,
                       help="run as the agent definition NAME (agents/NAME.md): its prompt, "
                            "tools and permissions")
    parser.add_argument("--plugin-dir", dest="run_plugin_dir", action="append", default=[],
                        metavar="DIR",
                        help="load the plugin folder DIR (repeatable): a ZCode plugin when it "
                             "has .zcode-plugin/, else a Claude Code plugin")
    parser.add_argument("--strict", dest="run_strict", action="store_true",
                        help="fail when a plugin fails to load (default: a warning)")
    parser.add_argument("--zcode-plugin-dir", dest="run_zcode_plugin_dir", action="append",
                        default=[], metavar="DIR",
                        help="load DIR as a ZCode plugin folder (repeatable)")
    parser.add_argument("--base-url", metavar="URL", default=None,
                        help="send the model's requests to URL instead of its base_url")
    parser.add_argument("--mcp-config", action="append", default=[], metavar="FILE|JSON",
                        help="MCP servers from a JSON file or string with mcpServers "
                             "(repeatable; they win over configured servers of the same name)")
    parser.add_argument("--strict-mcp-config", action="store_true",
                        help="only the MCP servers of --mcp-config")
    parser.add_argument("--trust-project", action="store_true",
                        help="trust this project folder: its hooks and the plugin folders its "
                             "settings name may run (recorded in your user settings)")


def assembly_kwargs(args: Any, blocked: list[str], model: str | None) -> dict[str, Any]:
    """``create_session`` options from :func:`add_assembly_options`'s flags (and the top-level
    ``--cwd``, ``--plugin-dir``, ``--zcode-plugin-dir``, ``--strict``)."""
    cwd = args.run_cwd or args.cwd
    return {
        "model": model, "cwd": cwd, "blocked_plugins": blocked,
        "plugins": import_plugin_modules(getattr(args, "plugin_modules", []), cwd),
        "plugin_dirs": [*args.plugin_dir, *args.run_plugin_dir],
        "zcode_plugin_dirs": [*args.zcode_plugin_dir, *args.run_zcode_plugin_dir],
        "environ": ({**os.environ, "ZPI_STRICT_PLUGINS": "1"}
                    if args.strict or args.run_strict else None),
        "system_prompt": args.system_prompt,
        "append_system_prompt": args.append_system_prompt,
        "tools": tool_names(args.tools),
        "exclude_tools": tool_names(args.disallowed_tools) or (),
        "agent": getattr(args, "agent", None),
        **_base_url_override(args, model),
        **({"trust_project": True, "remember_trust": True} if args.trust_project else {}),
        **_mcp_options(args),
    }


def _mcp_options(args: Any) -> dict[str, Any]:
    """``--mcp-config`` (files or JSON, merged in order) and ``--strict-mcp-config``."""
    if not args.mcp_config and not args.strict_mcp_config:
        return {}
    from ..settings.mcp_sources import mcp_config_arguments

    return {"mcp_servers": mcp_config_arguments(args.mcp_config),
            "strict_mcp_config": bool(args.strict_mcp_config)}


def session_kwargs(args: Any) -> dict[str, Any]:
    """``create_session`` options from the permission and session flags. The modes are
    Claude Code's: ``default`` (given, or from settings, or none chosen) asks before edits and
    commands; ``acceptEdits`` adds allow rules for the file-changing tools."""
    from ..permissions.modes import CLAUDE_MODES
    from .quick_args import MODE_ALIASES

    mode, allow = None, list(args.allow)
    if args.permission_mode is not None:
        mode, tools = CLAUDE_MODES[MODE_ALIASES.get(args.permission_mode,
                                                    args.permission_mode)]
        allow = [*tools, *allow]
    return {"resume": args.resume, "continue_recent": args.continue_recent,
            "persist": not args.no_session, "permission_mode": mode,
            "permission_default": CLAUDE_MODES["default"][0],
            "allow": allow, "deny": args.deny, "add_dirs": args.add_dir}


class UnattendedHint:
    """How to allow a call that needs approval in a run nobody can be asked in (no
    terminal): the flags that would allow it, in the denial the model reads and, the first
    time, on stderr for the person (who otherwise may only see the model give up)."""

    def __init__(self, stderr: Any) -> None:
        self.stderr = stderr
        self.told = False

    def __call__(self, context: Any) -> str:
        import shlex

        from ..permissions.modes import CLAUDE_MODES

        ways = [" ".join(f"--allow {shlex.quote(rule)}"
                         for rule in context.suggestions or (context.tool,))]
        if context.tool in CLAUDE_MODES["acceptEdits"][1] and context.source == "mode":
            ways.insert(0, "--permission-mode acceptEdits")
        hint = (f"nobody can approve it in this run (no terminal to ask on); to allow it, "
                f"run with {' or '.join(ways)}")
        if not self.told:
            self.told = True
            print(shown(f"zpi-host: {context.tool} was denied: it needs approval and this run "
                        f"cannot ask (stdin is not a terminal, or the output is JSON); to "
                        f"allow it, run with "
                        f"{' or '.join(ways)} (see {docs_url('permissions')})", self.stderr),
                  file=self.stderr, flush=True)
        return hint


def run_command(args: Any, blocked: list[str]) -> int:
    model = args.model or os.environ.get("ZPI_MODEL")
    if args.max_turns is not None and args.max_turns < 1:
        return startup_error(args, CliUsageError("--max-turns must be at least 1"), EXIT_USAGE)
    if args.project_key is not None and args.session_store is None:
        return startup_error(args, CliUsageError(
            "--project-key chooses a session store's scope; use it with --session-store"),
            EXIT_USAGE)
    try:
        if args.resume == PICK:  # -r alone: the person picks the session
            from .picker import resolve_pick

            resolve_pick(args)
        args.prompt = read_prompt(args.prompt, sys.stdin)
        if args.images:
            from .images import read_images

            args.image_content = read_images(args.images, args.run_cwd or args.cwd)
        if args.resume:
            from ..session.assembly import resolve_agent_dir
            from .sessions import full_session_id

            args.resume = full_session_id(args.resume, resolve_agent_dir(None, os.environ))
    except CliUsageError as exc:
        return startup_error(args, exc, EXIT_USAGE)
    import anyio

    return anyio.run(_run, args, model, blocked)


def read_prompt(prompt: str | None, stdin: Any) -> str:
    """The prompt: the argument, or stdin for ``-`` or when no argument is given and stdin is
    not a terminal."""
    if prompt is not None and prompt != "-":
        return prompt
    if prompt is None and (stdin is None or stdin.isatty()):
        raise CliUsageError("run needs a PROMPT (or '-' to read it from stdin); for an "
                            "interactive session: zpi-host chat")
    text = "" if stdin is None else stdin.read()
    if not text.strip():
        raise CliUsageError("the prompt read from stdin is empty")
    return text


def tool_names(value: str | None) -> list[str] | None:
    """A comma-separated tool list (``--tools``, ``--disallowed-tools``)."""
    if value is None:
        return None
    return [name.strip() for name in value.split(",") if name.strip()]


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
    print_error(message)
    if args.output_format != "text":
        from ..providers.messages import Usage
        from ..session.agent_session import RunResult

        failed = RunResult(result=message, is_error=True, num_turns=0, session_id="",
                           usage=Usage(), duration_ms=0, stop_reason="error", error=message)
        print(json.dumps({**result_dict(failed), "session_id": args.resume}), flush=True)
    return code


def assembly_failed(error: Exception) -> int:
    """A session could not be assembled (chat, prompt): the message on stderr without keys;
    exit 2 for usage and configuration errors, else 1."""
    from ..errors import UsageError

    print_error(_redacted(error))
    return EXIT_USAGE if isinstance(error, UsageError | CliUsageError) else EXIT_FAILED


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

    from ..errors import PluginLoadError, UsageError, ZpiError
    from ..session.assembly import create_session
    from .init_agent_dir import first_run

    session = None
    binding = None
    fmt = args.output_format
    live = live_display(args.verbose) if fmt == "text" else None
    interactive = fmt == "text" and sys.stdin.isatty()
    with anyio.CancelScope() as startup:
        signals.on_first(startup.cancel)
        try:
            chosen = session_kwargs(args)
            if args.session_store is not None:
                from .store_binding import StoreBinding

                binding = StoreBinding(args.session_store, args.run_cwd or args.cwd,
                                       no_session=args.no_session,
                                       project_key=args.project_key)
                chosen["resume"] = await binding.resolve(chosen["resume"],
                                                         chosen["continue_recent"])
                chosen["continue_recent"] = False
            first_run()
            session = await create_session(
                max_turns=args.max_turns, interactive=interactive, refuse_untrusted=True,
                # a saved run keeps file checkpoints, for 'zpi-host sessions rewind' (bounded:
                # 1 MiB a file, 32 MiB a session; agent/file_checkpoints.py)
                file_checkpoints=not args.no_session,
                can_use_tool=paused_approver(lambda: live) if interactive and live else None,
                no_approver_hint=None if interactive else UnattendedHint(sys.stderr),
                ports=terminal_ports(sys.stdin, sys.stderr, lambda: live),
                **chosen, **assembly_kwargs(args, blocked, model),
            )
        except (UsageError, CliUsageError) as exc:
            await _unbind(binding)
            return startup_error(args, exc, EXIT_USAGE)
        except (PluginLoadError, ZpiError) as exc:
            await _unbind(binding)
            return startup_error(args, exc, EXIT_FAILED)
    signals.on_first(None)
    # One session per process: what start-up built (plugins, the resumed history) lives until
    # exit, so the collections of the run (off during start-up: cli.main) need not walk it.
    gc.freeze()
    resume_gc()
    if binding is not None and session is not None and signals.code is None:
        return await binding.run(session, lambda: _run_started(args, session, signals, live))
    await _unbind(binding)
    return await _run_started(args, session, signals, live)


async def _unbind(binding: Any) -> None:
    if binding is not None:
        await binding.close()


async def _run_started(args: Any, session: Any, signals: RunSignals,
                       live: LiveDisplay | None) -> int:
    """Run a built session and print its result (or say why it never started)."""
    from ..errors import ZpiError

    fmt = args.output_format
    if session is None or signals.code is not None:  # stopped before the run began
        if session is not None:
            await session.dispose()
        return startup_error(args, ZpiError("stopped before the run began (a signal)"),
                             signals.code if signals.code is not None else EXIT_FAILED)
    if args.verbose:
        from .timings import Timings

        timings: Any = Timings(session)
    else:
        timings = None
    if fmt == "stream-json":
        session.subscribe(_print_event)
    elif fmt == "json":  # stdout is the result object; warnings and retries go to stderr
        session.subscribe(_print_activity, types={"warning", "system", "retry"})
    elif live is not None:
        session.subscribe(live)
    elif fmt == "text":
        session.subscribe(_print_activity)
    images = getattr(args, "image_content", ())
    if images:
        from .images import check_vision

        try:
            check_vision(session.model_entry, session.view.model)
        except CliUsageError as exc:
            await session.dispose()
            return startup_error(args, exc, EXIT_USAGE)
    signals.on_first(session.abort)
    try:
        result = await run_live(session, args.prompt, live, images)
    finally:
        signals.on_first(None)
        try:  # a plain run ends its background commands before its result
            await session.ports.tasks.stop_all("the run ended")
        finally:
            await session.dispose()
    if fmt == "text":
        if signals.code is not None:
            print(f"zpi-host: {_stopped(result, session)}", file=sys.stderr)
        elif result.is_error:
            print_error(result.result)
        elif live is None or not live.streamed.strip():
            print(shown(result.result, sys.stdout))
        if live is not None and result.num_turns:
            from .tool_lines import footer

            live.footer(footer(result))
    else:
        print(json.dumps(result_dict(result)), flush=True)
    if timings is not None:
        timings.report(result)
    if signals.code is not None:
        return signals.code
    return EXIT_FAILED if result.is_error else EXIT_OK


def live_display(verbose: bool = False) -> LiveDisplay | None:
    """The live display when stdout and stderr are a terminal, else None; ``verbose`` shows
    the model's reasoning whole. The model's Markdown is rendered when rich is installed."""
    from .live import LiveDisplay, colours_wanted, wanted

    if not wanted(sys.stdout, sys.stderr):
        return None
    from .markdown import available
    return LiveDisplay(sys.stdout, sys.stderr, colour=colours_wanted(sys.stderr),
                       verbose=verbose, markdown=available())


def paused(call: Any, current: Callable[[], LiveDisplay | None]) -> Any:
    """``call`` (an async function that talks to the person at the terminal) with the live
    display (``current()``) paused while it runs."""

    async def while_paused(*args: Any) -> Any:
        live = current()
        if live is not None:
            live.pause()
        try:
            return await call(*args)
        finally:
            if live is not None:
                live.resume()

    return while_paused


def paused_approver(current: Callable[[], LiveDisplay | None]) -> Any:
    """The terminal approver, with the live display (``current()``) paused while it asks."""
    from ..permissions.approver import terminal_approver

    return paused(terminal_approver(), current)


def terminal_ports(stdin: Any, stderr: Any,
                   current: Callable[[], LiveDisplay | None] = lambda: None) -> Any:
    """The ports of a run from a terminal: questions (``ask_user``) asked on stderr and
    answered on stdin when both are a TTY, with the live display paused meanwhile;
    notifications (bell, OSC 9) on stderr when it is one."""
    from ..session.ports import HostPorts, TerminalAsker

    asks = stdin.isatty() and stderr.isatty()
    return HostPorts(ask_user=paused(TerminalAsker(stdin, stderr), current) if asks else None,
                     terminal=stderr if stderr.isatty() else None)


async def run_live(session: Any, prompt: str, live: LiveDisplay | None,
                   images: Any = ()) -> Any:
    """Run the session (``images`` go with the prompt); with a live display, its spinner
    turns beside the run."""
    if live is None:
        return await session.run(prompt, images=images) if images else \
            await session.run(prompt)
    import anyio

    async with anyio.create_task_group() as group:
        group.start_soon(live.animate)
        try:
            return await (session.run(prompt, images=images) if images else
                          session.run(prompt))
        finally:
            live.close()
            group.cancel_scope.cancel()


def _redacted(exc: BaseException) -> str:
    """An error's message without the provider keys of this environment (no session yet to
    know the catalog's: the default key variables)."""
    from ..support.redaction import Redactor

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

    from ..providers.catalog import with_base_url
    from ..session.assembly import resolve_agent_dir
    from ..settings.manager import SettingsManager

    cwd = Path(args.run_cwd or args.cwd or ".").expanduser().resolve()
    manager = SettingsManager(resolve_agent_dir(None, os.environ), cwd)
    for problem in manager.problems:  # the session sees a copy, not the files: say it here
        print_warning(problem)
    settings = manager.snapshot()
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
    line = _activity_line(event)
    if line is not None:
        print(shown(line, sys.stderr), file=sys.stderr, flush=True)


def _activity_line(event: Any) -> str | None:
    if event.type == "tool_start":
        args = ", ".join(f"{k}={_brief(v)}" for k, v in event.arguments.items())
        return f"• {event.name}({args})"
    if event.type == "warning":
        return f"zpi-host: warning: {event.message}"
    if event.type == "system":
        from .live import system_text

        return system_text(event)
    if event.type == "retry":
        from .live import retry_text

        return f"zpi-host: {retry_text(event)}"
    if event.type == "task_notification":
        from .live import task_text

        return f"• {task_text(event)}"
    if event.type == "tool_end" and not event.result.is_error:
        from .live import todo_line

        todos = todo_line(event.result)
        return None if todos is None else f"  {todos}"
    if event.type == "tool_end" and event.result.is_error:
        # the whole first line: a denial ends with how to allow the call
        first = next((c.text for c in event.result.content if c.type == "text"), "").strip()
        return f"  ✗ {first.splitlines()[0] if first else 'error'}"
    return None


def _brief(value: Any, limit: int = 40) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"
