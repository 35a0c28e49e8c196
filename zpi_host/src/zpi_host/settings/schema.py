"""The one description of every settings key the host reads: its type, its default, its meaning.

:func:`check_layer` validates one settings file against :data:`SCHEMA` before it is merged: a
value of the wrong type is dropped from that file and reported (file, key path, expected type),
so the key falls back to the other file's value or to its default while every other key keeps
working. Unknown top-level keys are kept silently (plugins read their own); unknown keys in a
known section are reported with a did-you-mean, and dropped where the section's reader accepts
only its own keys. The consumers (catalog, compaction, permissions, hooks, tools, sessions,
``compat.claude``) still check meaning (a rule's syntax, a model entry); this table makes sure
they only ever see the types they expect. docs/sessions.md lists it.

This module is on the ``--list-plugins`` path: standard library only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal, NamedTuple

from ..errors import docs_url

# ----------------------------------------------------------------------------------- kinds


class Kind(NamedTuple):
    """A JSON type with a test; ``expected`` completes "must be …" in warnings and docs."""

    expected: str
    test: Callable[[Any], bool]

    def accepts(self, value: Any) -> bool:
        return self.test(value)


def _is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A finite JSON number that fits a float (readers do float arithmetic with it)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


BOOL = Kind("true or false", lambda v: isinstance(v, bool))
STRING = Kind("a string", lambda v: isinstance(v, str))
OBJECT = Kind("an object", lambda v: isinstance(v, Mapping))
FRACTION = Kind("a number > 0 and <= 1", lambda v: is_number(v) and 0 < v <= 1)


def whole(minimum: int) -> Kind:
    return Kind(f"a whole number >= {minimum}", lambda v: _is_whole(v) and v >= minimum)


def seconds(*, above_zero: bool = False) -> Kind:
    if above_zero:
        return Kind("a number of seconds > 0", lambda v: is_number(v) and v > 0)
    return Kind("a number of seconds >= 0", lambda v: is_number(v) and v >= 0)


def one_of(*choices: str) -> Kind:
    return Kind("one of " + ", ".join(json.dumps(c) for c in choices),
                lambda v: isinstance(v, str) and v in choices)


def list_of(item: Kind) -> Kind:
    plural = item.expected.removeprefix("a ").removeprefix("an ")
    return Kind(f"a list of {plural}s" if item in (STRING, OBJECT) else
                f"a list, each item {item.expected}",
                lambda v: isinstance(v, list) and all(item.accepts(x) for x in v))


def objects_by_name(what: str) -> Kind:
    return Kind(f"an object mapping names to {what} objects",
                lambda v: isinstance(v, Mapping) and all(isinstance(x, Mapping)
                                                         for x in v.values()))


def or_null(kind: Kind) -> Kind:
    return Kind(f"{kind.expected} or null", lambda v: v is None or kind.accepts(v))


PASS_SECRETS = Kind("true, false or a list of variable names",
                    lambda v: isinstance(v, bool) or list_of(STRING).accepts(v))

# ---------------------------------------------------------------------------------- schema

Unknown = Literal["keep", "warn", "drop"]
"""What an unknown key in a section gets: kept silently (open to plugins), kept with a
warning, or dropped with a warning (the section's reader refuses keys it does not know)."""


class Setting(NamedTuple):
    name: str
    kind: Kind
    default: Any
    doc: str
    #: how a list value of the project file meets the user's: ``add`` (concatenated, repeats
    #: dropped: rules, names, folders) or ``replace`` (the list is one value: a command line)
    lists: Literal["add", "replace"] = "add"


class Section(NamedTuple):
    name: str
    unknown: Unknown
    children: tuple[Setting | Section, ...]
    doc: str = ""


MIB = 1024 * 1024

SCHEMA = Section("", "keep", (
    Setting("model", or_null(STRING), None, "default model: a catalog name or `PROVIDER:MODEL`"),
    Setting("reasoning_level", or_null(one_of("off", "minimal", "low", "medium", "high", "max")),
            None, "default reasoning level (clamped to what the model supports)"),
    Setting("thinking_budget_tokens", or_null(whole(1024)), None,
            "thinking budget of Anthropic models that take one, instead of the level's"),
    Setting("prompt_caching", BOOL, True,
            "Anthropic prompt-cache breakpoints on the system prompt, tools and latest turns"),
    Setting("models", objects_by_name("model entry"), {},
            "the model catalog (user guide, \"Models and credentials\")"),
    Setting("providers", objects_by_name("provider defaults"), {},
            "defaults per provider: `base_url`, `api_key_env`, `headers`"),
    Setting("services", objects_by_name("service preset"), {},
            "OpenAI-compatible services used as `SERVICE:MODEL`: `provider`, `base_url`, "
            "`api_key_env` (over the built-in presets of the same name)"),
    Setting("metadata", OBJECT, {},
            "about this file; `custom: true` keeps `zpi-host init-agent-dir` from updating it"),
    Setting("trusted_projects", list_of(STRING), [],
            "project folders whose hooks and plugin folders may run (user settings only; "
            "`--trust-project` adds one)"),
    Section("requests", "drop", (
        Setting("max_retries", whole(0), 3, "retries of a failed model request"),
        Setting("connect_timeout", seconds(), 10.0, "seconds to connect"),
        Setting("read_timeout", seconds(), 300.0, "seconds without a byte of the answer"),
        Setting("write_timeout", seconds(), 60.0, "seconds to send the request"),
        Setting("retry_base_delay", seconds(), 1.0, "first backoff delay"),
        Setting("retry_max_delay", seconds(), 30.0, "longest backoff delay"),
        Setting("retry_after_max", seconds(), 60.0, "longest `Retry-After` obeyed"),
        Setting("max_answer_chars", whole(1), 4_000_000,
                "characters of one model answer (text, thinking, tool arguments) before it "
                "is cut with an error"),
        Setting("max_response_bytes", whole(1), 512 * MIB,
                "bytes on the wire of one streamed answer (a guard against a stream of "
                "overhead) before it is cut with an error"),
    ), "HTTP providers: retries, timeouts and the size of one answer"),
    Section("compaction", "drop", (
        Setting("enabled", BOOL, True, "compact automatically near the context limit"),
        Setting("reserve_tokens", whole(0), 16_384, "tokens kept free for the answer"),
        Setting("keep_recent_tokens", whole(0), 20_000, "recent tokens kept verbatim"),
    ), "when and how history is summarised"),
    Section("sessions", "warn", (
        Setting("fsync", one_of("turn", "record"), "turn",
                "when the transcript is fsynced: end of every turn, or every record"),
    )),
    Section("tools", "warn", (
        Setting("output_limit_bytes", whole(1), 32 * 1024,
                "tool output kept in the history before the rest is spilled to a file"),
    )),
    Section("plugins", "warn", (
        Setting("disabled", list_of(STRING), [],
                "plugin or distribution names not to load (like `-p no:NAME`)"),
        Section("builtins", "warn", (
            Setting("drain_timeout", seconds(above_zero=True), 5.0,
                    "seconds the built-in services may take to finish at session end"),
            Section("ask", "warn", (
                Setting("enabled", BOOL, True, "the `ask_user` tool"),
            )),
            Section("notify", "warn", (
                Setting("enabled", BOOL, True, "deliver notifications to the terminal and "
                        "the notification command"),
                Setting("terminal", one_of("bell", "osc9", "off"), "bell",
                        "what a notification does on a terminal: a bell, an OSC 9 desktop "
                        "notification, or nothing"),
                Setting("command", or_null(list_of(STRING)), None,
                        "a command run for a notification (e.g. `[\"notify-send\"]`), "
                        "with the title and message as its last arguments", lists="replace"),
                Setting("min_run_seconds", seconds(), 30.0,
                        "a run longer than this notifies when it ends"),
            )),
            Section("tasks", "warn", (
                Setting("enabled", BOOL, True, "background commands (`bash` with "
                        "`run_in_background`, `task_output`, `task_stop`)"),
                Setting("progress_seconds", seconds(above_zero=True), 5.0,
                        "how often a running task reports progress while its output grows"),
                Setting("max_running", whole(1), 16,
                        "background commands one session may run at once"),
                Setting("max_output_bytes", whole(1024), 64 * 1024 * 1024,
                        "bytes of output one background command may write to its file; at "
                        "the limit the output is cut and the command stopped"),
            )),
            Section("title", "warn", (
                Setting("enabled", BOOL, True, "title a session after its first exchange"),
                Setting("model", or_null(STRING), None,
                        "the model that writes titles (null: the session's model)"),
            )),
            Section("todos", "warn", (
                Setting("enabled", BOOL, True, "the `todo_write` tool (Claude Code's "
                        "`TodoWrite`): the model's task list"),
            )),
            Section("notebooks", "warn", (
                Setting("enabled", BOOL, True, "the `notebook_read` and `notebook_edit` tools "
                        "for Jupyter notebooks"),
            )),
            Section("subagents", "warn", (
                Setting("enabled", BOOL, True, "the `task` tool, which starts sub-agents"),
                Setting("max_turns", or_null(whole(1)), None,
                        "turns one sub-agent may take (null: no limit)"),
            )),
            Section("instructions", "warn", (
                Setting("enabled", BOOL, True, "the default behaviour instructions"),
                Setting("disabled", list_of(STRING), [],
                        f"names of single instructions to leave out ({docs_url('builtins')})"),
            )),
            Section("web", "warn", (
                Setting("enabled", BOOL, True, "the `web_fetch` and `web_search` tools"),
                Setting("timeout_seconds", seconds(above_zero=True), 30.0,
                        "the most a fetch or a search may take, redirects included"),
                Setting("max_bytes", whole(1), 5 * 1024 * 1024,
                        "the largest response body a fetch reads"),
                Setting("max_redirects", whole(0), 10, "redirects a fetch follows"),
                Setting("allow_private_addresses", BOOL, False,
                        "fetch from private, loopback and link-local addresses too"),
                Setting("allowed_networks", list_of(STRING), [],
                        "private networks fetches may reach anyway (CIDR, e.g. "
                        "`10.1.2.0/24`)"),
                Setting("model", or_null(STRING), None,
                        "the model that answers `web_fetch`'s prompt (null: the session's)"),
                Setting("search_backend", or_null(STRING), None,
                        "the search backend `web_search` uses (null: the first registered)"),
                Setting("searxng_url", or_null(STRING), None,
                        "the base URL of a SearXNG-style search API (`/search?format=json`)"),
                Setting("max_results", whole(1), 8, "results `web_search` shows"),
            )),
            Section("mcp", "warn", (
                Setting("enabled", BOOL, True, "MCP servers' tools (`mcp__<server>__<tool>`; "
                        f"{docs_url('mcp')})"),
                Setting("startup_timeout", seconds(above_zero=True), 30.0,
                        "seconds a server may take to start and list its tools (the variable "
                        "`MCP_TIMEOUT`, in ms as in Claude Code, wins)"),
                Setting("tool_timeout", seconds(above_zero=True), 600.0,
                        "seconds one MCP tool call may take (the variable `MCP_TOOL_TIMEOUT`, "
                        "in ms, wins)"),
                Setting("max_result_chars", whole(1), 100_000,
                        "characters of a tool result's text kept before it is cut"),
            )),
            Section("init", "warn", (
                Setting("enabled", BOOL, True, "the `/init` command (writes AGENTS.md)"),
            )),
            Section("memory", "warn", (
                Setting("enabled", BOOL, True, "the `memory` tool and the memory index in the "
                        "system prompt"),
                Setting("index_max_entries", whole(1), 50,
                        "memories listed by name in the system prompt at most"),
                Setting("index_max_bytes", whole(512), 4096,
                        "bytes of the memory index in the system prompt at most"),
                Setting("batch", BOOL, False, "at session end, a side request proposes memory "
                        "updates, applied unless a memory changed on disk meanwhile"),
                Setting("batch_model", or_null(STRING), None,
                        "the model that proposes memory updates (null: the session's model)"),
                Setting("batch_timeout", seconds(above_zero=True), 60.0,
                        "seconds the memory batch's side request may take"),
            )),
            Section("tool_hint", "warn", (
                Setting("enabled", BOOL, True, "a call to an unknown tool is told the closest "
                        "names and which disabled plugin provides it"),
            )),
            Section("context_guard", "warn", (
                Setting("enabled", BOOL, True, "refuse a model request over the ceiling "
                        "(`max_tokens` x `ratio`)"),
                Setting("max_tokens", or_null(whole(1)), None,
                        "the context size the ceiling is a share of (null: the model's "
                        "context window from the catalog)"),
                Setting("ratio", FRACTION, 0.95,
                        "the share of `max_tokens` a request may hold (doubled while a "
                        "hand-off runs)"),
            )),
            Section("handoff", "warn", (
                Setting("enabled", BOOL, True, "hand-off documents and migration (the soft "
                        "refusal of other writes wraps `write` and `edit`, and guards `bash` "
                        "lines that delete or move files)"),
                Setting("executor", one_of("self", "summary"), "self",
                        "who writes the document: the agent with its tools, or one side "
                        "request without tools"),
                Setting("directory", STRING, ".zpi/handoffs",
                        "where hand-off documents go, relative to the working directory"),
            )),
            Section("auto_migrate", "warn", (
                Setting("enabled", BOOL, False, "hand off and migrate by itself at the end "
                        "of a run past the threshold"),
                Setting("threshold", FRACTION, 0.8,
                        "the share of the context size (`context_guard.max_tokens`, else "
                        "the model's window) past which it acts"),
                Setting("executor", one_of("self", "summary"), "self",
                        "the hand-off executor it uses"),
                Setting("strategy", one_of("omit", "prune"), "omit",
                        "how it migrates: `omit` keeps an outline of the old records, "
                        "`prune` drops them from the context"),
            )),
            Section("files", "warn", (
                Setting("enabled", BOOL, True, "`inspect_file`, `batch_edit`, "
                        "`download_file`, `view_image` and `generate_image`"),
                Setting("shell_tools", BOOL, False, "also `mkdir`, `rm`, `rename`, `copy`, "
                        "`exist` and `sleep`, which a coding session does with `bash`"),
                Setting("download_max_bytes", whole(1), 50 * MIB,
                        "the largest file `download_file` writes"),
                Setting("download_timeout_seconds", seconds(above_zero=True), 120.0,
                        "the most one download may take, redirects included"),
                Setting("max_sleep_seconds", seconds(above_zero=True), 300.0,
                        "the longest `sleep` a call may ask for"),
                Setting("image_model", or_null(STRING), None, "the model `generate_image` "
                        "asks (null: no `generate_image` tool)"),
                Setting("image_base_url", STRING, "https://api.openai.com/v1",
                        "the OpenAI-compatible API whose `/images/generations` draws them"),
                Setting("image_api_key_env", STRING, "OPENAI_API_KEY",
                        "the variable holding that API's key"),
            )),
            Section("search", "warn", (
                Setting("enabled", BOOL, True, "the `glob`, `grep` and `ls` tools"),
                Setting("ripgrep", one_of("auto", "off"), "auto", "grep through ripgrep "
                        "when `rg` is on PATH (auto) or always in pure Python (off)"),
            )),
        ), docs_url("builtins")),
    )),
    Section("permissions", "drop", (
        Setting("mode", one_of("default", "ask", "plan", "bypass"), "default",
                "permission mode (a project file may not choose `bypass`; for the CLI "
                "`default` asks before edits and commands)"),
        Setting("allow", list_of(STRING), [], "rules that allow calls"),
        Setting("deny", list_of(STRING), [], "rules that deny calls"),
        Setting("ask", list_of(STRING), [], "rules that ask first"),
        Setting("additional_directories", list_of(STRING), [],
                "more workspace roots for the file tools"),
    ), docs_url("permissions")),
    Section("hooks", "drop", (
        Setting("timeout", or_null(seconds(above_zero=True)), 60.0,
                "seconds one hook implementation may take (null: no budget)"),
        Setting("timeouts", OBJECT, {}, "budgets per hook or per plugin"),
        Setting("on_error", or_null(one_of("fail-open", "fail-closed", "raise")), None,
                "error policy for every hook (null: each hook's default)"),
        Setting("policies", OBJECT, {}, "error policies per hook or per plugin"),
        Setting("max_stop_continuations", whole(0), 8,
                "how many times `zpi_stop` hooks may continue a run in a row"),
    ), docs_url("hooks", "time-budgets-and-error-policies")),
    Section("compat", "keep", (
        Section("claude", "warn", (
            Setting("plugin_dirs", list_of(STRING), [], "Claude Code plugin folders to load"),
            Setting("use_installed", BOOL, False, "also load the plugins Claude Code installed"),
            Setting("settings_sources", list_of(one_of("user", "project", "local")), [],
                    "Claude settings files whose hooks run (user settings only; a project's "
                    "files run once the project is trusted)"),
            Setting("read_permissions", BOOL, True,
                    "apply the permissions of Claude's settings files (user settings only; a "
                    "project's allow rules and directories once the project is trusted)"),
            Setting("plugins", objects_by_name("{\"options\": {...}}"), {},
                    "options per Claude plugin"),
            Setting("hook_timeout", or_null(seconds(above_zero=True)), None,
                    "default seconds for a hook handler (null: the engine's default)"),
        ), docs_url("claude-plugins")),
        Section("zcode", "warn", (
            Setting("plugin_dirs", list_of(STRING), [], "ZCode plugin folders to load"),
            Setting("use_installed", BOOL, False,
                    "also load the plugins ZCode installed and enabled"),
            Setting("plugins", objects_by_name("{\"options\": {...}}"), {},
                    "options per ZCode plugin"),
            Setting("hook_timeout", or_null(seconds(above_zero=True)), None,
                    "default seconds for a hook handler (null: ZCode's 60 s)"),
        ), docs_url("zcode-plugins")),
    ), "settings of the compat adapters"),
    Section("secrets", "warn", (
        Setting("pass_to_commands", PASS_SECRETS, False,
                "which provider key variables bash and hook commands get: false (none), true "
                "(all) or a list of variable names (user settings only)"),
    ), docs_url("permissions", "secrets")),
))


def settings_table(section: Section = SCHEMA, prefix: str = "") -> Iterator[tuple[str, Setting]]:
    """Every known key as (dotted path, setting), in schema order (docs, tests)."""
    for child in section.children:
        path = f"{prefix}{child.name}"
        if isinstance(child, Section):
            yield from settings_table(child, path + ".")
        else:
            yield path, child


def find(path: str) -> Setting | Section | None:
    """The schema node at a dotted path, or None."""
    node: Setting | Section = SCHEMA
    for part in path.split("."):
        if not isinstance(node, Section):
            return None
        found = next((c for c in node.children if c.name == part), None)
        if found is None:
            return None
        node = found
    return node


def lists_add(path: str) -> bool:
    """Whether the list at a dotted path is concatenated across settings files (every list
    but a :class:`Setting` marked ``replace``; plugins' own keys included)."""
    node = find(path)
    return not (isinstance(node, Setting) and node.lists == "replace")


def default(path: str) -> Any:
    """The default of a known key (a KeyError names an unknown one)."""
    node = find(path)
    if not isinstance(node, Setting):
        raise KeyError(f"{path} is not a known setting")
    return node.default


# ------------------------------------------------------------------------------ validating


class Finding(NamedTuple):
    """One key of one file that was dropped (``ignored``) or merely looks wrong."""

    key: str
    message: str
    ignored: bool


def check_layer(data: Mapping[str, Any]) -> tuple[dict[str, Any], list[Finding]]:
    """``data`` (one file's object) without the values of the wrong type, and what was found.
    Never raises for any JSON value."""
    findings: list[Finding] = []
    return _check_section(SCHEMA, data, "", findings), findings


def _check_section(section: Section, data: Mapping[str, Any], prefix: str,
                   findings: list[Finding]) -> dict[str, Any]:
    known = {child.name: child for child in section.children}
    clean: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        node = known.get(key)
        if node is None:
            if section.unknown != "keep":
                findings.append(_unknown(section, prefix, key, list(known)))
            if section.unknown != "drop":
                clean[key] = value
        elif isinstance(node, Section):
            if isinstance(value, Mapping):
                clean[key] = _check_section(node, value, path + ".", findings)
            else:
                findings.append(Finding(path, f"must be an object, got {_brief(value)}", True))
        elif node.kind.accepts(value):
            clean[key] = value
        else:
            findings.append(Finding(path, f"must be {node.kind.expected}, got {_brief(value)}",
                                    True))
    return clean


def _unknown(section: Section, prefix: str, key: str, known: list[str]) -> Finding:
    import difflib  # only for an unknown key

    close = difflib.get_close_matches(key, known, n=1)
    hint = f"did you mean {prefix}{close[0]}?" if close else f"known: {', '.join(known)}"
    return Finding(f"{prefix}{key}", f"is not a known setting ({hint})",
                   section.unknown == "drop")


def _brief(value: Any) -> str:
    """The wrong value, short. Objects and lists are described, not echoed: they may hold
    a key (``api_key``) that must not reach a warning."""
    if isinstance(value, Mapping):
        keys = ", ".join(str(k) for k in list(value)[:5])
        return f"an object with keys {keys[:60]}" if value else "an empty object"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    kind = "a string" if isinstance(value, str) else "the number"
    text = json.dumps(value, ensure_ascii=True) if isinstance(value, str) else repr(value)
    return f"{kind} {text if len(text) <= 60 else text[:59] + '…'}"
