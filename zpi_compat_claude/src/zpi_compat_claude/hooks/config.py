"""Claude Code hook configuration: events -> matcher groups -> handlers, parsed once.

The same shape comes from a plugin's ``hooks/hooks.json``, an inline ``hooks`` object in its
manifest and the ``hooks`` key of a Claude ``settings.json``. Parsing never raises for bad
content: every problem becomes a diagnostic naming where it is, and only the bad part (an
event, a group, a handler) is left out, so one typo does not disable a plugin's other hooks.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from typing import Any

from ..dialect import CLAUDE, CLAUDE_EVENTS, Dialect
from ..records import field, record
from .matchers import Matcher, MatcherError, compile_matcher

#: The Claude Code events this host runs, in the order Claude documents them.
EVENTS: tuple[str, ...] = CLAUDE_EVENTS

#: What each event's matcher is applied to; ``None``: the event has no matcher field.
MATCH_FIELD: Mapping[str, str | None] = {
    "SessionStart": "source",
    "UserPromptSubmit": None,
    "PreToolUse": "tool_name",
    "PermissionRequest": "tool_name",
    "PostToolUse": "tool_name",
    "PostToolUseFailure": "tool_name",
    "Stop": None,
    "SubagentStart": "agent_type",
    "SubagentStop": "agent_type",
    "PreCompact": "trigger",
    "PostCompact": "trigger",
    "Notification": "notification_type",
    "SessionEnd": "reason",
}

#: Claude Code events this host has no equivalent for: reported, never run.
CLAUDE_ONLY_EVENTS = frozenset({
    "PermissionDenied", "Setup", "StopFailure", "TeammateIdle", "TaskCreated", "TaskCompleted",
    "ConfigChange", "WorktreeCreate", "WorktreeRemove", "InstructionsLoaded", "CwdChanged",
    "FileChanged", "Elicitation", "ElicitationResult", "UserPromptExpansion", "PostToolBatch",
})

#: seconds a handler may run when neither it nor the settings say otherwise (Claude's default)
DEFAULT_TIMEOUT_S = 60.0

#: ``shell`` values a command handler may name; the default is bash.
SHELLS = ("bash", "sh")
DEFAULT_SHELL = "bash"

#: Claude handler types a dialect may leave out (then reported as not supported, never run);
#: ``agent`` and ``mcp_tool`` are not run by any dialect here.
UNSUPPORTED_TYPES = frozenset({"http", "prompt", "agent", "mcp_tool"})

#: seconds a ``prompt`` handler may take by default (Claude Code's)
PROMPT_TIMEOUT_S = 30.0

_HANDLER_KEYS = frozenset({"type", "command", "timeout", "shell", "once", "async",
                           "statusMessage", "if", "asyncRewake"})
#: the fields of the handler types that are not a command
_REMOTE_KEYS = {"http": frozenset({"type", "url", "headers", "allowedEnvVars", "timeout", "once",
                                   "statusMessage", "if", "async", "asyncRewake"}),
                "prompt": frozenset({"type", "prompt", "model", "timeout", "once",
                                     "statusMessage", "if", "async", "asyncRewake"})}
_GROUP_KEYS = frozenset({"matcher", "hooks"})


@record
class CommandHandler:
    """One ``{"type": "command", ...}`` handler. ``timeout_s`` None: the plugin's default.
    ``args`` not None: a ``process`` handler (ZCode), ``command`` run with ``args``, no shell.
    ``output_cap``: bytes of stdout used (None: the dialect's)."""

    command: str
    timeout_s: float | None = None
    shell: str = DEFAULT_SHELL
    once: bool = False
    where: str = ""
    args: tuple[str, ...] | None = None
    output_cap: int | None = None
    #: ``command``; ``http`` (``command`` is the URL) or ``prompt`` (``command`` is the
    #: prompt): see :mod:`.remote`
    kind: str = "command"
    #: ``http``: header name -> value (``$VAR`` filled from ``allowed_env``)
    headers: tuple[tuple[str, str], ...] = ()
    allowed_env: tuple[str, ...] = ()
    #: ``prompt``: the model to ask (None: the session's)
    model: str | None = None
    #: ``"async": true``: runs in the background; the event does not wait for it
    run_async: bool = False
    #: ``"if"``: a permission rule (``Bash(git commit:*)``) the tool call must match
    condition: str | None = None


@record
class MatcherGroup:
    """Handlers that run when ``matcher`` matches the event's match field."""

    matcher: Matcher
    handlers: tuple[CommandHandler, ...]
    where: str = ""


@record
class HookConfig:
    """A plugin's hooks: event name -> matcher groups (only events with handlers)."""

    events: Mapping[str, tuple[MatcherGroup, ...]] = field(factory=dict)
    description: str | None = None

    def event_names(self) -> list[str]:
        """The events that have at least one handler, in Claude's documented order."""
        return [e for e in EVENTS if any(g.handlers for g in self.events.get(e, ()))]

    def merged(self, other: HookConfig) -> HookConfig:
        """This configuration followed by ``other`` (hooks.json plus inline manifest hooks)."""
        events = {name: tuple(groups) for name, groups in self.events.items()}
        for name, groups in other.events.items():
            events[name] = events.get(name, ()) + tuple(groups)
        return HookConfig(events, self.description or other.description)

    def __bool__(self) -> bool:
        return bool(self.event_names())


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def _handler(raw: Any, where: str, problems: list[str],
             dialect: Dialect = CLAUDE) -> CommandHandler | None:
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: a handler must be an object with \"type\" and \"command\", "
                        f"got {type(raw).__name__}; skipped")
        return None
    kind = raw.get("type")
    runs = " and ".join(f"\"{known}\"" for known in sorted(dialect.handler_types))
    if isinstance(kind, str) and kind in UNSUPPORTED_TYPES and kind not in dialect.handler_types:
        problems.append(f"{where}: handler type {kind!r} is not supported by this host (only "
                        f"{runs} handlers run); skipped")
        return None
    if not isinstance(kind, str) or kind not in dialect.handler_types:
        problems.append(f"{where}: unknown handler type {kind!r} (this host runs {runs} "
                        f"handlers of {dialect.product}); skipped")
        return None
    if "enabled" in dialect.handler_fields and raw.get("enabled", True) is False:
        return None  # ZCode: "enabled": false switches a handler off
    if kind in _REMOTE_KEYS:
        return _remote_handler(kind, raw, where, problems, dialect)
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        problems.append(f"{where}: \"command\" must be a non-empty string; skipped")
        return None
    for key in sorted(k for k in raw if k not in _HANDLER_KEYS | dialect.handler_fields):
        problems.append(f"{where}: unknown field {key!r} ignored")
    args: tuple[str, ...] | None = None
    if kind == "process":
        raw_args = raw.get("args", [])
        if not isinstance(raw_args, list) or not all(isinstance(a, str) for a in raw_args):
            problems.append(f"{where}: \"args\" must be a list of strings; skipped")
            return None
        args = tuple(raw_args)
    timeout = _timeout(raw, where, problems, dialect)
    shell = raw.get("shell", DEFAULT_SHELL)
    if shell is None:
        shell = DEFAULT_SHELL
    if shell not in SHELLS:
        problems.append(f"{where}: shell {shell!r} is not supported by this host (use "
                        f"{' or '.join(map(repr, SHELLS))}); skipped")
        return None
    once = raw.get("once", False)
    if not isinstance(once, bool):
        problems.append(f"{where}: \"once\" must be true or false, got {once!r}; ignored")
        once = False
    run_async = raw.get("async", False)
    if not isinstance(run_async, bool):
        problems.append(f"{where}: \"async\" must be true or false, got {run_async!r}; "
                        "ignored")
        run_async = False
    if raw.get("asyncRewake"):
        problems.append(f"{where}: \"asyncRewake\" is not supported: the handler runs in "
                        "the background as with \"async\", and its exit code 2 does not "
                        "wake the model")
        run_async = True
    condition = _condition(raw, where, problems)
    return CommandHandler(command, timeout, shell, once, where, args, run_async=run_async,
                          condition=condition)


