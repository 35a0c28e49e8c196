"""removes_or_moves: the bash lines a self hand-off refuses softly, read by the shell reader."""

from __future__ import annotations

import pytest

from zpi_host.permissions.file_removals import removes_or_moves


@pytest.mark.parametrize("line, found", [
    ("rm -rf build", "rm -rf build"),
    ("/bin/rm x", "/bin/rm x"),
    ("sudo rm x", "rm x"),
    ("env A=1 mv a b", "mv a b"),
    ("sh -c 'unlink a'", "unlink a"),
    ("cp a b && mv b c", "mv b c"),
    ('echo "$(rmdir d)"', "rmdir d"),
    ("find . -name '*.pyc' -delete", "find . -name *.pyc -delete"),
    ("find . -exec shred {} +", "shred ?"),
    ("git rm -q a", "git rm -q a"),
    ("git -C sub mv a b", "git -C sub mv a b"),
    ("git clean -fdx", "git clean -fdx"),
    ("rsync -a --remove-source-files a/ b/", "rsync -a --remove-source-files a/ b/"),
    ("gio trash a", "gio trash a"),
])
def test_lines_that_delete_or_move(line, found):
    assert removes_or_moves(line) == found


@pytest.mark.parametrize("line", [
    "ls -la", "git status", "git -c a=b log", "cat a > b", "cp a b", "echo rm",
    "find . -name x", "gio info a", "rsync -a a/ b/", "python -m pytest",
])
def test_lines_that_do_neither(line):
    assert removes_or_moves(line) is None


def test_a_line_whose_commands_cannot_be_told_counts():
    assert removes_or_moves("$TOOL a").startswith("what it runs cannot be told")
