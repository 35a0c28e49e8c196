"""HookEngine: one plugin's hook handlers prepared, matched and run; what every event shares.

``plugin.ClaudeHooks`` adds the per-event hook implementations on top. Here: substituting and
indexing the configuration once, matching (precompiled matchers, a per-value cache, identical
commands once), running the matching handlers in parallel with the event JSON on stdin and the
documented environment, and reporting what they say to the user.
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ..dialect import CLAUDE, Dialect
from ..hookable import Hookable
from ..records import record
from .config import MATCH_FIELD, CommandHandler, HookConfig

if TYPE_CHECKING:
    from .output import HandlerResult

#: events with no run to stop: ``continue: false`` there is only reported
OUTSIDE_A_RUN = frozenset({"SessionEnd", "Notification"})
#: the logger every diagnostic is written to as a warning
LOGGER = "zpi_compat_claude.hooks"
#: this host's permission modes in Claude's spelling (``ask`` has no Claude equivalent)
PERMISSION_MODES: Mapping[str, str] = {
    "default": "default", "ask": "default", "plan": "plan", "bypass": "bypassPermissions",
}

MAX_DIAGNOSTICS = 500
_MAX_CACHE = 512


@record
class HookDiagnostic:
    """Something a handler did that the user should know: a non-blocking error (``error``),
    stderr meant for the user (``warning``: exit 2 of an observer), or a ``systemMessage``
    (``message``: shown as a message, not as a problem)."""

    plugin: str
    event: str
    command: str | None
    message: str
    level: str = "error"

    def __str__(self) -> str:
        where = f"{self.event} hook" if self.command is None else (
            f"{self.event} hook `{_short(self.command)}`")
        return f"{self.plugin}: {where}: {self.message}"


@record
class ReadyHandler:
    """A handler ready to run: its command after substitution, its timeout decided. ``argv``
    not None: a ``process`` handler, run without a shell (``command`` is its display form)."""

    command: str
    shell: str
    timeout_s: float
    once: bool
    key: int
    argv: tuple[str, ...] | None = None
    #: bytes of stdout used (None: all the runner captured)
    output_cap: int | None = None
    #: ``command``, ``http`` (``command`` is the URL) or ``prompt`` (the prompt text)
    kind: str = "command"
    headers: tuple[tuple[str, str], ...] = ()
    allowed_env: tuple[str, ...] = ()
    model: str | None = None
    #: ``"async": true``: run in the background from the start
    run_async: bool = False
    #: ``"if"``: a permission rule the tool call must match (tool events only)
    condition: str | None = None


def _short(command: str, limit: int = 80) -> str:
    line = " ".join(command.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def join_texts(texts: Iterable[str | None]) -> str | None:
    """Texts for the model joined by blank lines; None when there is none."""
    return "\n\n".join(t for t in texts if t) or None


_environ_cache: list[Any] = [None, None]


def process_environment() -> dict[str, str]:
    """A copy of ``os.environ``. Decoding it costs more than running a small hook's Python,
    so the decoded copy is reused while the raw environment is unchanged (a cheap compare)."""
    raw = getattr(os.environ, "_data", None)
    if not isinstance(raw, dict):
        return dict(os.environ)
    if _environ_cache[0] != raw:
        _environ_cache[0], _environ_cache[1] = dict(raw), dict(os.environ)
    return dict(_environ_cache[1])


class HookEngine(Hookable):
    """What all events of one plugin share: prepared handlers, matching, running, reporting.

    Arguments: as ``ClaudeHooks``, the class to use (it adds the hook implementations).
    """

    def __init__(
        self,
        *,
        name: str,
        root: Path,
        hooks: HookConfig,
        data_dir: Path,
        env: Mapping[str, str],
        substitute: Callable[[str], str],
        timeout_s: float | None = None,
        dialect: Dialect = CLAUDE,
    ) -> None:
        self.name = name
        self.dialect = dialect
        self.root = Path(root)
        self.data_dir = Path(data_dir)
        self.env: dict[str, str] = {str(k): str(v) for k, v in env.items()}
        self.timeout_s = float(dialect.default_timeout_s if timeout_s is None else timeout_s)
        self.config = hooks
        #: what handlers reported (newest last); each is also logged as a warning
        self.diagnostics: deque[HookDiagnostic] = deque(maxlen=MAX_DIAGNOSTICS)
        self._reported = 0  # diagnostics ever reported (the deque forgets the oldest)
        self._groups: dict[str, list[tuple[Any, tuple[ReadyHandler, ...]]]] = {}
        self._cache: dict[str, dict[str | None, tuple[ReadyHandler, ...]]] = {}
        self._once_done: set[tuple[str, int]] = set()
        self._data_ready = False
        #: handlers answering in the background (``async``), until they end
        self._background: set[Any] = set()
        self._has_once = any(h.once for groups in hooks.events.values() for g in groups
                             for h in g.handlers)
        self._prepare(hooks, substitute)

    # ------------------------------------------------------------------ configuration

    def _prepare(self, hooks: HookConfig, substitute: Callable[[str], str]) -> None:
        key = 0
        for event in hooks.event_names():
            groups = []
            for group in hooks.events[event]:
                handlers = []
                for handler in group.handlers:
                    ready = self._ready(event, handler, substitute, key)
                    key += 1
                    if ready is not None:
                        handlers.append(ready)
                if handlers:
                    groups.append((group.matcher, tuple(handlers)))
            if groups:
                self._groups[event] = groups
                self._cache[event] = {}

    def _ready(self, event: str, handler: CommandHandler, substitute: Callable[[str], str],
               key: int) -> ReadyHandler | None:
        if handler.kind != "command":  # the URL or prompt is used as written
            timeout = handler.timeout_s if handler.timeout_s is not None else self.timeout_s
            return ReadyHandler(handler.command, "", timeout, handler.once, key, None, None,
                                handler.kind, handler.headers, handler.allowed_env,
                                handler.model, condition=handler.condition)
        try:
            command = substitute(handler.command)
            argv = None if handler.args is None else tuple(
                substitute(part) for part in (handler.command, *handler.args))
        except Exception as exc:
            self._report(event, handler.command,
                         f"could not substitute its variables ({type(exc).__name__}: {exc}); "
                         "skipped")
            return None
        if not isinstance(command, str) or not command.strip():
            self._report(event, handler.command, "the command is empty after substitution; "
                                                 "skipped")
            return None
        timeout = handler.timeout_s if handler.timeout_s is not None else self.timeout_s
        cap = handler.output_cap if handler.output_cap is not None else self.dialect.output_cap
        if argv is not None:
            import shlex

            return ReadyHandler(shlex.join(argv), "", timeout, handler.once, key, argv, cap,
                                run_async=handler.run_async, condition=handler.condition)
        return ReadyHandler(command, handler.shell, timeout, handler.once, key, None, cap,
                            run_async=handler.run_async, condition=handler.condition)

    def hook_events(self) -> list[str]:
        """The Claude events this object runs handlers for (for ``--list-plugins``)."""
        return [event for event in MATCH_FIELD if event in self._groups]

    # ------------------------------------------------------------------ diagnostics

    def _report(self, event: str, command: str | None, message: str,
                level: str = "error") -> None:
        diagnostic = HookDiagnostic(self.name, event, command, message, level)
        self.diagnostics.append(diagnostic)
        self._reported += 1
        import logging

        logging.getLogger(LOGGER).warning("%s", diagnostic)

    # ------------------------------------------------------------------ matching

    def _matching(self, event: str, value: str | None) -> tuple[ReadyHandler, ...]:
        """The handlers of ``event`` whose matcher matches ``value``, identical commands
        once; cached per value."""
        cache = self._cache.get(event)
        if cache is None:
            return ()
        found = cache.get(value)
        if found is not None:
            return found
        seen: set[tuple[str, str, str | None]] = set()
        handlers: list[ReadyHandler] = []
        for matcher, group in self._groups[event]:
            if matcher.matches(value):
                for handler in group:
                    # one command once; handlers with their own "if" are told apart until
                    # the call is known (:meth:`_for_call`)
                    if (handler.shell, handler.command, handler.condition) not in seen:
                        seen.add((handler.shell, handler.command, handler.condition))
                        handlers.append(handler)
        if len(cache) >= _MAX_CACHE:
            cache.clear()
        found = cache[value] = tuple(handlers)
        return found

    def _for_call(self, handlers: tuple[ReadyHandler, ...], name: str, arguments: Any,
                  cwd: str) -> tuple[ReadyHandler, ...]:
        """The handlers whose ``if`` rule (permission rule syntax, as Claude Code reads it:
        ``Bash(git commit:*)``, ``Edit(src/**)``) matches the call of tool ``name`` (the
        host's name) with ``arguments``, each command once."""
        if not any(h.condition is not None for h in handlers):
            return handlers
        from pathlib import Path

        from zpi_host.permissions import parse_rule

        seen: set[tuple[str, str]] = set()
        kept: list[ReadyHandler] = []
        for handler in handlers:
            if handler.condition is not None and not parse_rule(handler.condition).matches(
                    name, arguments, Path(cwd), strict=False):
                continue
            if (handler.shell, handler.command) not in seen:
                seen.add((handler.shell, handler.command))
                kept.append(handler)
        return tuple(kept)

    def _due(self, session: Any, handlers: tuple[ReadyHandler, ...]) -> tuple[ReadyHandler, ...]:
        """Leave out ``once`` handlers that already ran in this session."""
        if not handlers or not self._has_once:
            return handlers
        sid = str(getattr(session, "session_id", ""))
        due = tuple(h for h in handlers if not h.once or (sid, h.key) not in self._once_done)
        self._once_done.update((sid, h.key) for h in due if h.once)
        return due

    # ------------------------------------------------------------------ running

    def _environment(self, cwd: Path, env_file: Path | None, hidden: Iterable[str] = ()
                     ) -> dict[str, str]:
        """The process environment without ``hidden`` (the session's provider key variables,
        ``SessionView.hidden_variables``), plus the plugin's and the documented variables."""
        env = process_environment()
        for name in hidden:
            env.pop(name, None)
        env.update(self.env)
        env["CLAUDE_PROJECT_DIR"] = str(cwd)
        env["CLAUDE_PLUGIN_ROOT"] = str(self.root)
        env["CLAUDE_PLUGIN_DATA"] = str(self.data_dir)
        env.update(self.dialect_environment(cwd))
        env.update(self.dialect.marker_env)
        if env_file is not None:
            env["CLAUDE_ENV_FILE"] = str(env_file)
        return env

    async def _run(self, event: str, session: Any, handlers: Sequence[ReadyHandler],
                   fields: Mapping[str, Any], *, env_file: Path | None = None,
                   ) -> list[HandlerResult]:
        """Run ``handlers``; what they reported goes to the session's user: problems as
        warnings (``SessionView.warn``), ``systemMessage`` as a message
        (``SessionView.tell_user``: a ``system`` event)."""
        before = self._reported
        try:
            results = await self._run_handlers(event, session, handlers, fields,
                                               env_file=env_file)
            stops = [r.stop_reason or f"a {event} hook answered continue: false"
                     for r in results if r.stop]
            if stops and event not in OUTSIDE_A_RUN:
                from zpi_host.errors import RunStopped

                raise RunStopped("; ".join(stops))
            return results
        finally:
            warn = getattr(session, "warn", None)
            tell = getattr(session, "tell_user", None)
            fresh = min(self._reported - before, len(self.diagnostics))
            for diagnostic in list(self.diagnostics)[-fresh:] if fresh else ():
                if diagnostic.level == "message" and callable(tell):
                    tell(diagnostic.message, self.name)
                elif callable(warn):
                    warn(str(diagnostic))

    async def _run_handlers(self, event: str, session: Any, handlers: Sequence[ReadyHandler],
                            fields: Mapping[str, Any], *, env_file: Path | None = None,
                            ) -> list[HandlerResult]:
        """Run ``handlers`` with the event's JSON on stdin, in parallel (or one after another
        when the dialect says so); their results in configuration order. Problems and user
        messages are reported here."""
        import anyio

        from .output import HandlerResult
        from .transcript import transcript_for

        cwd = Path(getattr(session, "cwd", None) or os.getcwd())
        session_id = str(getattr(session, "session_id", ""))
        if not self._data_ready:
            try:
                self.data_dir.mkdir(parents=True, exist_ok=True)
                self._data_ready = True
            except OSError as exc:
                self._report(event, None, f"could not create CLAUDE_PLUGIN_DATA "
                                          f"{self.data_dir}: {exc}")
        try:
            transcript = str(transcript_for(session_id, getattr(session, "messages", ()), cwd,
                                            _version(), getattr(session, "agent_dir", None)))
        except OSError as exc:
            self._report(event, None, f"could not write the transcript for the hook: {exc}")
            transcript = ""
        mode = str(getattr(session, "permission_mode", "default"))
        payload = {
            "session_id": session_id, "transcript_path": transcript, "cwd": str(cwd),
            "permission_mode": PERMISSION_MODES.get(mode, mode), "hook_event_name": event,
        }
        prompt_id = getattr(session, "prompt_id", "")
        if "prompt_id" in self.dialect.input_extras and event != "SessionStart" and prompt_id:
            payload["prompt_id"] = str(prompt_id)
        payload.update(fields)
        if self.dialect.camel_case_input:
            payload.update({camel_case(key): value for key, value in list(payload.items())})
        data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
        hidden = getattr(session, "hidden_variables", None)
        if hidden is None:  # not a kernel session view: keep the host's keys out anyway
            from zpi_host.support.redaction import key_variables

            hidden = key_variables(None)
        env = self._environment(cwd, env_file, hidden)
        results: list[HandlerResult] = [HandlerResult() for _ in handlers]

        async def one(index: int, handler: ReadyHandler) -> None:
            if handler.kind != "command":
                from .remote import call_remote

                results[index] = await call_remote(event, handler, payload, data, env,
                                                   session, self.dialect)
                return
            results[index] = await self._call_handler(event, handler, payload, data, env, cwd)

        if len(handlers) == 1 or self.dialect.sequential_handlers:
            for index, handler in enumerate(handlers):
                await one(index, handler)
        else:
            async with anyio.create_task_group() as group:
                for index, handler in enumerate(handlers):
                    group.start_soon(one, index, handler)
        # what a handler printed may hold a key it was given (secrets.pass_to_commands):
        # redacted before it is logged or shown
        redact = getattr(session, "redact", None) or str
        for handler, result in zip(handlers, results, strict=True):
            if result.later is not None:
                self._in_background(event, handler, result.later, session)
            for problem in result.problems:
                self._report(event, handler.command, redact(problem))
            for message in result.messages:
                self._report(event, handler.command, redact(message), "warning")
            for message in result.system_messages:
                self._report(event, handler.command, redact(message), "message")
        return results

    async def _call_handler(self, event: str, handler: ReadyHandler, payload: Mapping[str, Any],
                            data: bytes, env: Mapping[str, str], cwd: Path) -> HandlerResult:
        """Run one handler: its command with the event's JSON (``data``, the encoded
        ``payload``) on stdin. A subclass may answer otherwise (the SDK calls Python callbacks
        with ``payload``) and keeps matching, combining and reporting."""
        from .output import HandlerResult, interpret
        from .runner import run_command

        argv = None if handler.argv is None else project_dir_filled(handler.argv, cwd)

        async def run(detect_async: bool) -> Any:
            return await run_command(handler.command, shell=handler.shell, stdin=data,
                                     env=env, cwd=cwd, timeout_s=handler.timeout_s,
                                     detect_async=detect_async,
                                     **({} if argv is None else {"program": argv}))

        if handler.run_async:  # "async": true in the configuration: nothing to wait for
            async def later() -> HandlerResult:
                outcome = await run(False)
                return interpret(event, cap_output(outcome, handler.output_cap), self.dialect)

            return HandlerResult(later=later())
        outcome = await run(self.dialect.async_answers)
        if outcome.background is not None:  # it answered {"async": true} first
            async def finished() -> HandlerResult:
                final = await outcome.background.finish()
                return interpret(event, cap_output(final, handler.output_cap), self.dialect)

            return HandlerResult(later=finished())
        return interpret(event, cap_output(outcome, handler.output_cap), self.dialect)

    def _in_background(self, event: str, handler: ReadyHandler, later: Any,
                       session: Any) -> None:
        """Let a handler that answers later (``async``) run beside the session, as Claude
        Code does: the event did not wait for it; when it ends, its ``additionalContext``
        (and plain context) reaches the model before its next request, its ``systemMessage``
        the user, its problems the warnings. A decision it gives comes too late and is
        ignored, with a warning. Still running when the event loop ends (the session's
        process exits), it is cancelled and its processes stopped."""
        import asyncio

        async def deliver() -> None:
            result = await later
            redact = getattr(session, "redact", None) or str
            warn = getattr(session, "warn", None)
            notes = [*result.problems, *result.messages]
            if result.block or result.stop or result.permission is not None or \
                    result.updated_input is not None or result.updated_output is not None:
                notes.append("it answered in the background (async), after the event: its "
                             "decision is ignored")
            for note in notes:
                self._report(event, handler.command, redact(note))
                if callable(warn):
                    warn(str(self.diagnostics[-1]))
            context = join_texts(result.contexts)
            add_context = getattr(session, "add_context", None)
            if context and callable(add_context):
                add_context(redact(context), self.name)
            tell = getattr(session, "tell_user", None)
            for message in result.system_messages:
                if callable(tell):
                    tell(redact(message), self.name)

        task = asyncio.get_running_loop().create_task(deliver())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def dialect_environment(self, cwd: Path) -> dict[str, str]:
        """The dialect's names for the plugin's root, data folder and the project
        (``ZCODE_PLUGIN_ROOT`` ...); Claude's own are set by :meth:`_environment`."""
        env: dict[str, str] = {}
        for suffix, value in (("PROJECT_DIR", cwd), ("PLUGIN_ROOT", self.root),
                              ("PLUGIN_DATA", self.data_dir)):
            env.update(self.dialect.variables(suffix, str(value)))
        return env

    def _unsupported_stop(self, event: str, results: Sequence[HandlerResult],
                          instead: str) -> None:
        """``continue: false`` where there is no run to stop (``OUTSIDE_A_RUN``)."""
        for result in results:
            if result.stop:
                why = f" ({result.stop_reason})" if result.stop_reason else ""
                self._report(event, None, f"a handler answered continue: false{why}; this "
                                          f"host cannot stop the session from {event}, so "
                                          f"{instead}", "warning")

    def _blocked_reason(self, event: str, results: Sequence[HandlerResult],
                        handlers: Sequence[ReadyHandler], verb: str) -> str:
        reasons = []
        for handler, result in zip(handlers, results, strict=True):
            if result.block:
                reasons.append(result.reason or f"{verb} by the {event} hook "
                                                 f"`{_short(handler.command)}` (no reason given)")
        return "; ".join(reasons)


def camel_case(key: str) -> str:
    """``session_id`` -> ``sessionId`` (ZCode gives hooks both spellings)."""
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


_PROJECT_VARIABLES = ("${CLAUDE_PROJECT_DIR}", "${ZCODE_PROJECT_DIR}")


def project_dir_filled(argv: Sequence[str], cwd: Path) -> list[str]:
    """A ``process`` handler's argv with ``${ZCODE_PROJECT_DIR}`` (and Claude's name) filled
    in: no shell expands them, and the project is known only when the event runs."""
    out = []
    for part in argv:
        for name in _PROJECT_VARIABLES:
            part = part.replace(name, str(cwd))
        out.append(part)
    return out


def cap_output(outcome: Any, cap: int | None) -> Any:
    """``outcome`` with at most ``cap`` bytes of stdout kept (ZCode reads 32 KiB); what is
    cut is counted in ``dropped_bytes``, so the problem is reported."""
    if cap is None:
        return outcome
    raw = outcome.stdout.encode("utf-8", errors="surrogateescape")
    if len(raw) <= cap:
        return outcome
    return attrs.evolve(outcome, stdout=raw[:cap].decode("utf-8", errors="ignore"),
                        dropped_bytes=outcome.dropped_bytes + len(raw) - cap)


_VERSION: list[str] = []


def _version() -> str:
    if not _VERSION:
        try:
            from importlib.metadata import version

            _VERSION.append(version("zpi-compat-claude"))
        except Exception:
            _VERSION.append("")
    return _VERSION[0]
