"""``zpi-host run`` on a real pseudo-terminal: what a person needs to follow the run, read off
the screen: the model's Markdown rendered, diffs of writes, a failed command's stderr, output
counts that say what they count, and the footer."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.test_cli_terminal import FOOTER, on_terminal, script

MARKDOWN = ("# Plan\n\nSome **bold** words and a [link](https://example.org).\n\n"
            "1. read the file\n2. fix it\n\n"
            "```python\ndef greet():\n    return 'hi'\n```\n\n"
            "| name | lines |\n|------|-------|\n| app.py | 2 |\n")


def test_the_models_markdown_is_rendered(tmp_path: Path) -> None:
    model = script(tmp_path, {"text": MARKDOWN})
    code, term = on_terminal(tmp_path, "--model", model, "plan it", cwd=tmp_path)
    assert code == 0, term.text
    screen = term.screen
    assert screen[0] == "Plan"  # the heading, without its hashes, bold and underlined
    assert "\x1b[1;4mPlan" in term.output
    assert "Some bold words and a link (https://example.org)." in screen  # no asterisks
    assert "\x1b[1mbold\x1b[0m" in term.output
    assert any(re.fullmatch(r" *1 read the file", line) for line in screen)
    assert any(re.fullmatch(r" *def greet\(\):", line) for line in screen)  # code, no fence
    assert not any("```" in line for line in screen)
    assert "\x1b[96;40mdef" in term.output or "def\x1b[0m" in term.output  # highlighted
    header = next(line for line in screen if "name" in line and "lines" in line)
    assert "|" not in header  # a table, drawn
    assert re.fullmatch(FOOTER, screen[-1])


def test_without_colour_the_markdown_is_still_laid_out(tmp_path: Path) -> None:
    model = script(tmp_path, {"text": MARKDOWN})
    code, term = on_terminal(tmp_path, "--model", model, "plan it", cwd=tmp_path,
                             NO_COLOR="1")
    assert code == 0, term.text
    assert not re.search(r"\x1b\[[0-9;]*m", term.output)
    assert term.screen[0] == "Plan" and "**" not in term.text


def test_a_write_shows_its_diff_and_long_diffs_are_folded(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("keep\n")
    content = "".join(f"line {i}\n" for i in range(1, 41))
    model = script(tmp_path,
                   {"tool_calls": [{"name": "write", "arguments": {
                       "path": "new.txt", "content": "alpha\nbeta\n"}}]},
                   {"tool_calls": [{"name": "write", "arguments": {
                       "path": "long.txt", "content": content}}]},
                   {"text": "done"})
    code, term = on_terminal(tmp_path, "--permission-mode", "acceptEdits", "--model", model,
                             "go", cwd=tmp_path)
    assert code == 0, term.text
    screen = term.screen
    at = screen.index(next(line for line in screen if line.startswith("✓ write new.txt")))
    assert "new file, 2 lines" in screen[at]
    assert screen[at + 1:at + 4] == ["  @@ -0,0 +1,2 @@", "  +alpha", "  +beta"]
    assert "\x1b[32m+alpha" in term.output
    assert any(re.fullmatch(r"  … \d+ more lines of the diff not shown", line)
               for line in screen)
    assert "  +line 40" not in screen


def test_a_failed_command_shows_its_exit_code_and_stderr(tmp_path: Path) -> None:
    command = "echo building; echo 'fatal: no such file: config.toml' >&2; exit 2"
    model = script(tmp_path, {"tool_calls": [{"name": "bash", "arguments": {
        "command": command}}]}, {"text": "it failed"})
    code, term = on_terminal(tmp_path, "--allow", "bash", "--model", model, "go",
                             cwd=tmp_path)
    assert code == 0, term.text
    screen = term.screen
    at = screen.index(next(line for line in screen if line.startswith("✗ bash echo")))
    assert " · exit code 2 · " in screen[at]
    assert screen[at + 1:at + 3] == ["  │ building", "  │ fatal: no such file: config.toml"]
    assert "\x1b[31m  │ fatal: no such file" in term.output


def test_output_counts_say_what_they_count(tmp_path: Path) -> None:
    model = script(tmp_path, {"tool_calls": [{"name": "bash", "arguments": {
        "command": "seq 1 100000"}}]}, {"text": "counted"})
    code, term = on_terminal(tmp_path, "--allow", "bash", "--model", model, "go",
                             cwd=tmp_path)
    assert code == 0, term.text
    line = next(line for line in term.screen if line.startswith("✓ bash seq"))
    assert re.search(r" · 100000 lines, kept \d+ \(its start and end\) · ", line)
    assert "  │ 100000" in term.screen


def test_without_rich_the_text_streams_as_it_comes(tmp_path: Path) -> None:
    from tests.e2e.test_cli_terminal import environment
    from tests.helpers.cli import zpi_without
    from tests.helpers.terminal import Terminal

    command = zpi_without(tmp_path, "rich")
    model = script(tmp_path, {"text": MARKDOWN})
    term = Terminal([*command, "run", "--model", model, "plan it"], cwd=tmp_path,
                    env=environment(tmp_path))
    assert term.finish() == 0, term.text
    assert term.screen[0] == "# Plan" and "```python" in term.screen
    assert re.fullmatch(FOOTER, term.screen[-1])


def test_the_plugin_table_fits_the_terminal_and_wide_keeps_it_whole(tmp_path: Path) -> None:
    import subprocess

    from tests.e2e.test_cli_terminal import EXE, environment
    from tests.helpers.terminal import Terminal

    for columns in (80, 100, 120):
        term = Terminal([EXE, "--list-plugins"], cwd=tmp_path, env=environment(tmp_path),
                        columns=columns)
        assert term.finish() == 0, term.text
        assert max(len(line) for line in term.screen) <= columns, term.screen
        assert "    contributes: tools: bash, edit, read, write" in term.screen
    term = Terminal([EXE, "--list-plugins", "--wide"], cwd=tmp_path,
                    env=environment(tmp_path), columns=80)
    assert term.finish() == 0, term.text
    piped = subprocess.run([EXE, "--list-plugins"], capture_output=True, text=True,
                           cwd=tmp_path, env=environment(tmp_path), timeout=60)
    assert term.screen == piped.stdout.rstrip("\n").split("\n")  # --wide: the piped table
    assert max(len(line) for line in term.screen) > 80
