"""An approver for a person at a terminal: ``interactive=True`` without ``can_use_tool``.

The question goes to stderr (so stdout stays the agent's answer) and one line is read from
stdin; tests pass other streams. Questions are asked one at a time even when read-only calls run in
parallel. End of input counts as no.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from ..support.terminal_text import for_terminal, shown
from .results import CanUseTool, PermissionAllow, PermissionContext, PermissionDeny

PROMPT = "allow? [y]es, [a]lways ({rules}), [n]o, or type why not: "


#: the colours of a diff's lines in the question: added, removed, hunk header
DIFF_COLOURS = {"+": "\x1b[32m", "-": "\x1b[31m", "@": "\x1b[36m"}


def approval_question(name: str, arguments: dict[str, Any], context: PermissionContext,
                      *, colour: bool = False) -> tuple[str, str]:
    """What the person is asked: the call exactly as it will run (every line of a command,
    uncut, each line indented under the tool's name, its control characters made visible),
    what it would change (a write's or an edit's diff, coloured with ``colour``), why it
    needs approval; then the prompt line. Every part has its control characters shown
    already: the only escapes in it are the diff's colours."""
    from .results import input_text

    rules = ", ".join(context.suggestions) or name
    lines = [f"\n{for_terminal(name, exact=True)}:", *_indented(input_text(name, arguments))]
    if context.preview:
        preview = _indented(context.preview)
        lines += [preview[0], *(_coloured(line) if colour else line for line in preview[1:])]
    lines.append(f"  needs approval: {for_terminal(context.reason, exact=True)}")
    return "\n".join(lines), PROMPT.format(rules=for_terminal(rules, exact=True))


def _coloured(line: str) -> str:
    """A diff line of the preview in its colour (the file headers stay plain)."""
    body = line[4:]
    if body.startswith(("+++ ", "--- ")) or body[:1] not in DIFF_COLOURS:
        return line
    return f"    {DIFF_COLOURS[body[:1]]}{body}\x1b[0m"


def wants_colour(stream: Any) -> bool:
    """Colours on a terminal, never with NO_COLOR set or a dumb terminal."""
    import os

    try:
        terminal = bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
    return terminal and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _indented(text: str) -> list[str]:
    """``text``'s lines (split at line feeds only, as a shell reads them), each indented and
    with every control character shown (a CR, an ESC, a bidi override)."""
    if text.endswith("\n"):
        text = text[:-1]
    return [f"    {for_terminal(line, exact=True)}" for line in text.split("\n")]


def answer_decision(answer: str | None, name: str, context: PermissionContext
                    ) -> PermissionAllow | PermissionDeny:
    """The decision a typed answer means (None: no answer, end of input)."""
    if answer is None:
        return PermissionDeny("denied: no answer from the terminal (end of input)")
    word = answer.strip().lower()
    if word in ("y", "yes"):
        return PermissionAllow()
    if word in ("a", "always"):
        return PermissionAllow(add_rules=tuple(context.suggestions) or (name,))
    if word in ("", "n", "no"):
        return PermissionDeny("denied by the user")
    return PermissionDeny(f"denied by the user: {answer.strip()}")


def terminal_approver(stdin: TextIO | None = None, stdout: TextIO | None = None) -> CanUseTool:
    """A ``can_use_tool`` that asks on the terminal: ``y`` allows once, ``a`` allows and adds
    the suggested rules for the session, ``n``/empty/EOF denies, other text denies with it as
    the message to the model."""
    import anyio

    lock = anyio.Lock()

    def ask(name: str, arguments: dict[str, Any], context: PermissionContext) -> str | None:
        stream_in = stdin if stdin is not None else sys.stdin
        stream_out = stdout if stdout is not None else sys.stderr
        colour = wants_colour(stream_out)
        about, prompt = approval_question(name, arguments, context, colour=colour)
        # the call as it will run: a control character in it must not redraw the question
        # (approval_question shows them; the diff's colours are its own)
        stream_out.write((f"{about}\n" if colour else shown(f"{about}\n", stream_out,
                                                          exact=True)) + prompt)
        stream_out.flush()
        line = stream_in.readline()
        return line.strip() if line else None

    async def approve(name: str, arguments: dict[str, Any],
                      context: PermissionContext) -> PermissionAllow | PermissionDeny:
        async with lock:
            answer = await anyio.to_thread.run_sync(ask, name, arguments, context,
                                                    abandon_on_cancel=True)
        return answer_decision(answer, name, context)

    return approve
