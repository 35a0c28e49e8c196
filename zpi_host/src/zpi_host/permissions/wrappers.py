"""Programs that run other programs: which words of ``nice -n 5 timeout 10 rm f`` are the
command that really runs, and which shell code ``sh -c``, ``eval`` and ``trap`` run.

Options are read the way each program reads them (its short options, the ones that take a
value, its long options); an option not in the table makes the invocation unknown rather than
guessed, because a wrong guess would hide the command behind it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence

import attrs

from ..support.attrs_methods import FrozenFieldsEq
from .invocations import Invocation, ShellLine, Word

Parse = Callable[[str, int], ShellLine]
"""Reads shell code at a nesting depth: :func:`.shell.parse_line`, passed in by the parser
that calls :func:`unwrap` (this module sits below it and does not import it)."""


class _Unknown(Exception):
    """What the invocation runs cannot be seen; the message says why."""


@attrs.frozen(repr=False, eq=False, slots=False)
class Wrapper(FrozenFieldsEq):
    """How a program that runs a command reads its options.

    ``flags``/``valued``: short options without/with a value; ``optional``: short options
    whose value can only be attached (``xargs -i{}``); ``long_flags``/``long_valued``: long
    options (a flag may still carry ``=value``); ``no_command``: options after which no
    command runs (``command -v``); ``operands``: words before the command (``timeout``'s
    duration); ``assignments``: ``NAME=value`` words may come before the command;
    ``numeric``: ``nice -5``; ``transparent``: False when the command runs with other rights
    (``sudo``), so that allowing the command does not allow it through this program;
    ``appends``: the program adds arguments of its own (``xargs``); ``default``: the command
    run when none is given; ``via_shell``/``long_via_shell``: options after which the command's
    words are joined and run as shell code (``sudo -s``)."""

    flags: str = ""
    valued: str = ""
    optional: str = ""
    long_flags: frozenset[str] = frozenset()
    long_valued: frozenset[str] = frozenset()
    no_command: str = ""
    long_no_command: frozenset[str] = frozenset()
    operands: int = 0
    assignments: bool = False
    numeric: bool = False
    transparent: bool = True
    appends: bool = False
    default: tuple[str, ...] = ()
    via_shell: str = ""
    long_via_shell: frozenset[str] = frozenset()


def _set(*names: str) -> frozenset[str]:
    return frozenset(names)


WRAPPERS: dict[str, Wrapper] = {
    "command": Wrapper(flags="p", no_command="vV"),
    "builtin": Wrapper(),
    "exec": Wrapper(flags="cl", valued="a"),
    "nohup": Wrapper(),
    "time": Wrapper(flags="apqv", valued="fo", long_flags=_set(
        "--append", "--portability", "--quiet", "--verbose"),
        long_valued=_set("--format", "--output")),
    "env": Wrapper(flags="i0v", valued="uCP", assignments=True, long_flags=_set(
        "--ignore-environment", "--null", "--debug", "--block-signal", "--default-signal",
        "--ignore-signal", "--list-signal-handling"),
        long_valued=_set("--unset", "--chdir")),
    "nice": Wrapper(valued="n", numeric=True, long_valued=_set("--adjustment")),
    "ionice": Wrapper(flags="t", valued="cn", no_command="pPu", long_flags=_set("--ignore"),
                      long_valued=_set("--class", "--classdata"),
                      long_no_command=_set("--pid", "--pgid", "--uid")),
    "timeout": Wrapper(flags="v", valued="ks", operands=1, long_flags=_set(
        "--preserve-status", "--foreground", "--verbose"),
        long_valued=_set("--kill-after", "--signal")),
    "setsid": Wrapper(flags="cfw", long_flags=_set("--ctty", "--fork", "--wait")),
    "stdbuf": Wrapper(valued="ioe", long_valued=_set("--input", "--output", "--error")),
    "xargs": Wrapper(flags="0prtxo", valued="adEILnPs", optional="eil", appends=True,
                     default=("echo",), long_flags=_set(
                         "--null", "--no-run-if-empty", "--interactive", "--verbose", "--exit",
                         "--open-tty", "--show-limits", "--eof", "--replace", "--max-lines"),
                     long_valued=_set("--arg-file", "--delimiter", "--max-args", "--max-procs",
                                      "--max-chars", "--process-slot-var")),
    "sudo": Wrapper(flags="AbEHiKkSsnPB", valued="CDghprtTUuR", no_command="elvV",
                    assignments=True, transparent=False, via_shell="is",
                    long_via_shell=_set("--login", "--shell"), long_flags=_set(
                        "--askpass", "--background", "--bell", "--preserve-env", "--set-home",
                        "--reset-timestamp", "--non-interactive", "--preserve-groups",
                        "--stdin"),
                    long_valued=_set("--user", "--group", "--close-from", "--chdir", "--host",
                                     "--prompt", "--role", "--type", "--command-timeout",
                                     "--other-user", "--chroot"),
                    long_no_command=_set("--edit", "--list", "--validate", "--version",
                                         "--help", "--remove-timestamp")),
    "doas": Wrapper(flags="ns", valued="u", no_command="CL", transparent=False),
    "busybox": Wrapper(),
    "coproc": Wrapper(),
}

#: Words that are syntax in a command's place. The grammar does not know ``time`` and
#: ``coproc`` as keywords, so ``time { rm f; }`` reaches here as the words ``{``, ``rm``, ...
#: and ``time`` passes the words after it on as a command, where ``{`` is then refused.
RESERVED_WORDS = frozenset({"!", "{", "}", "[[", "]]", "case", "do", "done", "elif", "else",
                            "esac", "fi", "for", "function", "if", "in", "select", "then",
                            "until", "while"})

#: Shells whose ``-c`` string is bash-like enough to parse with the bash grammar.
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "rbash", "yash",
                    "posh", "lksh"})
#: Shells with another syntax: what they run is unknown unless they run a script file.
OTHER_SHELLS = frozenset({"fish", "csh", "tcsh", "nu", "xonsh", "elvish", "pwsh"})
_SHELL_LONG_VALUED = _set("--rcfile", "--init-file")
_SHELL_LONG_FLAGS = _set("--norc", "--noprofile", "--login", "--posix", "--restricted",
                         "--verbose", "--noediting", "--debugger", "--dump-strings",
                         "--dump-po-strings", "--protected", "--pretty-print")
_FIND_EXEC = _set("-exec", "-execdir", "-ok", "-okdir")
#: Paths that are a stream, not a file: a script read from them is another command's output.
_STREAMS = ("/dev/", "/proc/")
#: Builtins whose option runs shell code: ``mapfile -C CODE``.
_CALLBACK_OPTIONS = {"mapfile": "C", "readarray": "C"}


def program_name(word: str) -> str:
    """The name a rule knows a program by: the last part of a path (``/bin/rm`` → ``rm``)."""
    return posixpath.basename(word) or word


def unwrap(words: Sequence[Word], depth: int, assignments: tuple[Word, ...] = (), *,
           parse: Parse) -> Invocation:
    """The :class:`Invocation` of one simple command's words and the assignments before it
    (they change what the command does, so allow rules may judge it only as a whole);
    ``parse`` reads the shell code it runs (``sh -c``, ``eval``, ``trap`` ...)."""
    views: list[tuple[Word, ...]] = [tuple(words)]
    allow_views: int | None = 1 if assignments else None
    script: ShellLine | None = None
    extras: list[ShellLine] = []
    current = list(words)
    privileged = False  # su: its code runs as another user
    try:
        while True:
            program = current[0]
            if program is None:
                raise _Unknown("the program name is only known when the command runs (a "
                               "variable, a substitution, a glob or a brace expansion)")
            if program in RESERVED_WORDS:
                raise _Unknown(f"bash syntax the rules cannot read: {program!r} where a "
                               "command should be")
            name = program_name(program)
            args = current[1:]
            if name in SHELLS:
                script = _shell_script(name, args, depth, parse)
                break
            if name in OTHER_SHELLS and (not args or (args[0] is not None
                                         and args[0].startswith("-"))):
                raise _Unknown(f"{name} runs code in a syntax other than bash's")
            if name == "eval":
                script = _code(name, args, depth, " ".join(a or "" for a in args), parse)
                break
            if name == "trap":
                code = _trap_code(args)
                script = None if code is None else _code(name, [code], depth, code, parse)
                break
            if name in ("source", "."):
                if args:
                    _check_script_file(name, args[0])
                break
            if name in _CALLBACK_OPTIONS:
                code = _option_value(args, _CALLBACK_OPTIONS[name])
                script = None if code is None else _code(name, [code], depth, code or "",
                                                            parse)
                break
            if name in ("su", "runuser"):
                script = _code(name, [code := _su_code(name, args)], depth, code, parse)
                privileged = True
                break
            if name == "find":
                extras = [ShellLine((unwrap(c, depth, parse=parse),))
                          for c in _find_commands(args)]
                break
            if name == "coproc" and any(a in RESERVED_WORDS for a in args):
                raise _Unknown("bash syntax the rules cannot read: coproc of a compound "
                               "command")
            wrapper = WRAPPERS.get(name)
            if wrapper is None:
                break
            inner = _inner_command(name, wrapper, args)
            if not inner.words:
                break
            if (inner.sets_variables or not wrapper.transparent) and allow_views is None:
                allow_views = len(views)
            views.append(tuple(inner.words))
            if inner.via_shell:
                script = _code(name, inner.words, depth,
                               " ".join(w or "" for w in inner.words), parse)
                break
            current = inner.words
    except _Unknown as exc:
        return Invocation(tuple(views), allow_views or len(views), assignments, script,
                          tuple(extras), str(exc))
    allowable = script is not None and allow_views is None and not privileged
    return Invocation(tuple(views), allow_views or len(views), assignments, script,
                      tuple(extras), None, allowable)


@attrs.frozen(repr=False, eq=False, slots=False)
class _Inner(FrozenFieldsEq):
    """What a wrapper runs: ``words`` ([] for nothing); ``sets_variables``: ``NAME=value``
    words came first; ``via_shell``: the words are joined and run as shell code."""

    words: list[Word]
    sets_variables: bool = False
    via_shell: bool = False


def _inner_command(name: str, wrapper: Wrapper, args: list[Word]) -> _Inner:
    """The command ``name`` runs, from its arguments."""
    i = 0
    sets_variables = via_shell = False
    operands = wrapper.operands
    while i < len(args):
        arg = args[i]
        if arg is None:
            if operands:  # timeout's duration may be a variable: the command is still seen
                operands -= 1
                i += 1
                continue
            break  # the command's name: unwrap() says it is unknown
        if arg == "--":
            i += 1
            break
        if arg.startswith("--") and len(arg) > 2:
            option, has_value, _ = arg.partition("=")
            if option in wrapper.long_no_command:
                return _Inner([])
            via_shell = via_shell or option in wrapper.long_via_shell
            if option in wrapper.long_valued:
                i += 1 if has_value else 2
                continue
            if option in wrapper.long_flags or option in wrapper.long_via_shell:
                i += 1
                continue
            raise _Unknown(f"{name} option {option} is not one the rules know")
        if arg.startswith("-") and len(arg) > 1:
            taken = _short_options(name, wrapper, arg)
            if taken is None:
                return _Inner([])
            via_shell = via_shell or any(c in wrapper.via_shell for c in arg[1:])
            i += taken
            continue
        if wrapper.assignments and "=" in arg:  # env takes any word with '=' (even "=x")
            sets_variables = True
            i += 1
            continue
        if operands:
            operands -= 1
            i += 1
            continue
        break
    inner = list(args[i:]) or list(wrapper.default)
    if inner and wrapper.appends:
        inner.append(None)  # xargs adds the words it reads
    return _Inner(inner, sets_variables, via_shell)


def _short_options(name: str, wrapper: Wrapper, arg: str) -> int | None:
    """How many words a cluster of short options takes (``-n 5``: 2); None when one of them
    means that no command runs."""
    if wrapper.numeric and arg[1:].lstrip("-").isdigit():
        return 1
    for j, letter in enumerate(arg[1:], start=1):
        if letter in wrapper.no_command:
            return None
        if letter in wrapper.flags:
            continue
        if letter in wrapper.valued:
            return 1 if j + 1 < len(arg) else 2
        if letter in wrapper.optional:
            return 1
        raise _Unknown(f"{name} option -{letter} is not one the rules know")
    return 1


def _shell_script(name: str, args: list[Word], depth: int, parse: Parse
                  ) -> ShellLine | None:
    """The code a shell runs from ``-c``; None when it runs a script file; unknown when it
    reads its commands from standard input."""
    command_mode = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg is None:
            break  # the -c code or the script file is checked below
        if arg in ("--", "-"):
            i += 1
            break
        if arg.startswith("--") and len(arg) > 2:
            if arg in ("--version", "--help"):
                return None
            if arg in _SHELL_LONG_VALUED:
                i += 2
                continue
            if arg in _SHELL_LONG_FLAGS:
                i += 1
                continue
            raise _Unknown(f"{name} option {arg} is not one the rules know")
        if arg[:1] in "-+" and len(arg) > 1:
            letters = arg[1:]
            if "s" in letters:
                raise _Unknown(f"{name} -s reads the commands it runs from standard input")
            command_mode = command_mode or "c" in letters
            i += 2 if ("o" in letters or "O" in letters) else 1
            continue
        break
    if command_mode:
        if i >= len(args):
            return None
        code = args[i]
        if code is None:
            raise _Unknown(f"the code {name} -c runs is only known when the command runs")
        return parse(code, depth + 1)
    if i >= len(args):
        raise _Unknown(f"{name} without a script reads the commands it runs from standard "
                       "input")
    _check_script_file(name, args[i])
    return None


def _check_script_file(name: str, path: Word) -> None:
    """A script file is out of the rules' reach, but one that is the output of a command
    (``bash <(curl ...)``, ``source /dev/stdin``) is code in the line: unknown."""
    if path is None or path.startswith(_STREAMS):
        raise _Unknown(f"{name} runs code from a pipe, a substitution or a variable")


def _code(name: str, args: Sequence[Word], depth: int, code: str, parse: Parse) -> ShellLine:
    if any(a is None for a in args):
        raise _Unknown(f"the code {name} runs is only known when the command runs")
    return parse(code, depth + 1)


def _su_code(name: str, args: list[Word]) -> str:
    """The code ``su``/``runuser`` runs with ``-c CODE`` (``--command``); without it they
    read commands from standard input."""
    for i, arg in enumerate(args):
        if arg is None:
            continue
        if arg.startswith("--command=") or arg.startswith("--session-command="):
            return arg.partition("=")[2]
        wants = arg in ("--command", "--session-command") or (
            arg.startswith("-") and not arg.startswith("--") and arg.endswith("c"))
        if wants:
            code = args[i + 1] if i + 1 < len(args) else ""
            if code is None:
                raise _Unknown(f"the code {name} -c runs is only known when the command runs")
            return code
    raise _Unknown(f"{name} without -c reads the commands it runs from standard input")


def _option_value(args: list[Word], letter: str) -> Word | None:
    """The value of ``-X VALUE`` or ``-XVALUE`` among ``args`` (None if absent); a dynamic
    value is unknown."""
    for i, arg in enumerate(args):
        if arg is None or not arg.startswith("-") or arg.startswith("--"):
            continue
        at = arg.find(letter)
        if at > 0:
            value = arg[at + 1:] or (args[i + 1] if i + 1 < len(args) else "")
            if value is None:
                raise _Unknown(f"the code -{letter} runs is only known when the command runs")
            return value
    return None


def _trap_code(args: list[Word]) -> str | None:
    """The code ``trap CODE SIGNAL...`` runs later; None for ``trap -p``, ``trap - INT``,
    ``trap INT`` (reset) and the like."""
    if args and args[0] == "--":
        args = args[1:]
    if len(args) < 2 or args[0] == "-":
        return None
    if args[0] is None:
        raise _Unknown("the code trap runs is only known when the command runs")
    if args[0].startswith("-") and args[0] in ("-p", "-l", "-P"):
        return None
    return args[0]


def _find_commands(args: list[Word]) -> list[list[Word]]:
    """The commands of ``find ... -exec CMD {} ;`` (and -execdir, -ok, -okdir); ``{}`` is a
    file name known only when find runs."""
    commands: list[list[Word]] = []
    i = 0
    while i < len(args):
        if args[i] in _FIND_EXEC:
            command: list[Word] = []
            i += 1
            while i < len(args) and args[i] not in (";", "+"):
                word = args[i]
                command.append(None if word is None or "{}" in word else word)
                i += 1
            if command:
                commands.append(command)
        i += 1
    return commands
