"""A dialect of the Claude plugin format: what differs between Claude Code and a host that
reads the same folders its own way (ZCode), as data the shared engine consults.

The folder loader, the manifest reader, the hook parser and the hook engine take a
:class:`Dialect` and never test which product they serve; ``CLAUDE`` is the default everywhere,
so callers written for Claude Code alone keep working. ``zpi_compat_zcode`` supplies ``ZCODE``.
Light to import: standard library and attrs only (``--list-plugins`` passes through here).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .records import field, record

#: Claude Code's events, in the order Claude documents them.
CLAUDE_EVENTS: tuple[str, ...] = (
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse",
    "PostToolUseFailure", "Stop", "SubagentStart", "SubagentStop", "PreCompact", "PostCompact",
    "Notification", "SessionEnd",
)


@record
class PersonalDir:
    """A folder of the user's or the project's own skills and commands (``~/.claude``),
    loaded in place as plugin ``<dialect>:<kind>``, not namespaced."""

    kind: str
    #: ``~`` is the dialect's home folder, ``~user`` the user's home, ``.`` the project
    base: str
    path: str
    #: ``skills``, ``commands``, ``agents`` folders; ``context``: its ``CLAUDE.md`` (Claude
    #: Code's user memory ``~/.claude/CLAUDE.md``, the project's ``.claude/CLAUDE.md``)
    parts: tuple[str, ...]
    #: how messages name it (``~/.claude``)
    label: str


@record
class Dialect:
    """Everything the shared engine does differently per product. Field groups: naming and
    folders, the manifest, variables, hooks (parsing, input, output, limits)."""

    #: prefix of plugin names (``claude:<name>``), the record's source, the cache sub-folder
    name: str
    #: the product, in messages ("Claude Code")
    product: str
    # ------------------------------------------------------------------ the manifest
    #: where a folder's manifest may be, tried in order
    manifest_paths: tuple[str, ...] = (".claude-plugin/plugin.json",)
    #: what a manifest ``name`` must match, and the rule in words for the error
    plugin_name: re.Pattern[str] = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
    plugin_name_rule: str = "kebab-case (lowercase letters, digits and single hyphens)"
    #: the version of a plugin whose manifest gives none
    default_version: str | None = None
    #: component paths may omit ``./`` (they must stay inside the plugin either way)
    bare_paths: bool = False
    #: ``author`` may be a plain string
    author_text: bool = False
    #: manifest fields this dialect adds to Claude's: name -> shapes ("text", "list", "object")
    extra_fields: Mapping[str, tuple[str, ...]] = field(factory=dict)
    # ------------------------------------------------------------------ variables
    #: ``${<P>_PLUGIN_ROOT}``, ``${<P>_PLUGIN_DATA}``, ``${<P>_PROJECT_DIR}`` ... for each prefix,
    #: in text and in the hook environment (the first is the dialect's own)
    prefixes: tuple[str, ...] = ("CLAUDE",)
    #: hooks also get ``<P>_PLUGIN_ID`` and ``<P>_PLUGIN_NAME``
    identity_env: bool = False
    # ------------------------------------------------------------------ personal folders
    personal_dirs: tuple[PersonalDir, ...] = ()
    #: ``commands/a/b.md`` is ``/a:b`` (else ``/b``: sub-folders only organise)
    nested_command_names: bool = False
    # ------------------------------------------------------------------ hooks
    events: tuple[str, ...] = CLAUDE_EVENTS
    #: handler ``type`` values that run; ``process`` is an argv without a shell
    handler_types: frozenset[str] = frozenset({"command"})
    #: handler fields the dialect adds (``args``, ``timeoutMs``, ``enabled``)
    handler_fields: frozenset[str] = frozenset()
    #: seconds a handler may run when neither it nor a setting says otherwise
    default_timeout_s: float = 60.0
    #: bytes of a handler's stdout that are used (None: the runner's capture cap)
    output_cap: int | None = None
    #: a matcher made only of these characters is a list of exact names
    exact_matcher: re.Pattern[str] = re.compile(r"[A-Za-z0-9_ ,|-]*")
    #: tool names a matcher treats as one (``Agent`` and ``Task``)
    matcher_aliases: Mapping[str, str] = field(factory=dict)
    #: the event JSON has a camelCase twin of each snake_case field
    camel_case_input: bool = False
    #: Stop input also has ``responseText`` (the last assistant message)
    response_text: bool = False
    #: events whose plain (non-JSON) stdout on exit 0 becomes context for the model
    plain_stdout_context: frozenset[str] = frozenset({"SessionStart", "UserPromptSubmit"})
    #: ``additionalContext`` / ``additional_context`` may be top-level fields of the answer
    top_level_context: bool = False
    #: UserPromptSubmit ``continue: false`` blocks the prompt (Claude: stops the session)
    prompt_continue_blocks: bool = False
    #: PostToolUse ``updatedToolOutput`` replaces what the model sees
    replaces_tool_output: bool = True
    #: most consecutive Stop continuations the dialect's hooks may force (None: the host's)
    max_stop_continuations: int | None = None
    #: SessionStart handlers get ``CLAUDE_ENV_FILE``
    env_file: bool = True
    #: the matching handlers of one event run one after another in configuration order
    #: (ZCode: user, workspace, then plugin hooks) rather than in parallel (Claude Code)
    sequential_handlers: bool = False
    #: event input fields of Claude Code 2.1 the dialect sends: ``prompt_id`` (after
    #: SessionStart), ``duration_ms`` (PostToolUse, PostToolUseFailure), ``background_tasks``
    #: (Stop), ``permission_suggestions`` (PermissionRequest)
    input_extras: frozenset[str] = frozenset()
    #: variables every handler gets (``CLAUDECODE=1``: scripts test it)
    marker_env: Mapping[str, str] = field(factory=dict)
    #: the next input after a Stop or SubagentStop hook blocked (``{event}``, ``{reason}``:
    #: the hooks' reasons)
    stop_feedback: str = "{reason}"
    #: the reason the model reads when a PreToolUse handler exits 2 (``{event}``,
    #: ``{tool}``: the tool's name as hooks see it, ``{reason}``: its stderr)
    exit2_deny: str = "{reason}"
    #: PostToolUse ``updatedToolOutput`` applies to MCP tools (``mcp__*``) only
    output_replacement_mcp_only: bool = False
    #: a first line of stdout ``{"async": true, "asyncTimeout": ms}`` sends the handler to
    #: the background (its later output is its answer)
    async_answers: bool = False

    def plugin(self, name: str) -> str:
        """The registered name of plugin ``name``: ``claude:name``."""
        return f"{self.name}:{name}"

    def variables(self, suffix: str, value: str) -> dict[str, str]:
        """``{<P>_<suffix>: value}`` for every prefix (``PLUGIN_ROOT`` -> two names in ZCode)."""
        return {f"{prefix}_{suffix}": value for prefix in self.prefixes}

    @property
    def manifest_path(self) -> str:
        """The dialect's own manifest location (messages suggest creating this one)."""
        return self.manifest_paths[0]


