"""Service ``builtins:init``: the ``/init`` command, which writes ``AGENTS.md`` for a project.

``/init`` sends the model a prompt to explore the workspace with its read-only tools (read,
bash for listing) and to answer with the whole ``AGENTS.md``. When the run ends
(``zpi_run_end``), the answer is written to ``AGENTS.md`` at the workspace root in one atomic
commit (:func:`zpi_host.fs.files.commit`). An existing file is refused before anything is asked,
unless ``/init --force``; the commit checks again, so a file that appeared or changed during
the run is never overwritten. A run that failed, was stopped or was cut off writes nothing;
the reason is a warning at the end of that run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from zpi_host import hookimpl
from zpi_host.errors import UsageError
from zpi_host.resources import Command
from zpi_host.support.attrs_methods import FieldsEq

from .runtime import BuiltinPluginRuntime, logger, runtime_for
from .settings import enabled

__all__ = ["INIT_COMMAND", "InitRefused", "agents_text", "zpi_register_commands",
           "zpi_run_end"]

FILE_NAME = "AGENTS.md"
#: the one stop reason after which the answer is whole
COMPLETE = "end_turn"
_FENCE = r"\A```[\w-]*\n(?P<body>.*?)\n?```\Z"  # compiled on first use (re's cache)

PROMPT = """\
Write AGENTS.md for this project: the file coding agents read first when they work here.

Explore the project before you write. Use only the read-only tools: read files, and bash \
for listing and searching (ls, find, git ls-files, git log --oneline -n 20, grep); change \
nothing. Look at the README, the build and package files, the test setup, CI configuration \
and the layout of the source.

Then answer with the complete content of AGENTS.md and nothing else (no preamble, no code \
fence around it); the host writes your answer to the file. Keep it short and specific to \
this project:
- what the project is, in two or three sentences;
- how to install, build, test and lint, with the exact commands;
- the layout: which folder holds what;
- conventions a change must follow (style, naming, tests, commits) that you found evidence of.
Do not invent commands or rules you did not see in the project."""


class InitRefused(UsageError):
    """``/init`` would replace an existing AGENTS.md without ``--force``, or was misused."""


@attrs.define(repr=False, eq=False, slots=False)
class PendingInit(FieldsEq):
    """An ``/init`` of this session waiting for its run to end."""

    target: Path
    expected: Any  # the file's fingerprint (--force) or None: it must not exist


class InitState:
    """The init service of one session: the ``/init`` waiting for its run to end."""

    def __init__(self, runtime: BuiltinPluginRuntime) -> None:
        self.pending: PendingInit | None = None


def agents_text(answer: str) -> str | None:
    """The model's answer as the file's text: one code fence around the whole answer
    removed, a final newline; None when nothing is left."""
    text = answer.strip()
    fenced = re.match(_FENCE, text, re.DOTALL)
    if fenced is not None:
        text = fenced.group("body").strip()
    return text + "\n" if text else None


def _arguments(arguments: str) -> bool:
    """Whether ``--force`` was given; anything else is refused."""
    words = arguments.split()
    unknown = [w for w in words if w != "--force"]
    if unknown:
        raise InitRefused(f"/init takes only --force, not {' '.join(unknown)!r} "
                          "(usage: /init [--force])")
    return bool(words)


async def start_init(arguments: str, context: Any) -> str:
    """The handler of ``/init``: check the target, remember it for the run's end, and give
    the model its prompt."""
    from zpi_host.fs.files import FileFingerprint

    force = _arguments(arguments)
    session = context.session
    target = Path(session.cwd) / FILE_NAME
    expected = None
    if target.is_symlink() or target.exists():
        if not force:
            raise InitRefused(f"{target} already exists; /init does not overwrite it. Run "
                              "/init --force to replace it, or edit the file yourself.")
        if not target.is_file() or target.is_symlink():
            raise InitRefused(f"{target} is not a regular file; /init replaces only a "
                              "regular AGENTS.md. Move it away and run /init again.")
        try:
            expected = FileFingerprint.of(target)
        except OSError as exc:
            raise InitRefused(f"{target} cannot be read ({exc.strerror}); /init --force "
                              "replaces only a file it can read.") from exc
    runtime_for(session).service("init", InitState).pending = PendingInit(target, expected)
    return PROMPT


INIT_COMMAND = Command("init", "explore the project and write AGENTS.md (--force replaces it)",
                       handler=start_init, argument_hint="[--force]")


@hookimpl
def zpi_register_commands(cwd: Path, settings: Mapping[str, Any]) -> list[Command] | None:
    return [INIT_COMMAND] if enabled(settings, "init") else None


def write_agents(pending: PendingInit, result: Any) -> str:
    """Write the run's answer to the file; what happened, for the log (raises a ZpiError
    with the reason when nothing was written)."""
    from zpi_host.errors import ZpiError
    from zpi_host.fs.files import FileChange, commit

    if result.is_error or result.stop_reason != COMPLETE:
        why = result.error or f"it stopped with {result.stop_reason!r}"
        raise ZpiError(f"{FILE_NAME} was not written: the /init run did not finish ({why})")
    text = agents_text(result.result)
    if text is None:
        raise ZpiError(f"{FILE_NAME} was not written: the model's answer was empty")
    commit([FileChange(pending.target, text.encode(), pending.expected)])
    return f"wrote {pending.target} ({text.count(chr(10))} lines)"


@hookimpl
def zpi_run_end(session: Any, result: Any) -> None:
    from zpi_host.errors import ZpiError

    state = runtime_for(session).service("init", InitState)
    pending, state.pending = state.pending, None
    if pending is None:
        return
    try:
        logger().info("zpi-builtins: %s", write_agents(pending, result))
    except ZpiError as exc:
        session.warn(str(exc))
