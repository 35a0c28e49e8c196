"""The live display of ``zpi-host run`` in text mode on a terminal.

The answer streams to stdout as it arrives; the model's reasoning is collapsed, as Claude Code
shows it: while it streams the status line says "thinking", then one dim line on stderr
("✻ thinking… 120 words"), with the text itself under it, dimmed, with ``--verbose``. Every
tool call gets a status line on stderr (a
spinner, the tool, its key argument, the elapsed time and the last line of its output) that
becomes a one-line outcome when the call ends; retries and warnings get their own coloured
lines. Plain ANSI escapes, no library: a status line at the bottom and four colours are all it
needs, and it costs no import time (rich would add 30-60 ms and a dependency).

Text that comes from elsewhere (the model, a command's output, a plugin's message) goes through
:func:`~zpi_host.support.terminal_text.for_terminal` first: it must not drive the terminal.

Colours only when ``NO_COLOR`` is unset or empty (https://no-color.org); the display itself is
used only when stdout and stderr are both terminals and ``TERM`` is not ``dumb``
(:func:`wanted`).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping
from typing import Any, TextIO

from ..support.terminal_text import for_terminal

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK = 0.1  # seconds between two frames of the spinner
#: bash output lines shown under a finished call
TAIL_LINES = 3
#: arguments that say what a call is about, in order of preference
KEY_ARGUMENTS = ("command", "pattern", "path", "file_path", "url", "query", "description",
                 "prompt", "name")

RESET, BOLD, DIM = "\x1b[0m", "\x1b[1m", "\x1b[2m"
RED, GREEN, YELLOW, CYAN = "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m"
CLEAR_LINE = "\r\x1b[K"


def wanted(stdout: TextIO, stderr: TextIO, environ: Any = os.environ) -> bool:
    """Whether the live display fits: both streams are terminals that understand escapes."""
    return (_isatty(stdout) and _isatty(stderr)
            and environ.get("TERM", "") != "dumb")


def colours_wanted(stream: TextIO, environ: Any = os.environ) -> bool:
    """Colours only on a terminal, never with NO_COLOR set to anything."""
    return _isatty(stream) and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb"


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def key_argument(arguments: Any) -> str:
    """The one argument that says what a call does (bash's command, read's path, ...)."""
    if not isinstance(arguments, dict):
        return ""
    for key in KEY_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value
    return next((v for v in arguments.values() if isinstance(v, str) and v), "")


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + "…"


def size_of(result: Any) -> str:
    """A tool result's size: lines when it has several, else bytes."""
    text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if lines > 1:
        return f"{lines} lines"
    return f"{len(text.encode())} bytes"


def retry_text(event: Any) -> str:
    """``rate limited, retrying in 4 s, attempt 2 of 4``"""
    delay = f"{event.delay:.1f}".removesuffix(".0")
    return f"{event.reason}, retrying in {delay} s, attempt {event.attempt} of {event.attempts}"


def system_text(event: Any) -> str:
    """A ``system`` event (a message for the user from a plugin) as one line of text."""
    return f"{event.source}: {event.message}" if event.source else event.message


def task_text(event: Any) -> str:
    """``background task b1f0c2a9e (the dev server) exited with code 0``"""
    info = event.info
    return f"background task {info.task_id} ({info.description}) {info.summary}"


#: the todo tools (builtins:todos' ``todo_write``, the SDK's ``TodoWrite``) and each item's mark
TODO_TOOLS = ("todo_write", "TodoWrite")
TODO_MARKS = {"completed": "✓", "in_progress": "▶", "pending": "○"}


def todo_line(result: Any, limit: int = 400) -> str | None:
    """A todo call's list as one compact line (``todos 1/3: ✓ Plan · ▶ Writing tests · ○
    Docs``; an item in progress by its ``activeForm``), or None for another result."""
    details = getattr(result, "details", None)
    todos = details.get("newTodos") if isinstance(details, Mapping) else None
    if getattr(result, "tool_name", None) not in TODO_TOOLS or not isinstance(todos, list):
        return None
    items = [t for t in todos if isinstance(t, Mapping)]
    if not items:
        return "todos: (empty)"
    done = sum(1 for t in items if t.get("status") == "completed")
    shown = []
    for item in items:
        status = item.get("status")
        text = item.get("activeForm") if status == "in_progress" else item.get("content")
        shown.append(f"{TODO_MARKS.get(str(status), '?')} {for_terminal(str(text or ''))}")
    return one_line(f"todos {done}/{len(items)}: " + " · ".join(shown), limit)


