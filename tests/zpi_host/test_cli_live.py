"""The live display's drawing, fed real session events, with a clock the test turns."""

from __future__ import annotations

import io

from zpi_host.agent.events import (
    RetryEvent,
    TaskNotification,
    TextDeltaEvent,
    ToolEnd,
    ToolStart,
    ToolUpdateEvent,
)
from zpi_host.cli.live import LiveDisplay, key_argument, size_of
from zpi_host.providers.messages import TextContent, ToolResultMessage
from zpi_host.session.ports import TaskInfo


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def display(colour: bool = False) -> tuple[LiveDisplay, io.StringIO, io.StringIO, Clock]:
    out, err, clock = io.StringIO(), io.StringIO(), Clock()
    return LiveDisplay(out, err, colour=colour, clock=clock), out, err, clock


def result(call_id: str, name: str, text: str, error: bool = False) -> ToolEnd:
    return ToolEnd(ToolResultMessage(call_id, name, (TextContent(text),), is_error=error))


def last_status(err: io.StringIO) -> str:
    return err.getvalue().rsplit("\r\x1b[K", 1)[-1]


def permanent_lines(err: io.StringIO) -> list[str]:
    """The lines left on the screen: each status line is cleared before the next write."""
    return [line.rsplit("\r\x1b[K", 1)[-1] for line in err.getvalue().split("\n")]


def test_the_status_line_follows_the_calls_in_flight():
    live, _out, err, clock = display()
    live(ToolStart("c1", "bash", {"command": "make test"}))
    assert last_status(err) == "⠋ bash make test · 0.0s"
    clock.now += 2.5
    live(ToolUpdateEvent("c1", "compiling\nlinking\n\n"))
    assert last_status(err) == "⠋ bash make test · 2.5s · linking"
    live(ToolStart("c2", "read", {"path": "a.py"}))
    assert last_status(err).startswith("⠋ 2 tools: bash, read · 2.5s")
    clock.now += 1
    live(result("c2", "read", "one\ntwo\nthree\n"))
    assert "✓ read a.py · 3 lines · 1.0s" in permanent_lines(err)
    assert last_status(err) == "⠋ bash make test · 3.5s · linking"  # c1 still runs
    live(result("c1", "bash", "x\ny\nz\nw\n"))
    lines = permanent_lines(err)
    assert lines[-5:] == ["✓ bash make test · 4 lines · 3.5s", "  │ y", "  │ z", "  │ w", ""]
    live.close()
    assert err.getvalue().endswith("\n")


def test_text_ends_its_line_before_a_tool_line_and_errors_are_whole():
    live, out, err, _clock = display()
    live(TextDeltaEvent("Let me look"))
    live(ToolStart("c1", "read", {"path": "missing.txt"}))
    assert out.getvalue() == "Let me look\n"
    reason = "missing.txt does not exist; " + "to create it use write " * 10
    live(result("c1", "read", reason, error=True))
    (line,) = [x for x in permanent_lines(err) if x.startswith("✗")]
    assert line.startswith("✗ read missing.txt · error: missing.txt does not exist")
    assert reason.strip() in line  # never cut, whatever the width


def test_paused_while_asking_and_retries_in_their_own_line():
    live, _out, err, _clock = display(colour=True)
    live(ToolStart("c1", "bash", {"command": "rm -r build"}))
    live.pause()
    before = err.getvalue()
    live.frame += 1
    live._draw_status()
    assert err.getvalue() == before  # nothing drawn over the question
    live.resume()
    live(RetryEvent("rate limited", 4.0, 2, 5))
    assert "\x1b[33mrate limited, retrying in 4 s, attempt 2 of 5\x1b[0m\n" in err.getvalue()


def test_a_background_task_that_ended_gets_its_own_line():
    live, _out, err, _clock = display()
    info = TaskInfo(task_id="b1f0c2a9e", session_id="s", command="make serve",
                    description="the dev server", status="failed", output_file="/x.log",
                    exit_code=2, summary="exited with code 2")
    live(TaskNotification(info))
    assert "background task b1f0c2a9e (the dev server) exited with code 2" in \
        permanent_lines(err)


def test_key_argument_and_size():
    assert key_argument({"path": "a.py", "limit": 3}) == "a.py"
    assert key_argument({"pattern": "TODO", "path": "src"}) == "TODO"
    assert key_argument({"command": "ls", "timeout": 5}) == "ls"
    assert key_argument({"x": 1, "other": "first string"}) == "first string"
    assert key_argument("not a mapping") == ""
    one = ToolResultMessage("c", "t", (TextContent("hello"),))
    assert size_of(one) == "5 bytes"


