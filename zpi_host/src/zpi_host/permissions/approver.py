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


def approval_question(name: str, arguments: dict[str, Any], context: PermissionContext
                      ) -> tuple[str, str]:
    """What the person is asked: the call exactly as it will run (every line of a command,
    uncut, each line indented under the tool's name, its control characters made visible),
    what it would change (a write's or an edit's diff), why it needs approval; then the
    prompt line."""
    from .results import input_text

    rules = ", ".join(context.suggestions) or name
    lines = [f"\n{name}:", *_indented(input_text(name, arguments))]
    if context.preview:
        lines += _indented(context.preview)
    lines.append(f"  needs approval: {for_terminal(context.reason, exact=True)}")
    return "\n".join(lines), PROMPT.format(rules=for_terminal(rules, exact=True))


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
        about, prompt = approval_question(name, arguments, context)
        # the call as it will run: a control character in it must not redraw the question
        stream_out.write(shown(f"{about}\n", stream_out, exact=True) + prompt)
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
