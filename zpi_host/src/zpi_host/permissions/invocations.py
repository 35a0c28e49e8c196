"""What a bash command line runs, as data: the words of each simple command
(:class:`Invocation`) and the line they make up (:class:`ShellLine`).

Their own module because both sides build them: :mod:`.shell` reads the line, and
:mod:`.wrappers`, which :mod:`.shell` calls, sees through ``env``, ``sudo``, ``sh -c`` and the
like. Neither module needs the other's code to hold the result, and this one imports neither
(nor tree-sitter).
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from ..support.attrs_methods import FrozenFieldsEq

Word = str | None
"""A word as bash would pass it (quotes and backslashes removed), or None when its value is
only known at run time."""

@attrs.frozen(repr=False, eq=False, slots=False)
class Invocation(FrozenFieldsEq):
    """One simple command as written, and what it runs.

    ``views``: the command itself, then each command a wrapper runs (``nice rm f`` →
    ``nice rm f``, ``rm f``); ``assignments``: the ``NAME=value`` words before it, which allow
    rules must match too; ``allow_views``: how many leading views an allow rule may judge it by
    (not one after ``sudo``, ``doas`` or ``env NAME=value``: allowing ``rm`` does not allow
    ``sudo rm``);
    ``script``: the code a shell's ``-c`` string, ``eval``, ``trap``, ``su -c`` or ``sudo -s``
    runs in place of the last view; ``extras``: commands run besides it (``find -exec``);
    ``unknown``: why what it runs cannot be seen; ``script_allowable``: whether allow rules may
    judge it by its script's commands (not through ``sudo``, ``su`` or assignments)."""

    views: tuple[tuple[Word, ...], ...]
    allow_views: int
    assignments: tuple[Word, ...] = ()
    script: ShellLine | None = None
    extras: tuple[ShellLine, ...] = ()
    unknown: str | None = None
    script_allowable: bool = False

@attrs.frozen(repr=False, eq=False, slots=False)
class ShellLine(FrozenFieldsEq):
    """The invocations of a command line in source order, why the line itself could not be
    read (a parse error, too deep), if so, and ``quoted_code``: the commands in ``$(...)`` or
    backquotes inside quoted strings, which bash may still run (``x='a[$(rm f)]'; echo
    $((x))`` runs ``rm f`` through arithmetic). ``source``: the text read."""

    invocations: tuple[Invocation, ...]
    unknown: str | None = None
    quoted_code: tuple[ShellLine, ...] = ()
    source: str = attrs.field(default="", eq=False, repr=False)

    def unknowns(self) -> Iterator[str]:
        """Every reason anywhere in the line (scripts and extras included) why some of what
        it runs cannot be seen."""
        if self.unknown:
            yield self.unknown
        for code in self.quoted_code:
            yield from code.unknowns()
        for inv in self.invocations:
            if inv.unknown:
                yield inv.unknown
            for inner in (inv.script, *inv.extras):
                if inner is not None:
                    yield from inner.unknowns()
