"""``zpi-host chat`` (and ``zpi-host`` alone on a terminal): an interactive session.

Line editing, history (``<agent dir>/chat_history``) and multi-line input come from
prompt-toolkit, imported only here. Each prompt is one run of the same session, shown by the
live display (:mod:`.live`). Ctrl-C while a run is going aborts that run and keeps the
session (a second Ctrl-C exits at once, as in ``run``); Ctrl-C at the prompt clears the line;
Ctrl-D exits. Built-in slash commands are handled here (:data:`HELP`); any other
``/name`` is the session's own command (plugins, skills, command files).

The chat's sessions keep file checkpoints (what ``write`` and ``edit`` change, at most 1 MiB
per file and 32 MiB per session: ``agent/file_checkpoints.py``), so ``/rewind`` can put the
files back as they were before any of its prompts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from ..support.terminal_text import shown
from .exits import EXIT_FAILED, EXIT_OK, CliUsageError

PROMPT = "> "
HELP = {
    "/help": "this list",
    "/model [SPEC]": "show the model, or continue this session with SPEC",
    "/compact [TEXT]": "summarise the history now (TEXT: what the summary should keep)",
    "/clear": "start a new, empty session",
    "/resume [ID]": "list this directory's sessions, or continue the session ID (a prefix)",
    "/rewind [N]": "put the files back as they were before prompt N (no N: list them)",
    "/cost": "tokens and cost of this session so far",
    "/context": "how full the model's context is",
    "/permissions": "the permission mode, rules and workspace roots",
    "/exit": "leave (also Ctrl-D)",
}
#: what /help says about the keys
KEYS = ("Alt-Enter or a trailing \\ starts a new line; Tab completes /commands, their "
        "arguments and @file mentions (the file's text goes with the prompt); Ctrl-O shows the "
        "last reasoning whole; Ctrl-C stops a run.")


def add_chat_parser(commands: Any) -> None:
    import argparse

    from .run import add_assembly_options, add_permission_options, add_session_options

    chat = commands.add_parser(
        "chat", help="an interactive session (also: zpi-host alone, on a terminal)",
        description="Talk to the agent: each line is a prompt; /help lists the commands.",
        epilog="examples:\n  zpi-host chat\n  zpi-host chat -c                 # continue "
               "this directory's last session\n  zpi-host chat -r                 # pick a "
               "recent session\n  zpi-host chat --model sonnet --permission-mode "
               "acceptEdits\n\nin the chat: Tab completes /commands, their arguments and "
               "@file mentions;\nCtrl-O shows the last reasoning whole; Ctrl-C stops a run; "
               "Ctrl-D leaves.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_assembly_options(chat)
    add_permission_options(chat)
    add_session_options(chat)


def chat_command(args: Any, blocked: list[str]) -> int:
    try:  # an optional dependency: the extra ``chat`` of zpi-host
        import prompt_toolkit  # noqa: F401
    except ImportError:
        print("zpi-host chat needs prompt-toolkit: pip install 'zpi-host[chat]'", file=sys.stderr)
        return EXIT_FAILED
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CliUsageError("chat needs a terminal; to run one prompt from a script use "
                            "zpi-host run PROMPT (or zpi-host run - < file)")
    from .picker import resolve_pick

    resolve_pick(args)  # -r alone: the session is picked before the chat starts
    import anyio

    return anyio.run(Chat(args, blocked).main)


class Chat:
    """One interactive session at the terminal, reopened by /model, /clear and /resume."""

    def __init__(self, args: Any, blocked: list[str]) -> None:
        self.args, self.blocked = args, blocked
        self.session: Any = None
        self.live: Any = None
        self.out = sys.stdout
        self._asking: Any = None  # an anyio.Lock, made in the event loop
        self._distrusted = False  # the user said no to trusting the project: not asked again
        self.last_thinking = ""  # the model's last reasoning, whole (Ctrl-O shows it)
        self.builtins: dict[str, Callable[[str], Awaitable[None]]] = {
            "help": self._help, "model": self._model, "compact": self._compact,
            "clear": self._clear, "resume": self._resume, "cost": self._cost,
            "context": self._context, "permissions": self._permissions,
            "rewind": self._rewind,
        }

    # ------------------------------------------------------------------------ the loop

    async def main(self) -> int:
        from ..errors import ZpiError
        from .run import assembly_failed

        model = self.args.model or os.environ.get("ZPI_MODEL")
        try:
            await self._open(model=model, resume=self.args.resume,
                             continue_recent=self.args.continue_recent)
        except (CliUsageError, ZpiError) as exc:
            return assembly_failed(exc)
        self._say(f"zpi-host chat · {self.session.view.model} · session {self.session.session_id}"
                  " · /help for commands, Ctrl-D to leave")
        prompt = self._prompt_session()
        try:
            while True:
                try:
                    line = await prompt.prompt_async(PROMPT)
                except KeyboardInterrupt:
                    continue  # Ctrl-C at the prompt: a fresh line
                except EOFError:
                    break
                text = line.strip()
                if not text:
                    continue
                if text in ("/exit", "/quit"):
                    break
                await self._handle(text)
                if self.session is None:  # a failed switch could not reopen the old session
                    self._say("error: the chat has no session left; start it again "
                              "(zpi-host chat --resume ID continues a saved one)", error=True)
                    return EXIT_FAILED
        finally:
            await self._close()
        return EXIT_OK

    async def _handle(self, text: str) -> None:
        from ..agent.commands import split_command
        from ..errors import ZpiError

        parts = split_command(text)
        try:
            if parts is not None and parts[0] in self.builtins:
                await self.builtins[parts[0]](parts[1])
            else:
                await self._run(text)
        except (ZpiError, CliUsageError) as exc:
            self._say(f"error: {exc}", error=True)

    async def _run(self, text: str) -> None:
        """One run, shown live; the first Ctrl-C aborts it and the session stays open.
        ``@path`` mentions bring the files' contents (:mod:`.chat_input`)."""
        from pathlib import Path

        from .chat_input import expand_mentions
        from .run import live_display, run_live
        from .signals import RunSignals

        text, notes, images = expand_mentions(text, Path(self.session.view.cwd))
        for note in notes:
            self._say(note, dim=True)
        if images:
            from .images import check_vision

            check_vision(self.session.model_entry, self.session.view.model, "an @image")

        live = self.live = live_display()
        unsubscribe = self.session.subscribe(live) if live is not None else None
        try:
            with RunSignals() as signals:
                signals.on_first(self.session.abort)
                result = await run_live(self.session, text, live, images)
        finally:
            if unsubscribe is not None:
                unsubscribe()
            self.live = None
        if live is not None and live.last_thinking:
            self.last_thinking = live.last_thinking
        if signals.code is not None:
            self._say("interrupted: the run stopped; the session goes on", error=True)
        elif result.is_error:
            self._say(f"error: {result.result}", error=True)
        elif live is None or not live.streamed.strip():
            print(shown(result.result, self.out), file=self.out, flush=True)
        if live is not None and result.num_turns:
            from .tool_lines import footer

            live.footer(footer(result))

    # ----------------------------------------------------------------- session handling

    async def _open(self, **overrides: Any) -> None:
        """(Re)create the session with the command-line options and ``overrides``."""
        from ..session.assembly import create_session
        from .run import assembly_kwargs, session_kwargs

        options = {**session_kwargs(self.args), "resume": None, "continue_recent": False,
                   **assembly_kwargs(self.args, self.blocked, overrides.pop("model", None)),
                   "can_use_tool": self._approve, "ports": self._ports(),
                   "ask_trust": self._ask_trust, "file_checkpoints": True, **overrides}
        if self._distrusted and "trust_project" not in options:
            options["trust_project"] = False
        if options.get("resume"):
            from ..session.assembly import resolve_agent_dir
            from .sessions import full_session_id

            options["resume"] = full_session_id(options["resume"],
                                                resolve_agent_dir(None, os.environ))
        previous = self.session
        if previous is None or options.get("resume") != previous.session_id:
            if previous is None:
                from .init_agent_dir import first_run

                first_run()
            session = await create_session(**options)
            await self._close()
            self.session = session
            return
        # the same transcript is reopened: one owner at a time, so the old session closes
        # first, and a switch that fails reopens it as it was (the chat always has a session)
        restore = {"model": previous.view.model, "resume": previous.session_id}
        await self._close()
        try:
            self.session = await create_session(**options)
        except Exception:
            try:
                await self._open(**restore)
            except Exception as lost:  # the switch's own error is raised below, this one shown
                self._say(f"error: session {restore['resume']} could not be reopened: {lost}",
                          error=True)
            raise

    def _ports(self) -> Any:
        """The chat's ports: ``ask_user`` questions at the chat's own prompt, notifications
        (bell, OSC 9) on stderr."""
        from ..session.ports import HostPorts

        return HostPorts(ask_user=self._ask,
                         terminal=sys.stderr if sys.stderr.isatty() else None)

    async def _approve(self, name: str, arguments: Any, context: Any) -> Any:
        """Ask on the terminal whether a call may run (Ctrl-C at the question: no)."""
        from ..permissions.approver import answer_decision, approval_question, wants_colour

        about, question = approval_question(name, arguments, context,
                                            colour=wants_colour(self.out))
        try:  # the question shows every control character already: printed as it is
            answer = await self._at_prompt(about, question, safe=True)
        except KeyboardInterrupt:
            answer = "n"
        return answer_decision(answer, name, context)

    async def _ask_trust(self, root: Any, withheld: Any) -> bool:
        """Asked once per project: show what it would run; y trusts it (the session records
        it in the user settings), anything else goes on without those things and says so."""
        about = "\n".join([f"The project {root} is not trusted. Trusting it would run:",
                           *(f"  - {item}" for item in withheld)])
        try:
            answer = await self._at_prompt(about, "Trust this project and run them? [y/N] ")
        except KeyboardInterrupt:
            answer = None
        if (answer or "").strip().lower() in ("y", "yes"):
            self._say(f"trusted {root} (recorded in your user settings)")
            return True
        self._distrusted = True
        self._say("continuing without them; trust the project later with "
                  "zpi-host chat --trust-project")
        return False

    async def _ask(self, questions: Any) -> dict[str, Any]:
        """The ``ask_user`` port: each question and its options, answered at the prompt (a
        number picks an option); Ctrl-C or Ctrl-D at a question declines them all."""
        from ..session.ports import NobodyToAsk, TerminalAsker

        answers: dict[str, Any] = {}
        for q in questions:
            about, _, question = TerminalAsker.render(q).strip("\n").rpartition("\n")
            try:
                line = await self._at_prompt(about, question)
            except KeyboardInterrupt:
                line = None
            if line is None:
                raise NobodyToAsk("the user did not answer (Ctrl-C or Ctrl-D at the question)")
            answers[q.question] = TerminalAsker.parse(q, line.strip())
        return answers

    async def _at_prompt(self, about: str, question: str, *, safe: bool = False
                         ) -> str | None:
        """Print ``about``, then read one line at ``question`` through prompt-toolkit (a
        question stopped by the run's end leaves no reader behind), one question at a time
        even for parallel calls, with the live display paused. None at end of input;
        ``safe``: ``about`` shows its control characters already (its escapes are ours)."""
        import anyio
        from prompt_toolkit import PromptSession

        if self._asking is None:
            self._asking = anyio.Lock()
        async with self._asking:
            live = self.live
            if live is not None:
                live.pause()
            try:
                print(about if safe else shown(about, self.out, exact=True), file=self.out,
                      flush=True)
                try:
                    answer: str = await PromptSession().prompt_async(question)
                except EOFError:
                    return None
                return answer
            finally:
                if live is not None:
                    live.resume()

    async def _close(self) -> None:
        if self.session is not None:
            session, self.session = self.session, None
            await session.dispose()

    def _prompt_session(self) -> Any:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, InMemoryHistory
        from prompt_toolkit.key_binding import KeyBindings

        from ..session.assembly import resolve_agent_dir

        keys = KeyBindings()

        @keys.add("escape", "enter")  # Alt-Enter: a new line in the prompt
        def _newline(event: Any) -> None:
            event.current_buffer.insert_text("\n")

        @keys.add("enter")
        def _submit(event: Any) -> None:
            buffer = event.current_buffer
            if buffer.text.endswith("\\"):  # a trailing backslash continues the prompt
                buffer.delete_before_cursor(1)
                buffer.insert_text("\n")
            else:
                buffer.validate_and_handle()

        agent_dir = resolve_agent_dir(None, os.environ)
        try:
            agent_dir.mkdir(parents=True, exist_ok=True)
            history: Any = FileHistory(str(agent_dir / "chat_history"))
        except OSError:
            history = InMemoryHistory()
        @keys.add("c-o")  # Ctrl-O: the model's last reasoning, whole (as Claude Code's)
        def _thinking(event: Any) -> None:
            from prompt_toolkit.application import run_in_terminal

            text = self.last_thinking.strip() or "(no reasoning shown yet in this chat)"
            run_in_terminal(lambda: self._say(text, dim=True))

        from pathlib import Path

        from .chat_input import ChatCompleter

        completer = ChatCompleter(lambda: Path(self.session.view.cwd), self._command_names,
                                  self._argument_values)
        return PromptSession(history=history, key_bindings=keys, multiline=True,
                             prompt_continuation="  ", completer=completer,
                             complete_while_typing=False)

    def _command_names(self) -> dict[str, str]:
        """The slash commands Tab completes: the chat's own, then the session's."""
        names = {name.split()[0][1:]: about for name, about in HELP.items()}
        names["exit"] = HELP["/exit"]
        resources = self.session.resources if self.session is not None else None
        for command in resources.commands if resources is not None else ():
            names.setdefault(command.name, command.description or "(a command)")
        return names

    def _argument_values(self, name: str) -> list[str]:
        """What Tab completes after ``/model `` (the catalog's models) and ``/resume ``
        (this directory's sessions)."""
        from .completion import completion_values

        kinds = {"model": "models", "resume": "sessions"}
        if name not in kinds or self.session is None:
            return []
        return completion_values(kinds[name], str(self.session.view.cwd))

    # ------------------------------------------------------------------ slash commands

    async def _help(self, argument: str) -> None:
        width = max(len(k) for k in HELP)
        lines = [f"{name.ljust(width)}  {what}" for name, what in HELP.items()]
        resources = self.session.resources
        own = list(resources.commands) if resources is not None else []
        if own:
            lines.append("")
            lines += [f"/{c.name.ljust(width - 1)}  {c.description or '(a command)'}"
                      for c in own]
        lines.append("\n" + KEYS)
        self._say("\n".join(lines))

    async def _model(self, argument: str) -> None:
        if not argument:
            self._say(f"model: {self.session.view.model}")
            return
        await self._open(model=argument, resume=self._resumable())
        self._say(f"model: {self.session.view.model} (session {self.session.session_id})")

    async def _compact(self, argument: str) -> None:
        result = await self.session.compact(argument or None)
        if result is None:
            self._say("nothing was compacted")
            return
        before = getattr(result, "tokens_before", None)
        self._say("the history was compacted" + (f" (it held about {before} tokens)"
                                                 if before else ""))

    async def _clear(self, argument: str) -> None:
        await self._open(model=self.session.view.model)
        self._say(f"new session {self.session.session_id}")

    async def _resume(self, argument: str) -> None:
        if argument:
            await self._open(model=None, resume=argument)
            self._say(f"resumed session {self.session.session_id} "
                      f"({len(self.session.view.messages)} messages)")
            return
        from ..transcript import list_sessions
        from .sessions import session_line

        infos = list_sessions(self.session.view.cwd, agent_dir=self._agent_dir())[:10]
        self._say("\n".join(session_line(i) for i in infos) if infos
                  else "no saved sessions for this directory")

    async def _cost(self, argument: str) -> None:
        u = self.session.usage
        self._say(f"tokens: {u.input_tokens} in, {u.output_tokens} out, "
                  f"{u.cache_read_tokens} cache read, {u.cache_write_tokens} cache write; "
                  f"cost ${self.session.total_cost_usd:.4f}")

    async def _rewind(self, argument: str) -> None:
        """``/rewind``: the prompts with how many files changed since each, one picked (the
        argument: its number or a prefix of its id; else asked), its files put back."""
        from ..agent.file_checkpoints import rewind_points

        points = rewind_points(self.session.store.records)
        if not points:
            self._say("no prompt to rewind to yet in this session")
            return
        choice = argument.strip()
        if not choice:
            width = len(str(len(points)))
            lines = ["files changed since each prompt (rewinding puts them back as they were "
                     "before it; the conversation stays):"]
            lines += [f"  {str(n).rjust(width)}. {_brief(p.prompt, 60)}  "
                      f"({_files(p.files)} since)" for n, p in enumerate(points, 1)]
            try:
                answer = await self._at_prompt(
                    "\n".join(lines), f"rewind to which prompt? [1-{len(points)}, Enter: none] ")
            except KeyboardInterrupt:
                answer = None
            choice = (answer or "").strip()
            if not choice:
                self._say("nothing rewound")
                return
        point = _pick_point(points, choice)
        if point.files == 0:
            self._say(f"no file changed since prompt {_brief(point.prompt, 40)!r}: nothing to "
                      "rewind")
            return
        report = self.session.rewind_files(point.message_id)
        self._say(f"rewound the files to before {_brief(point.prompt, 40)!r}:\n"
                  + report.describe(), error=bool(report.not_restored))

    async def _context(self, argument: str) -> None:
        self._say("\n".join(context_lines(self.session.get_context_usage())))

    async def _permissions(self, argument: str) -> None:
        from ..session.assembly import INTERNAL_RULE_SOURCES

        policy = self.session.permissions
        lines = [f"mode: {policy.mode}", f"workspace: {policy.roots.describe()}"]
        internal = 0
        for kind in ("allow", "deny", "ask"):
            rules = [r for r in policy.rules.of(kind) if r.source not in INTERNAL_RULE_SOURCES]
            internal += len(policy.rules.of(kind)) - len(rules)
            if rules:
                lines.append(f"{kind}:")
                lines += [f"  {rule.describe().removeprefix('rule ')}" for rule in rules]
        if internal:
            lines.append(f"(and {internal} rule(s) of the host itself: reading this session's "
                         "spill folder and the loaded skills)")
        self._say("\n".join(lines))

    # ------------------------------------------------------------------------- helpers

    def _resumable(self) -> str | None:
        """The current session's id when it is saved (a switch continues it), else None."""
        return None if self.session.store.in_memory_only else self.session.session_id

    def _agent_dir(self) -> Any:
        from ..session.assembly import resolve_agent_dir

        return resolve_agent_dir(None, os.environ)

    def _say(self, text: str, *, error: bool = False, dim: bool = False) -> None:
        from .live import DIM, RED, RESET, colours_wanted

        text = shown(text, self.out)
        if (error or dim) and colours_wanted(self.out):
            text = f"{RED if error else DIM}{text}{RESET}"
        print(text, file=self.out, flush=True)


