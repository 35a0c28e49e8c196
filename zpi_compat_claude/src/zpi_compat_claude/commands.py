"""Claude command files as kernel handler commands: ``/plugin:name args`` expanded as Claude
Code expands it.

Order, as in Claude Code: variables (``${CLAUDE_PLUGIN_ROOT}``, ``${CLAUDE_PLUGIN_DATA}``,
``${CLAUDE_PROJECT_DIR}``, ``${CLAUDE_SESSION_ID}``, ``${user_config.KEY}``), then the argument
placeholders (``$ARGUMENTS``, ``$ARGUMENTS[N]``, ``$N``: the kernel's ``expand_template``), then
one pass over the text for ```` ```! ```` blocks and `` !`cmd` `` (run with the session's bash
tool, so permission rules, hooks and the journal apply, and the command's ``allowed-tools``
allow what they name; the output replaces the block) and ``@path`` (a file in the project,
included in place). Text inserted by a step is not scanned again by a later one, except that
arguments may hold ``@path`` or `` !`cmd` `` as they do in Claude Code (the user typed them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .records import field, record

# The patterns are compiled on first use (``re`` keeps them): loading a plugin's commands,
# which ``--list-plugins`` does, needs neither when no text holds a variable.
#: ``${NAME}`` variables a command body may use (``CLAUDE_``, or a dialect's own prefix such
#: as ``ZCODE_``; only names the caller gives values for are replaced).
_VARIABLE = (r"\$\{([A-Z][A-Z0-9]*_(?:PLUGIN_ROOT|PLUGIN_DATA|PROJECT_DIR|SESSION_ID|SKILL_DIR)"
             r"|user_config\.[A-Za-z_][A-Za-z0-9_]*)\}")
#: a ```` ```! ```` fenced block (a script: its output replaces the whole block), then
#: `` !`cmd` `` and ``@path``, each at the start of a line or after whitespace.
_INLINE = (r"(?m:^```![ \t]*\n(?P<script>(?s:.*?))^```[ \t]*$)"
           r"|(?<!\S)(?:!`(?P<command>[^`\n]+)`|@(?P<path>[^\s`]+))")
_TRAILING = ".,;:!?)]}'\""
#: An included file longer than this is cut, with a note saying how to read the rest.
INCLUDE_LIMIT = 100_000

Value = str | Callable[[], str]


def substitute(text: str, values: Mapping[str, Value]) -> str:
    """Replace the ``${...}`` variables that ``values`` knows (a callable value is computed
    when first needed); unknown ones stay as written."""

    def fill(match: re.Match[str]) -> str:
        value = values.get(match.group(1))
        if value is None:
            return match.group(0)
        return value() if callable(value) else value

    return re.sub(_VARIABLE, fill, text) if "${" in text else text


def format_option(value: Any) -> str:
    """An option value as text for ``${user_config.KEY}`` and ``CLAUDE_PLUGIN_OPTION_KEY``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(format_option(item) for item in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def include_file(token: str, cwd: Path) -> tuple[str, str] | None:
    """``@token`` as (included block, text left after it), or None when it names no readable
    text file inside the project (then it stays as written). Trailing punctuation
    (``see @a.py.``) is tried without."""
    candidates = [token]
    stripped = token.rstrip(_TRAILING)
    if stripped and stripped != token:
        candidates.append(stripped)
    root = cwd.resolve()
    for candidate in candidates:
        path = (cwd / Path(candidate).expanduser()).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            continue
        try:
            data = path.read_bytes()
            text = data[:INCLUDE_LIMIT].decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        note = ""
        if len(data) > INCLUDE_LIMIT:
            note = (f"\n[... cut at {INCLUDE_LIMIT} of {len(data)} bytes; read the file for the "
                    "rest]")
        block = f'<file path="{candidate}">\n{text.rstrip()}{note}\n</file>'
        return block, token[len(candidate):]
    return None


async def expand_inline(text: str, context: Any, cwd: Path) -> str:
    """One pass: a ```` ```! ```` block and `` !`cmd` `` become the command's output
    (through ``context.run_bash``), ``@path`` the file's content."""
    parts: list[str] = []
    position = 0
    for match in re.finditer(_INLINE, text):
        parts.append(text[position:match.start()])
        position = match.end()
        command = match.group("command")
        if command is None and match.group("script") is not None:
            command = match.group("script").rstrip("\n")
        if command is not None:
            parts.append((await context.run_bash(command)).rstrip("\n"))
            continue
        included = include_file(match.group("path"), cwd)
        parts.append(match.group(0) if included is None else included[0] + included[1])
    parts.append(text[position:])
    return "".join(parts)


@record
class CommandHandler:
    """The handler of one Claude command: holds the body as it was when the plugin loaded
    (the session's frozen text) and the plugin's variables."""

    name: str
    body: str
    #: plugin-level variables (root, data dir, user_config.KEY); session ones are added per call
    variables: Mapping[str, Value] = field(factory=dict, eq=False)
    #: the dialect's variable prefixes (``CLAUDE``; ZCode: ``ZCODE`` and ``CLAUDE``)
    prefixes: tuple[str, ...] = ("CLAUDE",)

    async def __call__(self, arguments: str, context: Any) -> str:
        from zpi_host.resources import expand_template

        session = context.session
        cwd = Path(session.cwd)
        values: dict[str, Value] = dict(self.variables)
        for prefix in self.prefixes:
            values[f"{prefix}_PROJECT_DIR"] = str(cwd)
            values[f"{prefix}_SESSION_ID"] = str(session.session_id)
        text = substitute(self.body, values)
        text = expand_template(text, arguments)
        return await expand_inline(text, context, cwd)
