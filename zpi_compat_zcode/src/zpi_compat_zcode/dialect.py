"""ZCode's dialect of the Claude plugin format, as data for ``zpi_compat_claude``'s engine.

Every entry is a documented ZCode behaviour (``shared/REFERENCE.md``, "ZCode plugins"); the
engine reads the fields, so this module is all that makes a ZCode folder behave as ZCode runs
it. Where ZCode's documentation says nothing, the Claude behaviour stays (see
``docs/zcode-plugins.md``, "Assumptions").
"""

from __future__ import annotations

import re

from zpi_compat_claude.dialect import Dialect, PersonalDir

#: ZCode's hook events: Claude's first seven (no SessionEnd, compaction or sub-agent events)
ZCODE_EVENTS: tuple[str, ...] = (
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse",
    "PostToolUseFailure", "Stop",
)

#: bytes of a hook's stdout ZCode reads (``maxOutputBytes`` in a config file overrides it)
OUTPUT_CAP = 32 * 1024

ZCODE = Dialect(
    name="zcode",
    product="ZCode",
    manifest_paths=(".zcode-plugin/plugin.json", ".claude-plugin/plugin.json"),
    plugin_name=re.compile(r"[a-z0-9][a-z0-9._-]{0,127}"),
    plugin_name_rule=("lowercase letters, digits, '.', '_' and '-', starting with a letter or "
                      "digit, at most 128 characters"),
    default_version="0.0.0",
    bare_paths=True,
    author_text=True,
    extra_fields={"displayName_i18n": ("object",), "description_i18n": ("object",),
                  "icon": ("text",)},
    prefixes=("ZCODE", "CLAUDE"),
    identity_env=True,
    personal_dirs=(
        PersonalDir("user", "~", "", ("skills", "commands"), "~/.zcode"),
        PersonalDir("user-agents", "~user", ".agents", ("skills",), "~/.agents"),
        PersonalDir("project", ".", ".zcode", ("skills", "commands"), ".zcode"),
        PersonalDir("project-agents", ".", ".agents", ("skills", "commands"), ".agents"),
    ),
    nested_command_names=True,
    events=ZCODE_EVENTS,
    handler_types=frozenset({"command", "process"}),
    handler_fields=frozenset({"args", "timeoutMs", "enabled"}),
    default_timeout_s=60.0,
    output_cap=OUTPUT_CAP,
    exact_matcher=re.compile(r"[A-Za-z0-9_|]*"),
    matcher_aliases={"Agent": "Task", "Task": "Agent"},
    camel_case_input=True,
    response_text=True,
    plain_stdout_context=frozenset(),
    top_level_context=True,
    prompt_continue_blocks=True,
    replaces_tool_output=False,
    max_stop_continuations=3,
    env_file=False,
)