def elapsed(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds < 60 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


class Call:
    """A tool call in flight."""

    def __init__(self, name: str, arguments: Any, now: float) -> None:
        # what the call will act on, shown exactly: a control character in it is visible
        self.name, self.started = name, now
        self.key = for_terminal(key_argument(arguments), exact=True)
        self.output = ""  # the most recent output (tool_update), for the tail

    def last_line(self) -> str:
        lines = [line for line in self.output.splitlines() if line.strip()]
        return lines[-1] if lines else ""


class LiveDisplay:
    """A session subscriber that draws the run on the terminal; ``animate`` turns the spinner
    until ``close``. Everything goes through ``_write`` so the cursor position is known: the
    status line is drawn only at the start of a line and cleared before anything else."""

    def __init__(self, out: TextIO, err: TextIO, *, colour: bool,
                 clock: Any = time.monotonic, verbose: bool = False) -> None:
        self.out, self.err, self.colour, self.clock = out, err, colour, clock
        self.verbose = verbose  # reasoning shown whole, not only its summary line
        self.thinking: list[str] = []  # the reasoning streamed since the last text or call
        self.calls: dict[str, Call] = {}
        self.waiting_since: float | None = None  # waiting for the model's first words
        self.at_line_start = True
        self.status_shown = False
        self.frame = 0
        self.streamed = ""  # the text streamed since the last turn began
        self.closed = False
        self.paused = 0  # > 0 while the terminal asks the user something

    # ------------------------------------------------------------------------ events

    def __call__(self, event: Any) -> None:
        handler = getattr(self, f"_on_{event.type}", None)
        if handler is not None:
            handler(event)
        self._draw_status()

    def _on_turn_start(self, event: Any) -> None:
        self.waiting_since = self.clock()
        self.streamed = ""

    def _on_reasoning_delta(self, event: Any) -> None:
        if self.waiting_since is None:  # the status line says "thinking" while it streams
            self.waiting_since = self.clock()
        if event.text:
            self.thinking.append(event.text)

    def _end_thinking(self) -> None:
        """The reasoning streamed so far, collapsed to one dim line (whole with verbose)."""
        if not self.thinking:
            return
        text, self.thinking = "".join(self.thinking), []
        words = len(text.split())
        self._line(self._paint(f"✻ thinking… {words} word{'s' if words != 1 else ''}", DIM))
        if self.verbose:
            for line in for_terminal(text).strip().splitlines():
                self._line(self._paint(f"  {line}", DIM))

    def _on_text_delta(self, event: Any) -> None:
        self._end_thinking()
        self.waiting_since = None
        if not event.text:
            return
        self._clear_status()
        self.out.write(for_terminal(event.text))
        self.out.flush()
        self.streamed += event.text
        self.at_line_start = event.text.endswith("\n")

    def _on_message_end(self, event: Any) -> None:
        self._end_thinking()
        self.waiting_since = None
        self._end_line()

    def _on_tool_start(self, event: Any) -> None:
        self._end_thinking()
        self.waiting_since = None
        self._end_line()
        self.calls[event.call_id] = Call(event.name, event.arguments, self.clock())

    def _on_tool_update(self, event: Any) -> None:
        call = self.calls.get(event.call_id)
        if call is not None:
            call.output = for_terminal(event.text)

    def _on_tool_end(self, event: Any) -> None:
        result = event.result
        call = self.calls.pop(result.call_id, None) or Call(result.tool_name, {}, self.clock())
        took = elapsed(self.clock() - call.started)
        if result.is_error:
            first = for_terminal(next((c.text for c in result.content
                                       if getattr(c, "type", "") == "text"), "error"))
            first_line = first.strip().splitlines()[0] if first.strip() else "error"
            mark, outcome = self._paint("✗", RED), f"error: {first_line}"
        else:
            mark, outcome = self._paint("✓", GREEN), size_of(result)
        width = self._width()
        tail = f" · {outcome} · {took}"
        # an error's first line is shown whole (it often ends with the fix); the call is cut
        room = max(width - 3 - (len(tail) if not result.is_error else len(took) + 3), 20)
        head = one_line(f"{call.name} {call.key}".rstrip(), room)
        lines = [f"{mark} {self._paint(call.name, BOLD)}{head[len(call.name):]}"
                 f" · {outcome}" + self._paint(f" · {took}", DIM)]
        todos = todo_line(result, width - 2) if not result.is_error else None
        if todos is not None:
            lines.append(self._paint("  " + todos, CYAN))
        if call.name == "bash" and not result.is_error:
            text = for_terminal("".join(c.text for c in result.content
                                        if getattr(c, "type", "") == "text"))
            shown = [line for line in text.splitlines() if line.strip()][-TAIL_LINES:]
            lines += [self._paint("  │ " + one_line(line, width - 5), DIM) for line in shown]
        for line in lines:
            self._line(line)

    def _on_retry(self, event: Any) -> None:
        self._line(self._paint(retry_text(event), YELLOW))

    def _on_system(self, event: Any) -> None:
        self._line(for_terminal(system_text(event)))

    def _on_warning(self, event: Any) -> None:
        self._line(self._paint(f"warning: {for_terminal(event.message)}", YELLOW))

    def _on_task_notification(self, event: Any) -> None:
        self._line(self._paint(for_terminal(task_text(event)), DIM))

    def _on_compaction(self, event: Any) -> None:
        self._line(self._paint("the history was compacted", DIM))

    # ------------------------------------------------------------------------ drawing

    async def animate(self) -> None:
        """Turn the spinner and count the seconds while a call runs or the model thinks."""
        import anyio

        while not self.closed:
            await anyio.sleep(TICK)
            self.frame += 1
            self._draw_status()

    def close(self) -> None:
        """Clear the status line and leave the cursor at the start of a line."""
        self.closed = True
        self._clear_status()
        self._end_line()

    def pause(self) -> None:
        """Stop drawing (a question is being asked on the terminal) until ``resume``."""
        self._clear_status()
        self._end_line()
        self.paused += 1

    def resume(self) -> None:
        self.paused -= 1

    def _status_text(self) -> str | None:
        """The status line: spinner, what runs, for how long, its last output line."""
        now = self.clock()
        if self.calls:
            calls = list(self.calls.values())
            first = calls[0]
            if len(calls) == 1:
                what = f"{first.name} {first.key}".rstrip()
            else:
                what = f"{len(calls)} tools: " + ", ".join(c.name for c in calls)
            tail = first.last_line()
            text = f"{what} · {elapsed(now - first.started)}" + (f" · {tail}" if tail else "")
        elif self.waiting_since is not None:
            text = f"thinking · {elapsed(now - self.waiting_since)}"
        else:
            return None
        spin = self._paint(SPINNER[self.frame % len(SPINNER)], CYAN)
        return f"{spin} {one_line(text, self._width() - 3)}"

    def _draw_status(self) -> None:
        if self.closed or self.paused or not self.at_line_start:
            return
        text = self._status_text()
        if text is None:
            self._clear_status()
            return
        self.err.write(CLEAR_LINE + text)
        self.err.flush()
        self.status_shown = True

    def _clear_status(self) -> None:
        if self.status_shown:
            self.err.write(CLEAR_LINE)
            self.err.flush()
            self.status_shown = False

    def _end_line(self) -> None:
        if not self.at_line_start:
            self.out.write("\n")
            self.out.flush()
            self.at_line_start = True

    def _line(self, text: str) -> None:
        """A permanent line on stderr, above the status line."""
        self._clear_status()
        self._end_line()
        self.err.write(text + "\n")
        self.err.flush()

    def _paint(self, text: str, style: str) -> str:
        return f"{style}{text}{RESET}" if self.colour and text else text

    def _width(self) -> int:
        return shutil.get_terminal_size((80, 24)).columns