def _former_spellings() -> dict[str, str]:
    """A matcher's name for a tool -> the name hooks see it by, and back: Claude Code's former
    spellings (``BashOutput``, ``KillShell``, ``KillBash``, ``Agent``) match what this host
    shows hooks (``TaskOutput``, ``TaskStop``, ``Task``: :mod:`.hooks.toolnames`), so a
    plugin written for either version of Claude Code matches the same calls. ``MultiEdit``
    is its own tool to hooks (the SDK's), not an alias of ``Edit``."""
    from zpi_host.permissions.toolnames import CLAUDE_SPELLINGS

    out: dict[str, str] = {}
    for host, spellings in CLAUDE_SPELLINGS.items():
        seen = "Task" if host == "task" else spellings[0]  # hooks.toolnames.CLAUDE_NAMES
        others = [s for s in spellings if s not in (seen, "MultiEdit")]
        for other in others:
            out[other] = seen
        if others:
            out[seen] = others[0]
    return out


CLAUDE = Dialect(
    name="claude",
    product="Claude Code",
    handler_types=frozenset({"command", "http", "prompt"}),
    input_extras=frozenset({"prompt_id", "duration_ms", "background_tasks",
                            "permission_suggestions"}),
    marker_env={"CLAUDECODE": "1"},
    stop_feedback="{event} hook feedback: {reason}",
    exit2_deny="{event}:{tool} hook error: {reason}",
    output_replacement_mcp_only=True,
    async_answers=True,
    matcher_aliases=_former_spellings(),
    personal_dirs=(
        PersonalDir("user", "~", "", ("skills", "commands", "agents", "context"), "~/.claude"),
        PersonalDir("project", ".", ".claude", ("skills", "commands", "agents", "context"),
                    ".claude"),
    ),
)
