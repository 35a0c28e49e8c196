"""What the live display says about a finished tool call: its outcome in words that say what
they count, the lines shown under it (a coloured diff for edits and writes, the end of a
command's output, the last lines of a failed command's output), and the footer of a run.

Pure functions of a tool result and a colour switch, so the display (:mod:`.live`) only
places lines.
"""

from __future__ import annotations

import re
from typing import Any

from ..support.diffs import fold_diff
from ..support.terminal_text import for_terminal

RESET, BOLD, DIM = "\x1b[0m", "\x1b[1m", "\x1b[2m"
RED, GREEN, YELLOW, CYAN = "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m"
#: output lines shown under a finished command
TAIL_LINES = 3
#: output lines shown under a failed command (its stderr is among them)
ERROR_TAIL_LINES = 6
#: diff lines shown under an edit or a write before the rest is folded into a count
DIFF_LINES = 24
#: the line a capture puts where it left output out (tools/output.py: _marker)
_OMITTED = r"^\[\.\.\. \d+ bytes omitted; "  # compiled on first use (re's cache)
#: the tools whose result details carry a diff of the file they changed
DIFF_TOOLS = ("edit", "write")


def paint(text: str, style: str, colour: bool) -> str:
    return f"{style}{text}{RESET}" if colour and text else text


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def count_lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def outcome(result: Any) -> str:
    """What a successful call gave, counted in lines (what a person reads), and for output
    that was cut, how much of it the model was given."""
    details = result.details if isinstance(result.details, dict) else {}
    name = result.tool_name
    if name in DIFF_TOOLS and isinstance(details.get("diff"), str):
        added, removed = diff_counts(details["diff"])
        if name == "write" and details.get("created"):
            return f"new file, {plural(added, 'line')}"
        return f"+{added} -{removed} lines"
    text = text_of(result)
    total = details.get("total_lines")
    if name == "bash" and isinstance(total, int):
        if text.strip() == "(no output)" and total == 0:
            return "no output"
        if re.search(_OMITTED, text, re.MULTILINE):  # the middle was cut: the model has both ends
            kept = count_lines(text) - 1  # the marker's line is not output
            return f"{plural(total, 'line')}, kept {kept} (its start and end)"
        return plural(total, "line")
    if not text:
        return "no output"
    return plural(count_lines(text), "line")


def diff_counts(diff: str) -> tuple[int, int]:
    lines = diff.split("\n")[2:]
    return (sum(1 for line in lines if line.startswith("+")),
            sum(1 for line in lines if line.startswith("-")))


def diff_lines(diff: str, colour: bool, width: int) -> list[str]:
    """A unified diff, headers dropped, coloured by line kind and folded when long."""
    body = "\n".join(diff.removesuffix("\n").split("\n")[2:])
    out = []
    for line in fold_diff(body + "\n", DIFF_LINES).removesuffix("\n").split("\n"):
        line = for_terminal(line)[: max(width - 4, 20)]
        style = (GREEN if line.startswith("+") else RED if line.startswith("-")
                 else CYAN if line.startswith("@@") else DIM)
        out.append("  " + paint(line, style, colour))
    return out


def output_tail(text: str, most: int, width: int) -> list[str]:
    """The last ``most`` non-blank lines of ``text``, each cut to the width."""
    lines = [line for line in for_terminal(text).splitlines() if line.strip()][-most:]
    return ["  │ " + _cut(line, width - 5) for line in lines]


def error_summary(result: Any) -> tuple[str, list[str]]:
    """A failed call's outcome (``exit code 2``, or the error's first line, whole) and the
    lines under it: the last lines of a failed command's output (its stderr with it)."""
    text = for_terminal(text_of(result) or "error").strip() or "error"
    first, _, rest = text.partition("\n")
    details = result.details if isinstance(result.details, dict) else {}
    if result.tool_name == "bash" and "exit_code" in details:
        code = details.get("exit_code")
        stderr = details.get("stderr")
        shown = stderr if isinstance(stderr, str) and stderr.strip() else rest
        head = f"exit code {code}" if code is not None and first.startswith("Exit code") \
            else first
        return head, [line for line in shown.splitlines() if line.strip()][-ERROR_TAIL_LINES:]
    return f"error: {first}", []


def footer(result: Any) -> str:
    """``4 turns · 3770 in, 99 out tokens · $0.0123 · 2.4s`` (what the run cost)."""
    u = result.usage
    unpriced = " (some models unpriced)" if result.unpriced_models else ""
    return (f"{plural(result.num_turns, 'turn')} · {u.input_tokens} in, {u.output_tokens} out"
            f" tokens · ${result.total_cost_usd:.4f}{unpriced} · "
            f"{result.duration_ms / 1000:.1f}s")


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + "…"