def test_the_model_and_commands_cannot_drive_the_terminal():
    """What the display shows from elsewhere (model text, a call's argument, a command's
    output, a plugin's warning) goes through for_terminal: no escape sequence of theirs
    reaches the screen; the display's own colours do."""
    live, out, err, _clock = display(colour=True)
    live(TextDeltaEvent("Sure\x1b]52;c;ZXZpbA==\x07 thing\x1b[2J\r"))
    live(TextDeltaEvent(" done\n"))
    assert out.getvalue() == "Sure thing done\n"
    live(ToolStart("c1", "bash", {"command": "ls\r\x1b[Kecho safe"}))
    live(ToolUpdateEvent("c1", "\x1b]0;owned\x07progress\n"))
    assert "ls^M^[[Kecho safe" in err.getvalue() and "owned" not in err.getvalue()
    live(result("c1", "bash", "\x1b[31mred\x1b[0m\n\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n"))
    from zpi_host.agent.events import WarningEvent

    live(WarningEvent("plugin says \x1b[2J\x07hi"))
    screen = err.getvalue()
    assert "  │ red" in screen and "  │ link" in screen and "plugin says ^Ghi" in screen
    for foreign in ("\x1b]", "\x1b[2J", "\x1b[Kecho", "\x1b[31m", "\x07"):
        assert foreign not in screen + out.getvalue(), foreign
    assert "\x1b[32m✓" in screen  # the display's own colours stay


def test_reasoning_is_collapsed_to_one_dim_line():
    from zpi_host.agent.events import ReasoningDeltaEvent

    live, out, err, _clock = display()
    live(ReasoningDeltaEvent("The user wants "))
    live(ReasoningDeltaEvent("a greeting.\nKeep it short."))
    assert last_status(err).startswith("⠋ thinking")  # while it streams
    live(TextDeltaEvent("Hello!"))
    live.close()
    assert out.getvalue() == "Hello!\n"  # stdout is the answer only
    lines = [line for line in permanent_lines(err) if line]
    assert lines == ["✻ thinking… 8 words"]
    assert "greeting" not in err.getvalue()


def test_verbose_shows_the_reasoning_dimmed_under_its_line():
    from zpi_host.agent.events import ReasoningDeltaEvent

    out, err, clock = io.StringIO(), io.StringIO(), Clock()
    live = LiveDisplay(out, err, colour=True, clock=clock, verbose=True)
    live(ReasoningDeltaEvent("First read a.py.\nThen \x1b[31medit it."))
    live(ToolStart("c1", "read", {"path": "a.py"}))
    lines = [line for line in permanent_lines(err) if line]
    dim, reset = "\x1b[2m", "\x1b[0m"
    assert lines[:3] == [f"{dim}✻ thinking… 6 words{reset}", f"{dim}  First read a.py.{reset}",
                         f"{dim}  Then edit it.{reset}"]  # no escape of the model reaches it
    assert "\x1b[31m" not in err.getvalue()


def test_a_todo_list_is_drawn_as_one_line_under_its_call():
    """builtins:todos' ``todo_write`` (the SDK's ``TodoWrite``): the list it set, in one
    line, the item in progress by its ``activeForm``; an escape in an item is shown, not
    run."""
    from zpi_host.cli.live import todo_line

    todos = [{"content": "Plan", "status": "completed", "activeForm": "Planning"},
             {"content": "Write tests", "status": "in_progress", "activeForm": "Writing tests"},
             {"content": "Docs\x1b[2J", "status": "pending", "activeForm": "Writing docs"}]
    live, _out, err, _clock = display()
    live(ToolStart("c1", "todo_write", {"todos": todos}))
    live(ToolEnd(ToolResultMessage("c1", "todo_write", (TextContent("Todos have been "
                                                                    "modified"),),
                                   details={"oldTodos": [], "newTodos": todos})))
    lines = permanent_lines(err)
    shown = next(line for line in lines if line.startswith("  todos"))
    assert shown.startswith("  todos 1/3: ✓ Plan · ▶ Writing tests · ○ Docs")
    assert "\x1b[2J" not in shown
    assert todo_line(ToolResultMessage("c2", "read", (), details={"newTodos": todos})) is None
    assert todo_line(ToolResultMessage("c3", "TodoWrite", (), details={"newTodos": []})) == \
        "todos: (empty)"


def test_plain_text_mode_prints_the_todo_line_too():
    from zpi_host.cli.run import _activity_line

    todos = [{"content": "Plan", "status": "pending", "activeForm": "Planning"}]
    end = ToolEnd(ToolResultMessage("c1", "todo_write", (TextContent("ok"),),
                                    details={"oldTodos": [], "newTodos": todos}))
    assert _activity_line(end) == "  todos 0/1: ○ Plan"
    assert _activity_line(result("c2", "read", "text")) is None
