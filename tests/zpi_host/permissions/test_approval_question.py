"""What a person approving a call is shown: the call exactly as it will run (every line of a
command, uncut, control characters visible) and, for write and edit, the diff it would make."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from helpers.permission_checks import BASH, EDIT, WRITE, check, policy

from zpi_host.permissions import PermissionContext, PermissionDeny
from zpi_host.permissions.approver import approval_question, terminal_approver
from zpi_host.tools.previews import PREVIEW_BYTES

pytestmark = pytest.mark.anyio


def question(name: str, arguments: dict[str, Any], preview: str = "") -> str:
    context = PermissionContext(cwd=Path("."), mode="ask", reason="ask mode: it may change things",
                                suggestions=(f"{name}",), preview=preview)
    about, prompt = approval_question(name, arguments, context)
    return about + "\n" + prompt


def test_every_line_of_a_multi_line_command_is_shown_on_its_own_line():
    shown = question("bash", {"command": "echo build step\nrm -f important.txt"})
    lines = shown.splitlines()
    assert "    echo build step" in lines and "    rm -f important.txt" in lines


def test_a_long_command_is_shown_whole():
    command = "echo " + "x" * 300 + " && rm -rf build"
    shown = question("bash", {"command": command})
    assert f"    {command}" in shown.splitlines()


@pytest.mark.parametrize(("hidden", "visible"), [
    ("\x1b[2K", "^[[2K"), ("\r", "^M"), ("\x07", "^G"), ("\u202e", "<U+202E>"),
    ("\x9b", "<U+009B>"), ("\x08", "^H"),
])
def test_control_characters_of_the_command_are_made_visible(hidden, visible):
    shown = question("bash", {"command": f"touch gone{hidden}echo hello"})
    assert f"    touch gone{visible}echo hello" in shown.splitlines()
    assert hidden not in shown


def test_the_terminal_approver_writes_the_whole_command_to_a_pipe_too():
    out = io.StringIO()  # not a terminal: still nothing in the question may redraw it
    approve = terminal_approver(io.StringIO("n\n"), out)
    context = PermissionContext(cwd=Path("."), mode="ask", reason="ask mode")
    import anyio

    answer = anyio.run(approve, "bash", {"command": "echo ok\r\x1b[2Krm -rf x"}, context)
    assert isinstance(answer, PermissionDeny)
    assert "    echo ok^M^[[2Krm -rf x" in out.getvalue().splitlines()


class Recorder:
    """A ``can_use_tool`` that keeps what it was asked and says no."""

    def __init__(self) -> None:
        self.contexts: list[PermissionContext] = []

    def __call__(self, name: str, arguments: dict[str, Any], context: PermissionContext
                 ) -> bool:
        self.contexts.append(context)
        return False


async def asked(ws: Path, tool: Any, **arguments: Any) -> PermissionContext:
    recorder = Recorder()
    await check(policy(ws, "ask", can_use_tool=recorder), tool, **arguments)
    (context,) = recorder.contexts
    return context


async def test_an_edit_is_asked_about_with_its_diff(ws):
    (ws / "notes.txt").write_text("one\ntwo\nthree\nfour\n")
    context = await asked(ws, EDIT, path="notes.txt",
                          edits=[{"old_text": "three", "new_text": "THREE"}])
    assert "-three\n+THREE\n" in context.preview and " two\n" in context.preview
    assert "+1 -1 lines" in context.preview
    shown = question("edit", {"path": "notes.txt"}, context.preview)
    assert "    -three" in shown.splitlines() and "    +THREE" in shown.splitlines()


async def test_an_edit_that_would_not_apply_says_so(ws):
    (ws / "notes.txt").write_text("one\n")
    context = await asked(ws, EDIT, path="notes.txt",
                          edits=[{"old_text": "absent", "new_text": "x"}])
    assert "the edit would fail and change nothing" in context.preview


async def test_a_write_of_a_new_file_shows_every_line_added(ws):
    context = await asked(ws, WRITE, path="fresh.txt", content="alpha\nbeta\n")
    assert context.preview.startswith(f"new file ({ws / 'fresh.txt'})\n")
    assert "+alpha\n+beta\n" in context.preview


async def test_a_write_over_a_file_shows_the_diff(ws):
    (ws / "conf.ini").write_text("a=1\nb=2\n")
    context = await asked(ws, WRITE, path="conf.ini", content="a=1\nb=3\n")
    assert "-b=2\n+b=3\n" in context.preview and " a=1\n" in context.preview


async def test_a_long_diff_is_folded_with_a_count_of_the_hidden_lines(ws):
    context = await asked(ws, WRITE, path="big.txt",
                          content="".join(f"line {i}\n" for i in range(500)))
    assert "+line 10\n" in context.preview and "+line 499" not in context.preview
    assert "more lines of the diff not shown" in context.preview
    hidden = int(context.preview.rsplit("… ", 1)[1].split()[0])
    shown = context.preview.count("\n+line ")
    assert shown + hidden >= 500


async def test_a_binary_or_huge_file_gets_a_sentence_instead_of_a_diff(ws):
    (ws / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    binary = await asked(ws, WRITE, path="blob.bin", content="text")
    assert binary.preview == "no diff shown: blob.bin is a binary file (30 bytes)"
    (ws / "huge.txt").write_bytes(b"x" * (PREVIEW_BYTES + 1))
    huge = await asked(ws, WRITE, path="huge.txt", content="small")
    assert huge.preview.startswith("no diff shown: huge.txt is ") and "bytes" in huge.preview


async def test_the_diff_names_the_file_as_resolved(ws, tmp_path):
    """A symlink's target is what a write changes: the diff says which file that is."""
    target = tmp_path / "elsewhere.txt"
    target.write_text("old\n")
    (ws / "link.txt").symlink_to(target)
    context = await asked(ws, WRITE, path="link.txt", content="new\n")
    assert context.preview.startswith(f"+1 -1 lines ({target})\n")