def _condition(raw: Mapping[str, Any], where: str, problems: list[str]) -> str | None:
    """A handler's ``if``: a permission rule, checked when it is read (a bad one is left
    out with a warning, and the handler then runs for every event its matcher matches)."""
    value = raw.get("if")
    if value is None:
        return None
    from zpi_host.permissions import PermissionRuleError, parse_rule

    problem = f"got {type(value).__name__}"
    if isinstance(value, str):
        try:
            parse_rule(value)
            return value
        except PermissionRuleError as exc:
            problem = exc.problem
    problems.append(f"{where}: \"if\" must be a permission rule such as "
                    f"'Bash(git commit:*)' ({problem}); ignored, the handler runs for every "
                    "event its matcher matches")
    return None


def _remote_handler(kind: str, raw: Mapping[str, Any], where: str, problems: list[str],
                    dialect: Dialect) -> CommandHandler | None:
    """An ``http`` or ``prompt`` handler (:mod:`.remote` runs them)."""
    field_name = "url" if kind == "http" else "prompt"
    value = raw.get(field_name)
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{where}: \"{field_name}\" must be a non-empty string; skipped")
        return None
    if kind == "http" and not value.startswith(("http://", "https://")):
        problems.append(f"{where}: \"url\" must start with http:// or https://, got "
                        f"{value[:80]!r}; skipped")
        return None
    for key in sorted(k for k in raw if k not in _REMOTE_KEYS[kind]):
        problems.append(f"{where}: unknown field {key!r} ignored")
    headers: list[tuple[str, str]] = []
    raw_headers = raw.get("headers", {})
    if not isinstance(raw_headers, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in raw_headers.items()):
        problems.append(f"{where}: \"headers\" must map names to text; ignored")
    else:
        headers = list(raw_headers.items())
    allowed = raw.get("allowedEnvVars", [])
    if not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed):
        problems.append(f"{where}: \"allowedEnvVars\" must be a list of names; ignored")
        allowed = []
    model = raw.get("model")
    if model is not None and not isinstance(model, str):
        problems.append(f"{where}: \"model\" must be a model name; ignored")
        model = None
    once = raw.get("once", False) is True
    if raw.get("async") or raw.get("asyncRewake"):
        problems.append(f"{where}: \"async\" is for command handlers; this one runs like any "
                        "other handler and the event waits for it")
    condition = _condition(raw, where, problems)
    timeout = _timeout(raw, where, problems, dialect)
    if timeout is None and kind == "prompt":
        timeout = PROMPT_TIMEOUT_S
    return CommandHandler(value, timeout, DEFAULT_SHELL, once, where, None, None, kind,
                          tuple(headers), tuple(allowed), model, condition=condition)