def _pick_point(points: list[Any], choice: str) -> Any:
    """The rewind point ``choice`` names: its number in the list, or a prefix of its id."""
    if choice.isdigit():
        if 1 <= int(choice) <= len(points):
            return points[int(choice) - 1]
        raise CliUsageError(f"/rewind: there is no prompt {choice}; give 1 to {len(points)} "
                            "(/rewind alone lists them)")
    named = [p for p in points if p.message_id.startswith(choice)]
    if len(named) != 1:
        raise CliUsageError(f"/rewind: {choice!r} names {'no' if not named else 'several'} "
                            "prompt(s) of this session; /rewind alone lists them by number")
    return named[0]


def _files(count: int) -> str:
    return "1 file" if count == 1 else f"{count} files"


def _brief(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def context_lines(usage: Any) -> list[str]:
    """``/context``: the total, then the categories, which add up to it. The provider counts
    the whole request; the categories are character estimates, so when both are known they
    are shown as shares of the provider's count (largest remainders), and said to be."""
    about = "about " if usage.estimated else ""
    total = usage.total_tokens
    window = usage.context_window
    share = f" of {window} ({usage.fraction_used:.0%})" if window and \
        usage.fraction_used is not None else ""
    lines = [f"context: {'unknown' if total is None else f'{about}{total}'} tokens{share}"]
    parts = {name: c.tokens for name, c in usage.categories.items()}
    known = {name: tokens for name, tokens in parts.items() if tokens is not None}
    estimated = sum(known.values())
    if total is not None and len(known) == len(parts) and estimated and estimated != total:
        parts = dict(apportion(known, total))
        lines[0] += " (the categories: estimated shares of it)"
    lines += [f"  {name}: {'?' if tokens is None else tokens}" for name, tokens in parts.items()]
    return lines


def apportion(parts: dict[str, int], total: int) -> dict[str, int]:
    """``parts`` scaled to sum to ``total`` exactly (largest remainder)."""
    whole = sum(parts.values())
    exact = {name: value * total / whole for name, value in parts.items()}
    shares = {name: int(value) for name, value in exact.items()}
    left = total - sum(shares.values())
    for name in sorted(exact, key=lambda n: exact[n] - shares[n], reverse=True)[:left]:
        shares[name] += 1
    return shares
