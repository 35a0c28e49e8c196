"""The bash reading behind command rules: which simple commands a line runs (quoting,
here-documents, comments, compound commands, substitutions, wrappers, ``sh -c``), what counts as
unknown, and how allow, deny and ask rules use that."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
from helpers.permission_checks import BASH, check, policy

from zpi_host.permissions import matching, shell
from zpi_host.permissions.shell import ShellLine

pytestmark = pytest.mark.anyio


def seen(line: ShellLine) -> list[str]:
    """Every view of every invocation, scripts and extras included, ``?`` for run-time words."""
    out: list[str] = []
    for inv in line.invocations:
        out += [" ".join("?" if w is None else w for w in view) for view in inv.views]
        for inner in (inv.script, *inv.extras):
            if inner is not None:
                out += seen(inner)
    return out


def read(command: str) -> tuple[list[str], str | None]:
    line = shell.parse_line(command)
    return seen(line), next(line.unknowns(), None)


# --------------------------------------------------------------------------- words and quoting

@pytest.mark.parametrize(("command", "words"), [
    ("echo 'a b'  \"c  d\"", ["echo", "a b", "c  d"]),
    ("echo 'it'\\''s'", ["echo", "it's"]),
    ('echo "a\\"b" "c\\$d" "e\\f"', ["echo", 'a"b', "c$d", "e\\f"]),
    ("echo a\\ b c\\\\d", ["echo", "a b", "c\\d"]),
    ("echo $'a\\tb' $'\\x41\\101\\u00e9' $'q\\'s'", ["echo", "a\tb", "AAé", "q's"]),
    ("echo $'ab\\0cd'", ["echo", "ab"]),  # bash ends the string at a NUL
    ("echo $'\\x80'", ["echo", None]),  # a byte that is no character: unknown
    ('echo $"hi" a$"b"c', ["echo", "hi", "abc"]),
    ('echo "$x" a"$x"b ${y} $(z)', ["echo", None, None, None, None]),
    ("echo a#b", ["echo", "a#b"]),
    ("echo *.py {a,b}", ["echo", "*.py", "{a,b}"]),
    ("echo r\\\nm", ["echo", "rm"]),
])
def test_words_are_unquoted_as_bash_does(command, words):
    line = shell.parse_line(command)
    assert line.invocations[0].views[0] == tuple(words)


@pytest.mark.parametrize(("command", "commands"), [
    ("echo hi # ; rm f", ["echo hi"]),
    ("echo hi; # rm f\nls", ["echo hi", "ls"]), ("echo a \\\n# rm f", ["echo a"]),
    ("cat <<'EOF'\n$(rm f) `rm g`\nEOF", ["cat"]),
    ('cat <<"EOF"\n$(rm f)\nEOF', ["cat"]),
    ("cat <<\\EOF\n$(rm f)\nEOF", ["cat"]),
    ("cat <<EOF\nhello $(rm f) ${HOME}\nEOF", ["cat", "rm f"]),
    ("cat <<-EOF\n\tplain $HOME\n\tEOF\nls", ["cat", "ls"]),
    ("a=1 b=$(rm f) ls -l > $(rm g) 2>&1", ["ls -l", "rm f", "rm g"]),
    ("x=$(rm f)", ["rm f"]),
    ("export A=$(rm f) B", ["export ? B", "rm f"]),
    ("a && b || c; d & e | f |& g", ["a", "b", "c", "d", "e", "f", "g"]),
    ("(a; (b)) && { c; }", ["a", "b", "c"]),
    ("if a; then b; elif c; then d; else e; fi", ["a", "b", "c", "d", "e"]),
    ("for x in $(a); do b; done; for ((i=0; i<$(c); i++)); do d; done",
     ["a", "b", "c", "d"]),
    ("while a; do b; done; until c; do d; done", ["a", "b", "c", "d"]),
    ("case $(a) in x|y) b;; (z) c;; esac", ["a", "b", "c"]),
    ("f() { a; }; function g { b; }; h() ( c )", ["a", "b", "c"]),
    ("echo `a` \"$(b)\" \"`c`\" <(d) >(e) $((1 + $(f)))", ["echo ? ? ? ? ? ?", "a", "b", "c",
                                                          "d", "e", "f"]),
    ("[[ -n $(a) ]] && (( $(b) > 1 ))", ["a", "b"]),
    ("echo ${x:-$(a)} ${y/$(b)/c}", ["echo ? ?", "a", "b"]),
    ("! a", ["a"]),
    ("a=$''\\x72m rm f", ["rm f"]),  # x72m belongs to the assignment, as in bash
    ("git >/dev/null push origin", ["git push origin"]), ("git 2>&1 push", ["git push"]),
    ("cat <<EOF x\nEOF", ["cat x"]),  # words after a redirection are arguments
    ("command>x r\\\nm f", ["command rm f", "rm f"]), ("echo >x\\\nrm f", ["echo f"]),
    ("a\\\nx= rm f", ["rm f"]),  # ax= is an assignment once bash joins the lines
])
def test_every_simple_command_is_seen(command, commands):
    found, unknown = read(command)
    assert unknown is None
    assert found == commands


# --------------------------------------------------------------------------- wrappers, shells

@pytest.mark.parametrize(("command", "innermost"), [
    ("command rm f", "rm f"), ("command -p rm f", "rm f"), ("builtin echo x", "echo x"),
    ("exec -a name rm f", "rm f"), ("nohup rm f", "rm f"), ("time -p rm f", "rm f"),
    ("env -i -u HOME A=1 -- rm f", "rm f"), ("env =x rm f", "rm f"),
    ("env --chdir=/ --unset X rm f", "rm f"),
    ("nice -n 5 rm f", "rm f"), ("nice -5 rm f", "rm f"), ("nice --adjustment 3 rm f", "rm f"),
    ("ionice -c 3 -n 7 rm f", "rm f"), ("timeout -k 1 -s KILL 10 rm f", "rm f"),
    ("timeout --signal=TERM --preserve-status $T rm f", "rm f"),
    ("xargs -0 -n 1 -I{} rm {}", "rm {} ?"), ("xargs", "echo ?"), ("setsid -w rm f", "rm f"),
    ("stdbuf -o0 -eL rm f", "rm f"), ("sudo -u bob -E A=1 rm f", "rm f"),
    ("doas -u bob rm f", "rm f"), ("busybox rm f", "rm f"), ("coproc rm f", "rm f"),
    ("nice env timeout 5 nohup rm f", "rm f"),
])
def test_wrappers_are_seen_through(command, innermost):
    found, unknown = read(command)
    assert unknown is None
    assert found[0] == " ".join(command.split()).replace("$T", "?")
    assert found[-1] == innermost


@pytest.mark.parametrize("command", [
    "command -v rm", "command -V rm", "sudo -l rm", "sudo -e /etc/hosts", "ionice -p 12",
    "env", "nice", "time", "exec 3>f", "trap - INT", "trap -p", "trap INT",
])
def test_wrappers_that_run_nothing(command):
    line = shell.parse_line(command)
    assert [len(inv.views) for inv in line.invocations] == [1]
    assert line.invocations[0].script is None


@pytest.mark.parametrize(("command", "inner"), [
    ("sh -c 'rm f'", ["rm f"]), ("bash -lc 'a; b'", ["a", "b"]),
    ("bash -o pipefail -c 'a | b'", ["a", "b"]), ("bash -e -c 'a' name arg", ["a"]),
    ("bash --norc --rcfile x -c a", ["a"]), ("dash -c \"sh -c 'rm f'\"", ["sh -c rm f", "rm f"]),
    ("eval 'a && b'", ["a", "b"]), ("eval a b", ["a b"]), ("trap 'rm f' EXIT INT", ["rm f"]),
    ("find . -name '*.o' -exec rm {} \\; -execdir mv {} x +", ["rm ?", "mv ? x"]),
    ("/usr/bin/env bash -c 'rm f'", ["rm f"]), ("sudo -s rm f", ["rm f"]),
    ("sudo -i -u bob 'rm f; ls'", ["rm f", "ls"]), ("mapfile -t -C 'rm f' -c 1 a < x",
                                                     ["rm f"]), ("su -c 'rm f'", ["rm f"]),
    ("su bob -lc 'rm f'", ["rm f"]), ("runuser -u bob --command='rm f'", ["rm f"]),
])
def test_shell_code_in_strings_is_parsed(command, inner):
    found, unknown = read(command)
    assert unknown is None
    assert found[-len(inner):] == inner


@pytest.mark.parametrize("command", ["bash script.sh", "sh ./x.sh arg", "bash --version",
                                     "source venv/bin/activate", ". ./env.sh"])
def test_a_shell_running_a_script_file_runs_nothing_the_rules_can_see(command):
    line = shell.parse_line(command)
    assert next(line.unknowns(), None) is None
    assert line.invocations[0].script is None


# --------------------------------------------------------------------------- unknown

@pytest.mark.parametrize(("command", "why"), [
    ("$x f", "program name"), ('"${x:-rm}" f', "program name"), ("$(echo rm) f", "program name"),
    ("/bin/r? f", "program name"), ("/bin/r[m] f", "program name"), ("exec $x", "program name"),
    ("{rm,f}", "syntax"), ("r[m] f", "syntax"),
    ("cat <<EOF > out; rm g\nbody\nEOF", "syntax"),  # valid bash the grammar cannot read
    ("echo (", "syntax"), ("if true; then", "syntax"),
    ("eval \"$cmd\"", "eval runs"), ("sh -c \"$cmd\"", "sh -c runs"),
    ("echo rm f | sh", "standard input"), ("bash -s < x", "standard input"),
    ("sh <<< 'rm f'", "standard input"), ("trap \"$x\" EXIT", "trap runs"),
    ("fish -c 'rm f'", "syntax other than bash"), ("echo rm f | fish", "other than bash"),
    ("su bob", "su without -c"), ("bash <(curl -s x)", "from a pipe"),
    ("source /dev/stdin <<< 'rm f'", "from a pipe"), (". <(echo rm f)", "from a pipe"),
    ("sh \"$script\"", "from a pipe, a substitution or a variable"),
    ("mapfile -C \"$x\" a", "-C runs"), ("x=$ rm f", "'$' before a space"),
    ("x=\\\n rm f", "'=' before a space"), ("x\n\\\na=1 rm f", "lines the grammar joined"),
    ("x='a[$(rm f)] $('; echo $((x))", "quoted string with code"),
    ("a=1\\\n#x rm f", "part of a word"),
    ("{ ls; } >f x", "compound command"),
    ("sudo -s \"$x\"", "sudo runs"), ("env -S 'rm f'", "env option -S"),
    ("timeout --sig=KILL 5 rm f", "timeout option --sig"), ("nice -x rm f", "nice option -x"),
    ("echo `echo \\`rm f\\``", "backquotes nested"), ("cat <<EOF\n`rm f`\nEOF", "here-document"),
    ("cat <<-EOF\n\t$(rm f)\n\tEOF", "here-document"),
    ("time { rm f; }", "'{' where a command"), ("time if a; then rm f; fi", "'if' where"),
    ("coproc X { rm f; }", "coproc"), ("echo a\x00b", "NUL"),
    ("rm \ud800", "not valid Unicode"),
])
def test_what_cannot_be_seen_is_unknown(command, why):
    _, unknown = read(command)
    assert unknown is not None and why in unknown, unknown


@pytest.mark.parametrize(("command", "inside"), [
    ("x='a[$(rm f)]'; echo $((x))", ["rm f"]), ("printf -v 'a[`rm f`]' x", ["rm f"]),
    ("echo 'say \"$(ls -l)\" \\'", ["ls -l"]), ("[[ 'a[$(rm f)]' -eq 1 ]]", ["rm f"]),
    ("grep -n '$(' f", []), ("grep '`' README.md", []), ("sh -c 'echo $(date)'", []),
    ("cat <<'EOF'\na[$(rm f)]\nEOF", []),
])
def test_code_in_quoted_strings_is_noted(command, inside):
    line = shell.parse_line(command)
    assert [s for code in line.quoted_code for s in seen(code)] == inside
    assert next(line.unknowns(), None) is None


def test_nesting_is_bounded():
    command = "rm f"
    for _ in range(shell.MAX_DEPTH + 2):
        command = f"sh -c {_single_quoted(command)}"
    _, unknown = read(command)
    assert unknown is not None and "nested more than" in unknown
    deep = "echo " + "$(" * 2000 + "x" + ")" * 2000
    read(deep)  # unknown or not, it answers instead of raising


def _single_quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def test_threads_and_long_lines_read_the_same():
    commands = [f"git status {i} && sh -c 'rm f{i}' | nice cat" for i in range(300)]
    expected = [seen(shell._parse(c, 0)) for c in commands]
    results: dict[int, list[list[str]]] = {}

    def work(n: int) -> None:
        results[n] = [seen(shell._parse(c, 0)) for c in commands]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert all(results[n] == expected for n in range(4))
    body = "x\n" * shell.CACHED_LENGTH
    assert read(f"cat <<EOF\n{body}$(rm f)\nEOF") == (["cat", "rm f"], None)


def test_the_parser_is_imported_only_when_a_command_is_read():
    code = ("import sys, zpi_host.permissions as p; from zpi_host.permissions import matching; "
            "assert 'tree_sitter' not in sys.modules; "
            "matching.command_matches('rm:*', 'rm f', strict=False); "
            "assert 'tree_sitter' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --------------------------------------------------------------------------- rules

@pytest.mark.parametrize(("command", "allowed"), [
    ("git status", True), ("git status --short", True), ("git  status   -s", True),
    ("git status; git status -s", True), ("nice git status", True), ("time git status", True),
    ("sh -c 'git status --short'", True), ("GIT_PAGER=cat git status", False),
    ("LD_PRELOAD=x.so nice git status", False), ("env LD_PRELOAD=x.so git status", False),
    ("A=1 sh -c 'git status'", False), ("env -i git status", True),
    ("git status > out.txt", True), ("git status # note", True),
    ("git status && rm -rf /", False), ("git status $(rm x)", False),
    ("git status `rm x`", False), ("git status | sh", False), ("sudo git status", False),
    ("/usr/bin/git status", False), ("git stash", False), ("eval git status", True),
    ("eval \"$x\"", False), ("sh -c \"$x\"", False), ("$x status", False),
    ("git status <(rm x)", False), ("su -c 'git status'", False),
    ("sudo -s git status", False), ("bash -c 'git status'", True),
    ("f() { rm x; }; git status", False), ("", False),
    ("x=1", False),
])
async def test_an_allow_rule_must_match_every_command_the_line_runs(ws, command, allowed):
    p = policy(ws, "ask", allow=("bash(git status:*)",))
    assert (await check(p, BASH, command=command)).allowed is allowed


async def test_allow_rules_together_and_wrappers_with_other_rights(ws):
    p = policy(ws, "ask", allow=("bash(echo:*)", "bash(date)", "bash(sudo apt update)",
                                 "bash(sh:*)"))
    assert (await check(p, BASH, command="echo $(date)")).allowed
    assert not (await check(p, BASH, command="echo $(date -s x)")).allowed
    assert (await check(p, BASH, command="sudo apt update")).allowed
    assert not (await check(p, BASH, command="sudo echo hi")).allowed  # echo, not sudo echo
    assert (await check(p, BASH, command="sh -c \"$x\"")).allowed  # sh itself is allowed
    assert not (await check(p, BASH, command="x='a[$(date -s x)]'; echo $((x))")).allowed
    assert (await check(policy(ws, "ask", allow=("bash(grep:*)",)), BASH,
                        command="grep -rn '$(' src")).allowed
    named = policy(ws, "ask", allow=("bash(GIT_PAGER=cat git log:*)",))
    assert (await check(named, BASH, command="GIT_PAGER=cat git log -1")).allowed
    assert not (await check(named, BASH, command="GIT_PAGER=less git log")).allowed


@pytest.mark.parametrize(("pattern", "command", "denied"), [
    ("git push:*", "git status && git push", True), ("git push:*", "echo $(git push)", True),
    ("git push:*", "git $(echo push) origin", True), ("git push:*", "git log $x", False),
    ("git push:*", "$x", True), ("git push:*", "sh -c 'git push'", True),
    ("git push:*", "nice -n 1 git push -f", True), ("git push:*", "git pull", False),
    ("git push:*", "git >/dev/null push", True), ("rm:*", "rm $x", True),
    ("rm:*", "echo rm", False), ("rm:*", "command -v rm", False),
    ("/bin/rm:*", "rm f", True), ("rm:*", "/usr/local/bin/rm f", True),
    ("rm -rf:*", "rm -rf $x", True), ("rm -rf:*", "rm -i f", False),
    ("curl * | sh", "curl x | sh", True),  # a pattern may still name the whole line
])
def test_deny_rules_match_what_may_run(pattern, command, denied):
    assert matching.command_matches(pattern, command, strict=False) is denied


@pytest.mark.parametrize(("glob", "template", "meet"), [
    ("git push *", "git \x00", True), ("git push *", "git \x00 origin", True),
    ("git push", "git \x00 x", False), ("rm", "\x00", True), ("a*c", "ab\x00", True),
    ("abc", "x\x00", False), ("", "\x00", True), ("a", "", False),
])
def test_run_time_words_may_stand_for_anything(glob, template, meet):
    assert matching._globs_meet(glob, template) is meet


async def test_unknown_lines_under_each_kind_of_rule(ws):
    line = 'eval "$cmd"'
    denied = await check(policy(ws, "bypass", deny=("bash(git push:*)",)), BASH, command=line)
    assert not denied.allowed and denied.source == "rule"
    assert "cannot be fully checked: the code eval runs" in denied.reason
    plain = await check(policy(ws, "bypass", deny=("bash(rm:*)",)), BASH, command="rm f")
    assert "cannot be fully checked" not in plain.reason
    asked = await check(policy(ws, ask=("bash(git push:*)",), can_use_tool=lambda *a: False),
                        BASH, command=line)
    assert asked.source == "callback" and not asked.allowed
    assert (await check(policy(ws, "bypass", ask=("bash(git push:*)",)), BASH,
                        command=line)).allowed  # bypass ignores ask rules
    assert (await check(policy(ws), BASH, command=line)).allowed  # no rule: the mode decides
    assert (await check(policy(ws, allow=("bash(git:*)",)), BASH, command=line)).allowed
    in_ask_mode = await check(policy(ws, "ask", allow=("bash(git:*)",)), BASH, command=line)
    assert not in_ask_mode.allowed and in_ask_mode.source == "mode"
    assert (await check(policy(ws, "ask", allow=("bash",)), BASH, command=line)).allowed
    assert (await check(policy(ws, "ask", allow=(f"bash({line})",)), BASH,
                        command=line)).allowed  # a rule naming the exact line


@pytest.mark.parametrize(("command", "suggested"), [
    ("git push origin main", ["bash(git push:*)"]),
    ("nice -n 5 npm test && ls -la", ["bash(npm test:*)", "bash(ls:*)"]),
    ("sh -c 'make build; ./run.sh'", ["bash(make build:*)", "bash(./run.sh:*)"]),
    ("sudo apt install x", ["bash(sudo apt:*)"]), ("$x y", []),
    ("LANG=C sort -u x", ["bash(LANG=C sort:*)"]), ("X=$y make", []),
])
def test_suggested_rules_allow_what_was_asked(command, suggested):
    assert matching.suggest_command_rules("bash", command) == suggested