def _timeout(raw: Mapping[str, Any], where: str, problems: list[str],
             dialect: Dialect) -> float | None:
    """``timeoutMs`` (where the dialect has it; it wins) or ``timeout`` in seconds."""
    for key, scale, unit in (("timeoutMs", 1000.0, "milliseconds"), ("timeout", 1.0, "seconds")):
        if raw.get(key) is None or (key == "timeoutMs" and key not in dialect.handler_fields):
            continue
        value = _number(raw[key])
        if value is not None:
            return value / scale
        problems.append(f"{where}: \"{key}\" must be a number of {unit} greater than 0, "
                        f"got {raw[key]!r}; the default is used")
    return None


def _group(event: str, raw: Any, where: str, problems: list[str],
           dialect: Dialect = CLAUDE) -> MatcherGroup | None:
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: a matcher group must be an object with \"hooks\", got "
                        f"{type(raw).__name__}; skipped")
        return None
    for key in sorted(k for k in raw if k not in _GROUP_KEYS):
        problems.append(f"{where}: unknown field {key!r} ignored")
    value = raw.get("matcher")
    if value is not None and not isinstance(value, str):
        problems.append(f"{where}: \"matcher\" must be a string, got {type(value).__name__}; "
                        "its handlers are skipped")
        return None
    try:
        matcher = compile_matcher(value, dialect.exact_matcher, dialect.matcher_aliases)
    except MatcherError as exc:
        problems.append(f"{where}: {exc}; its handlers are skipped")
        return None
    if MATCH_FIELD[event] is None and matcher.kind != "all":
        problems.append(f"{where}: {event} has no matcher; {value!r} is ignored and its "
                        "handlers run for every event")
        matcher = compile_matcher(None)
    handlers_raw = raw.get("hooks")
    if not isinstance(handlers_raw, list):
        problems.append(f"{where}: \"hooks\" must be a list of handlers; skipped")
        return None
    handlers = []
    for i, item in enumerate(handlers_raw):
        handler = _handler(item, f"{where}.hooks[{i}]", problems, dialect)
        if handler is not None:
            handlers.append(handler)
    return MatcherGroup(matcher, tuple(handlers), where)


