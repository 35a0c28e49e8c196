"""Ways of writing "delete the file f" in one bash command, each run for real.

With the deny rule ``bash(rm:*)``, every spelling in ``PROMISED`` must be refused by the
session's permission policy and the file must still be there afterwards. Each spelling is
first run without the rule to show that it really deletes the file, so the table cannot rot
into commands that do nothing. ``NOT_PROMISED`` are deletions by other programs (``find
-delete``, an interpreter, a script file, an alias): a rule about ``rm`` cannot promise them,
and docs/permissions.md says so; they are run and counted, not asserted.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.permission_checks import BASH, policy

from zpi_host.permissions import PermissionPolicy
from zpi_host.tools.base import ToolCall, ToolContext

pytestmark = pytest.mark.anyio

DENY = "bash(rm:*)"

#: Spellings that run ``rm`` on ``f``; a deny rule for ``rm`` must stop each of them.
PROMISED: list[str] = [
    # plain, quoted, escaped
    "rm f", "rm -f -- f", "\\rm f", "r\\m f", '"rm" f', "'rm' f", "'r'm f", 'r""m f',
    "$'rm' f", "$'\\x72m' f", "$'\\162m' f", '$"rm" f',
    # paths
    "/bin/rm f", "/usr/bin/rm f", "./rm f", "~/bin/rm f",
    # wrappers
    "command rm f", "command -p rm f", "exec rm f", "env rm f",
    "env -i PATH=/usr/bin:/bin rm f", "env -u HOME -- rm f", "FOO=1 BAR=2 rm f", "nohup rm f",
    "time rm f", "time -p rm f", "nice rm f", "nice -n 5 rm f", "nice -5 rm f",
    "ionice -c 3 rm f", "timeout 5 rm f", "timeout -s KILL 10 rm f",
    "timeout --kill-after=1 5 rm f", "setsid -w rm f", "stdbuf -o0 rm f", "sudo rm f",
    "sudo -u root rm f", "sudo -s rm f", "su -c 'rm f'", "doas rm f", "busybox rm f",
    "nice env timeout 5 nohup rm f",
    # xargs and find -exec
    "echo f | xargs rm", "xargs -n 1 rm <<< f", "printf 'f\\0' | xargs -0 -I{} rm {}",
    "find . -name f -exec rm {} \\;", "find . -name f -exec rm {} +",
    # shells and eval
    "sh -c 'rm f'", "bash -c 'rm f'", "dash -c 'rm f'", "bash -e -c \"rm f\"",
    "bash --norc -c 'rm f'", "sh -c 'sh -c \"rm f\"'", "sh -c 'rm \"$1\"' _ f",
    "eval rm f", "eval 'rm f'", "eval \"$(echo rm f)\"", "echo 'rm f' | sh", "sh <<< 'rm f'",
    "bash -s <<'EOF'\nrm f\nEOF", "trap 'rm f' EXIT", "bash <(echo rm f)",
    "source /dev/stdin <<< 'rm f'", "echo f | mapfile -t -C 'rm' -c 1 a",
    # lists, pipelines, groups, subshells
    "true && rm f", "false || rm f", "true; rm f", "true\nrm f", "echo x | rm f",
    "rm f & wait", "{ rm f; }", "(rm f)", "( (rm f) )", "! rm f", "rm f 2>/dev/null",
    # compound commands and functions
    "if true; then rm f; fi", "if rm f; then :; fi", "if false; then :; else rm f; fi",
    "for x in f; do rm $x; done", "for ((i=0; i<1; i++)); do rm f; done",
    "while true; do rm f; break; done", "until rm f; do :; done",
    "case x in x) rm f;; esac", "g() { rm f; }; g", "function g { rm f; }; g",
    "select x in f; do rm $x; break; done <<< 1",
    # substitutions
    "echo $(rm f)", 'echo "$(rm f)"', "echo `rm f`", 'echo "`rm f`"', "cat <(rm f)",
    "x=$(rm f)", "export X=$(rm f)", "echo ${x:-$(rm f)}", "echo $((0 + $(rm f; echo 1)))",
    "cat <<EOF\n$(rm f)\nEOF", "[[ -n $(rm f) ]]", "echo `echo \\`rm f\\``",
    # code in quoted strings that bash evaluates later (arithmetic, indirection, printf -v)
    "x='a[$(rm f)]'; echo $((x))", "x='a[$(rm f)]'; [[ $x -eq 0 ]]",
    "y='a[$(rm f)]'; echo ${!y}", "printf -v 'a[$(rm f)]' x",
    "for x in 'a[`rm f`]'; do : $((x)); done",
    # the program name is not literal: unknown, so refused under any bash deny rule
    "x=rm; $x f", '"${x:-rm}" f', "/b?n/rm f", "/bin/r[m] f", "$(echo rm) f", "{rm,f}",
    "exec $(echo rm) f",
]

#: Deletions a rule about ``rm`` cannot promise to stop: other programs, files, aliases.
NOT_PROMISED: list[str] = [
    "find . -name f -delete",
    "unlink f",
    "python3 -c 'import os; os.remove(\"f\")'",
    "perl -e 'unlink \"f\"'",
    "printf 'rm f' > s.sh; sh s.sh",
    "shopt -s expand_aliases\nalias del=rm\ndel f",
    "hash -p /bin/rm del; del f",
    "ln -s /bin/rm del && ./del f",
    "mv f ../gone",
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with a copy of rm under ./rm and ~/bin/rm, and stand-ins for sudo, doas,
    su and busybox (not all installed here) that run their arguments the way those do."""
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    stand_ins = tmp_path / "stand-ins"
    stand_ins.mkdir()
    for link in (ws / "rm", home / "bin" / "rm"):
        link.symlink_to("/bin/rm")
    for name, script in {
        "sudo": '#!/bin/sh\nwhile [ "${1#-}" != "$1" ]; do\n  case $1 in -u) shift;;\n'
                '  -s) shift; exec sh -c "$*";; esac\n  shift\ndone\nexec "$@"\n',
        "su": '#!/bin/sh\n[ "$1" = -c ] && exec sh -c "$2"\nexit 1\n',
        "doas": '#!/bin/sh\nexec "$@"\n',
        "busybox": '#!/bin/sh\nexec "$@"\n',
    }.items():
        path = stand_ins / name
        path.write_text(script)
        path.chmod(0o755)
    return ws


