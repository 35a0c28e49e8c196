"""Fuzzing the bash reading behind command rules: ``rm f`` wrapped in random layers of quoting,
wrappers, compound commands, substitutions and ``sh -c`` is always caught by a deny rule and
never covered by allow rules for the commands around it; random token soup that real bash
runs ``rm`` for is always caught; arbitrary text never raises."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zpi_host.permissions import matching, shell

PROGRAMS = ["rm", "\\rm", '"rm"', "'r'm", "/bin/rm", "$'\\x72m'", "r\\m", "./rm"]

LAYERS = [
    "command {}", "env A=1 {}", "nice -n 3 {}", "timeout 5 {}", "nohup {}", "time {}",
    "sudo -u root {}", "exec {}", "xargs -0 {} < list",
    "{{ {}; }}", "({})", "true && {}", "false || {}", "if true; then {}; fi",
    "if {}; then :; fi", "for i in 1; do {}; done", "while true; do {}; break; done",
    "case a in a) {};; esac", "f() {{ {}; }}; f", "{} | cat", "echo x | {}", "! {}",
    "echo $({})", 'echo "$({})"', "x=$({})", "cat <({})", "echo ${{x:-$({})}}",
    "[[ -n $({}) ]]",
]
QUOTING = ["sh -c {}", "bash -c {}", "eval {}", "trap {} EXIT", "bash -o pipefail -c {}"]


@st.composite
def rm_spellings(draw: st.DrawFn) -> str:
    command = f"{draw(st.sampled_from(PROGRAMS))} f"
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            command = draw(st.sampled_from(LAYERS)).format(command)
        else:
            command = draw(st.sampled_from(QUOTING)).format(shlex.quote(command))
    return command


@given(rm_spellings())
def test_a_deny_rule_for_rm_catches_rm_in_any_wrapping(command):
    assert matching.command_matches("rm:*", command, strict=False), command


@given(rm_spellings())
def test_allow_rules_for_the_commands_around_rm_do_not_cover_it(command):
    allowed = ["git status:*", "echo:*", "true", "false", "cat:*", ":", "f"]
    assert matching.cover_command(allowed, command) is None, command


@given(st.text(alphabet=st.sampled_from(list("rm f;&|()`$'\"\\{}[]<>#=\n\t-cx*?!~")) |
               st.characters(), max_size=80))
def test_any_text_reads_without_raising(text):
    line = shell.parse_line(text)
    list(line.unknowns())
    matching.command_matches("rm:*", text, strict=False)
    matching.cover_command(["git status:*"], text)
    matching.suggest_command_rules("bash", text)


def test_characters_that_crash_the_grammar_do_not_crash_the_host():
    """tree-sitter-bash 0.25 can SIGSEGV on ``{`` followed by a 4-byte UTF-8 character
    (upstream issue 337, Linux); the reading must never hand it such bytes. In a subprocess,
    so that a crash fails this test instead of ending the suite."""
    code = ("import random\n"
            "from zpi_host.permissions import matching\n"
            "random.seed(7)\n"
            "for i in range(6000):\n"
            "    text = '{' + chr(random.randint(0x10000, 0x10FFFF)) * random.randint(1, 3)\n"
            "    assert matching.command_matches('rm:*', text + ' h' + str(i), strict=False)\n")
    done = subprocess.run([sys.executable, "-c", code], timeout=120, capture_output=True)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]


#: Pieces of bash from which random lines are glued; ``rm`` on the PATH is a stand-in that
#: leaves a mark, so that the test knows when bash really ran it.
SOUP = [" rm f", " rm f ", "rm", "r", "m", "f", ";", "&&", "||", "|", "&", "(", ")", "{", "}",
        "$(", "`", "'", '"', "\\", "\n", " ", " ", "if", "then", "fi", "case", "in", "esac",
        ";;", "<<", "EOF", "<(", "x=", "$", "#", "=", "eval", "sh", "-c", "command", "env",
        "nice", "time", "!", "for", "do", "done", "echo", "$'", "\\x72", "{a,b}", "*", "?",
        "exec", "xargs", "trap", "EXIT", "a", "true", ">x", " >/dev/null ", "2>&1", "<x",
        "$''", "a=", '"$x"', "${x}", "<<<", "--", "-n", "5", "timeout", "nohup", "find",
        "-exec", "\\;", "{}", "a[", "]", "$((", "))", "\\\n", "\\\n", "x=$"]


@pytest.fixture(scope="module")
def fake_rm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fake-rm")
    (folder / "bin").mkdir()
    (folder / "work").mkdir()
    script = folder / "bin" / "rm"
    script.write_text('#!/bin/sh\ntouch "$MARK"\n')
    script.chmod(0o755)
    return folder


_PIECES = st.lists(st.sampled_from(SOUP), max_size=8).map("".join)


@given(line=st.tuples(_PIECES, st.sampled_from(["rm f", "\\rm f", "r\\\nm f", "'r'm f"]),
                      _PIECES).map(lambda t: f"{t[0]} {t[1]} {t[2]}"))
def test_whenever_bash_runs_rm_the_deny_rule_matched(fake_rm, line):
    mark = fake_rm / f"mark-{os.getpid()}-{abs(hash(line))}"
    mark.unlink(missing_ok=True)
    env = {"PATH": f"{fake_rm / 'bin'}:/usr/bin:/bin", "MARK": str(mark), "HOME": str(fake_rm)}
    try:
        subprocess.run(["bash", "-c", line], cwd=fake_rm / "work", env=env, timeout=5,
                       stdin=subprocess.DEVNULL, capture_output=True)
    except subprocess.TimeoutExpired:
        return
    if mark.exists():
        assert matching.command_matches("rm:*", line, strict=False), line