def _unknown_event(name: str, where: str, dialect: Dialect = CLAUDE) -> str:
    if name in CLAUDE_ONLY_EVENTS:
        return (f"{where}: {name} is a Claude Code event this host does not have; its "
                "handlers never run")
    if name in EVENTS:
        return (f"{where}: {name} is not a {dialect.product} event (it has "
                f"{', '.join(dialect.events)}); its handlers never run")
    close = difflib.get_close_matches(name, dialect.events, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{where}: unknown hook event {name!r}{hint}; it is skipped"


def parse_hooks(data: Any, where: str, dialect: Dialect = CLAUDE
                ) -> tuple[HookConfig, list[str]]:
    """Parse a hooks configuration; never raises.

    ``data`` is either a hooks file (``{"description"?, "hooks": {event: [...]}}``) or the
    event mapping itself (the ``hooks`` value of a settings file). ``where`` names the source
    in diagnostics (``"/path/hooks/hooks.json"``); ``dialect`` decides the events, handler
    types and matcher rules. Returns the configuration of everything usable and one
    diagnostic per problem.
    """
    problems: list[str] = []
    if data is None:
        return HookConfig(), problems
    if not isinstance(data, Mapping):
        problems.append(f"{where}: hooks must be a JSON object, got {type(data).__name__}")
        return HookConfig(), problems
    description: str | None = None
    prefix = "hooks"
    events_raw: Any = data
    if "hooks" in data:
        events_raw = data["hooks"]
        desc = data.get("description")
        if desc is not None and not isinstance(desc, str):
            problems.append(f"{where}: \"description\" must be a string; ignored")
        elif isinstance(desc, str):
            description = desc
        for key in sorted(str(k) for k in data if k not in ("hooks", "description")):
            problems.append(f"{where}: unknown top-level field {key!r} ignored")
        if not isinstance(events_raw, Mapping):
            problems.append(f"{where}: \"hooks\" must be an object mapping event names to "
                            f"lists of matcher groups, got {type(events_raw).__name__}")
            return HookConfig(description=description), problems
    events: dict[str, tuple[MatcherGroup, ...]] = {}
    for name, groups_raw in events_raw.items():
        here = f"{where}: {prefix}.{name}"
        if name not in dialect.events:
            problems.append(_unknown_event(str(name), where, dialect))
            continue
        if not isinstance(groups_raw, list):
            problems.append(f"{here}: must be a list of matcher groups, got "
                            f"{type(groups_raw).__name__}; skipped")
            continue
        groups = []
        for i, raw in enumerate(groups_raw):
            group = _group(name, raw, f"{here}[{i}]", problems, dialect)
            if group is not None and group.handlers:
                groups.append(group)
        if groups:
            events[name] = tuple(groups)
    return HookConfig(events, description), problems