def _context(ws: Path) -> ToolContext:
    home = ws.parent / "home"
    return ToolContext(cwd=ws, call_id="c", spill_dir=ws.parent / "spill",
                       env={"HOME": str(home),
                            "PATH": f"{ws.parent / 'stand-ins'}:{os.environ['PATH']}"})


async def _run(p: PermissionPolicy, ws: Path, command: str) -> bool:
    """Ask the policy about ``command`` and run it when allowed; whether it was allowed."""
    (ws / "f").write_text("keep me\n")
    call = ToolCall("c", "bash", {"command": command})
    result = await p.check(BASH, call)
    if result.allowed:
        await BASH.execute(BASH.prepare_arguments({"command": command, "timeout": 20}),
                           _context(ws))
    return result.allowed


async def _deletes(ws: Path, command: str) -> bool:
    """Whether ``command`` really deletes ``f`` when nothing stops it."""
    assert await _run(policy(ws, "bypass"), ws, command)
    return not (ws / "f").exists()


def test_the_table_is_large_and_has_no_duplicates():
    assert len(PROMISED) >= 45
    assert len(set(PROMISED + NOT_PROMISED)) == len(PROMISED) + len(NOT_PROMISED)


@pytest.mark.parametrize("command", PROMISED)
async def test_a_deny_rule_for_rm_stops_every_spelling(workspace, command):
    assert await _deletes(workspace, command), f"{command!r} does not delete f at all"
    allowed = await _run(policy(workspace, "bypass", deny=(DENY,)), workspace, command)
    assert not allowed, f"{command!r} was allowed under {DENY}"
    assert (workspace / "f").read_text() == "keep me\n"


@pytest.mark.parametrize("command", NOT_PROMISED)
async def test_deletions_by_other_programs_are_real_but_not_promised(workspace, command):
    assert await _deletes(workspace, command), f"{command!r} does not delete f at all"


async def test_count_of_stopped_spellings(workspace, capsys):
    """The figure docs/reliability.md quotes: how many spellings the deny rule stops."""
    p = policy(workspace, "bypass", deny=(DENY,))

    async def refused(command: str) -> bool:
        return not (await p.check(BASH, ToolCall("c", "bash", {"command": command}))).allowed

    stopped = [c for c in PROMISED if await refused(c)]
    others = [c for c in NOT_PROMISED if await refused(c)]
    with capsys.disabled():
        print(f"\n{DENY} stopped {len(stopped)} of {len(PROMISED)} rm spellings; "
              f"{len(others)} of {len(NOT_PROMISED)} deletions by other programs (not promised)")
    assert len(stopped) == len(PROMISED), sorted(set(PROMISED) - set(stopped))