async def test_a_fifo_is_not_opened_for_the_diff(ws):
    import os

    os.mkfifo(ws / "pipe")
    context = await asked(ws, WRITE, path="pipe", content="x")
    assert context.preview.startswith("no diff shown: pipe cannot be read")


async def test_a_command_has_no_preview(ws):
    assert (await asked(ws, BASH, command="ls")).preview == ""


# ----------------------------------------------------------------- the front end's default

@pytest.mark.parametrize(("settings", "option", "expected"), [
    (None, None, "ask"), ({"mode": "default"}, None, "ask"), ({"mode": "plan"}, None, "plan"),
    ({"mode": "bypass"}, "default", "ask"), (None, "bypass", "bypass"),
])
def test_the_name_default_stands_for_the_front_ends_default(ws, settings, option, expected):
    from zpi_host.permissions import build_policy

    chosen = build_policy({"permissions": settings} if settings else None, cwd=ws,
                          mode=option, default="ask")
    assert chosen.mode == expected
    assert build_policy(None, cwd=ws).mode == "default"  # embedders' default is unchanged


def test_a_bad_default_or_hint_is_a_config_error(ws):
    from zpi_host.permissions import PermissionConfigError, build_policy

    with pytest.raises(PermissionConfigError, match="permission_default: unknown permission "
                                                    "mode 'trust'"):
        build_policy(None, cwd=ws, default="trust")
    with pytest.raises(PermissionConfigError, match="no_approver_hint must be callable"):
        build_policy(None, cwd=ws, no_approver_hint="use --allow")  # type: ignore[arg-type]


async def test_with_nobody_to_ask_the_front_ends_hint_says_how_to_allow(ws):
    from zpi_host.permissions import NO_APPROVER, build_policy

    seen: list[PermissionContext] = []

    def hint(context: PermissionContext) -> str:
        seen.append(context)
        return f"run with --allow {context.suggestions[0]}"

    chosen = build_policy(None, cwd=ws, mode="ask", no_approver_hint=hint)
    result = await check(chosen, BASH, command="make test")
    assert result.reason == ("ask mode: every call of a tool with side effects needs approval; "
                             "run with --allow bash(make test:*)")
    assert result.unapproved and NO_APPROVER not in result.reason
    assert seen[0].tool == "bash" and seen[0].preview == ""  # nobody sees a preview
    plain = await check(build_policy(None, cwd=ws, mode="ask"), BASH, command="make test")
    assert plain.unapproved and plain.reason.endswith(NO_APPROVER)
    asked = await check(policy(ws, "ask", can_use_tool=lambda n, a, c: False), BASH,
                        command="make test")
    assert not asked.unapproved  # the approver said no: not "nobody to ask"


async def test_a_failing_hint_still_denies_with_the_hosts_words(ws):
    from zpi_host.permissions import NO_APPROVER, build_policy

    def broken(context: PermissionContext) -> str:
        raise RuntimeError("no words")

    result = await check(build_policy(None, cwd=ws, mode="ask", no_approver_hint=broken), BASH,
                         command="ls -l")
    assert result.behavior == "deny" and result.unapproved
    assert f"{NO_APPROVER} (the no_approver_hint failed: RuntimeError: no words)" in result.reason


def test_the_diff_is_coloured_on_request_and_its_control_characters_stay_visible():
    preview = ("+1 -1 lines (/w/a.txt)\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n"
               "-old\x1b]0;t\x07\n+new\n")
    context = PermissionContext(cwd=Path("."), mode="ask", reason="ask mode",
                                suggestions=("edit",), preview=preview)
    about, _ = approval_question("edit", {"path": "a.txt"}, context, colour=True)
    lines = about.splitlines()
    assert "    +1 -1 lines (/w/a.txt)" in lines  # the summary line is not a diff line
    assert "    --- a/a.txt" in lines and "    +++ b/a.txt" in lines
    assert "    \x1b[36m@@ -1 +1 @@\x1b[0m" in lines
    assert "    \x1b[31m-old^[]0;t^G\x1b[0m" in lines  # the file's escapes shown, not run
    assert "    \x1b[32m+new\x1b[0m" in lines
    plain, _ = approval_question("edit", {"path": "a.txt"}, context)
    assert "\x1b" not in plain
