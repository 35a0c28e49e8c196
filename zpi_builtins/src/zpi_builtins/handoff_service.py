"""The hand-off service of ``builtins:handoff`` (:mod:`.handoff`, the plugin module, makes it
on first use): a hand-off document, then the context rebuilt around it.

``HandoffService.handoff()`` stops the run in progress, checks the real state of the working
tree (``git status`` and ``git diff --stat``, else the files this session changed), and has a
hand-off document written from the ``handoff`` skill's template (the one shipped in this
package, ``skills/handoff/SKILL.md``, unless the user or project has a skill of that name).
Every ``## `` heading of the template is a required section; a document without one, or
with one left empty, is refused. Two executors write it:

- ``self``: the agent, in its own session with its tools, is asked to write the document.
  While it does, ``write`` and ``edit`` of any other file, and ``bash`` lines that delete or
  move files, get a soft refusal that steers it back to the document (the kernel tools are
  wrapped through ``zpi_tool_overrides``; bash through a tool guard), and the context
  guard's ceiling is doubled.
- ``summary``: one side request without tools (purpose ``handoff``) writes it from the
  template, the state and an excerpt of the conversation; the service saves it.

``self`` falls back to ``summary`` once; while ``self`` runs, ``bash`` lines that delete or
move files get the same soft refusal (a session tool guard, ``SessionView.guard_tools``).
``migrate(strategy)`` then rebuilds the context through the compaction machinery (a
compaction record with no kept part and ``migration`` set, so a resumed session sees the
same context; the transcript file keeps every record): ``omit``, the default, leaves an
outline of the omitted records in the context and keeps them in the session's history
(``get_session_messages``, ``sessions show``), opened by an ``omitted`` mark; ``prune``
drops them from the context and from that history. A break-point message naming the
document follows. A hand-off that fails changes nothing: no message is lost, nothing is
migrated.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from zpi_host.errors import UsageError, ZpiError
from zpi_host.providers.messages import UserMessage
from zpi_host.support.attrs_methods import FrozenFieldsEq

from .context_guard import guard_for
from .handoff_constants import SERVICE
from .runtime import BuiltinPluginRuntime
from .settings import enabled, service_settings

__all__ = ["HandoffError", "HandoffResult", "HandoffService", "HandoffTemplate",
           "MigrationResult", "load_template", "missing_sections"]

PURPOSE = "handoff"
EXECUTORS = ("self", "summary")
STRATEGIES = ("omit", "prune")
BREAK_POINT_SOURCE = "handoff"
DEFAULT_TEMPLATE = Path(__file__).with_name("skills") / "handoff" / "SKILL.md"
GIT_TIMEOUT = 10.0
STATE_CHARS = 8_000
OUTLINE_LINES = 200
SUMMARY_TOKENS = 4_000
#: how much of the conversation (its most recent part) the ``summary`` executor sends
CONVERSATION_CHARS = 100_000
SUMMARY_SYSTEM = ("You write hand-off documents for a coding agent whose context is about to "
                  "be rebuilt. Answer with the document only, in Markdown, following the "
                  "template exactly. Do not invent anything the material does not show.")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


class HandoffError(ZpiError):
    """A hand-off that could not be written or validated; nothing was migrated."""


@attrs.frozen(repr=False, eq=False, slots=False)
class HandoffTemplate(FrozenFieldsEq):
    text: str
    sections: tuple[str, ...]
    source: Path


@attrs.frozen(repr=False, eq=False, slots=False)
class HandoffResult(FrozenFieldsEq):
    """A written, validated hand-off document."""

    path: Path
    executor: str  # the executor that wrote it
    #: why ``self`` failed when ``summary`` wrote it instead; None otherwise
    fell_back_because: str | None = None


@attrs.frozen(repr=False, eq=False, slots=False)
class MigrationResult(FrozenFieldsEq):
    strategy: str
    document: Path
    record_uuid: str  # the compaction record that starts the new context
    omitted: int  # messages that left the context


def load_template(skills: Sequence[Any]) -> HandoffTemplate:
    """The ``handoff`` skill's body (a user or project skill overrides the shipped one)
    and its required sections (its ``## `` headings)."""
    from zpi_host.resources.frontmatter import read_frontmatter

    skill = next((s for s in skills if getattr(s, "name", None) == SERVICE), None)
    path = Path(skill.path) if skill is not None else DEFAULT_TEMPLATE
    text = read_frontmatter(path)[1].strip()
    sections = tuple(m.group(2).strip() for m in _HEADING.finditer(text) if len(m.group(1)) == 2)
    if not sections:
        raise HandoffError(f"the hand-off template {path} has no '## ' sections, so no "
                           f"document could be validated; add each required section as a "
                           f"'## Name' heading")
    return HandoffTemplate(text, sections, path)


def missing_sections(document: str, sections: Sequence[str]) -> list[str]:
    """The required ``sections`` that ``document`` lacks or leaves empty (headings of any
    level, compared without case)."""
    headings = list(_HEADING.finditer(document))
    filled: set[str] = set()
    for index, match in enumerate(headings):
        end = headings[index + 1].start() if index + 1 < len(headings) else len(document)
        if document[match.end():end].strip():
            filled.add(match.group(2).strip().lower())
    return [s for s in sections if s.lower() not in filled]


async def real_state(cwd: Path, messages: Sequence[Any]) -> str:
    """What changed, checked now: ``git status`` and ``git diff --stat`` in ``cwd``, or, out
    of a git work tree, the files this session read and modified."""
    import subprocess

    import anyio

    async def git(*args: str) -> str | None:
        try:
            with anyio.fail_after(GIT_TIMEOUT):
                done = await anyio.run_process(["git", *args], cwd=cwd, check=False,
                                               stdin=subprocess.DEVNULL)
        except (OSError, TimeoutError):
            return None
        return done.stdout.decode(errors="replace") if done.returncode == 0 else None

    status = await git("status", "--porcelain=v1", "--branch")
    if status is not None:
        diff = await git("diff", "--stat", "HEAD") or ""
        text = (f"git status --porcelain --branch:\n{status.strip() or '(clean)'}\n\n"
                f"git diff --stat HEAD:\n{diff.strip() or '(no changes to tracked files)'}")
        return text[:STATE_CHARS]
    from zpi_host.agent.compaction import touched_files

    read, modified = touched_files(messages)
    return (f"{cwd} is not a git work tree (or git is missing). Files this session "
            f"modified: {', '.join(modified) or 'none'}; read: {', '.join(read) or 'none'}.")


class HandoffService:
    """The hand-off and migration of one session."""

    def __init__(self, runtime: BuiltinPluginRuntime) -> None:
        self.runtime = runtime
        config = service_settings(runtime.settings, SERVICE)
        self.directory = str(config["directory"])
        self.executor = str(config["executor"])
        self.busy = False
        #: an automatic hand-off waits for the end of the run (``builtins:auto_migrate``)
        self.scheduled = False
        #: the document the agent may write while the ``self`` executor runs
        self.writing: Path | None = None
        self.last: HandoffResult | None = None

    # ---------------------------------------------------------------------- hand-off

    async def handoff(self, executor: str | None = None) -> HandoffResult:
        """Stop the run in progress, check the real state, write and validate the document.
        Raises HandoffError (nothing changed) when no executor produced a valid one."""
        executor = executor or self.executor
        if executor not in EXECUTORS:
            raise UsageError(f"unknown hand-off executor {executor!r}; use one of "
                             f"{', '.join(EXECUTORS)}")
        if self.busy:
            raise HandoffError("a hand-off is already running in this session")
        self.busy = True
        session, ports = self.runtime.session, self.runtime.ports
        try:
            await ports.conversation.stop()
            template = load_template(session.skills)
            state = await real_state(session.cwd, session.messages)
            path = self._document_path()
            with guard_for(session).relaxed():
                fell_back = None
                if executor == "self":
                    try:
                        await self._by_self(path, template, state)
                    except HandoffError as exc:
                        fell_back = str(exc)
                if executor == "summary" or fell_back is not None:
                    try:
                        await self._by_summary(path, template, state)
                    except HandoffError as exc:
                        if fell_back is None:
                            raise
                        raise HandoffError(f"the agent's hand-off failed ({fell_back}) and so "
                                           f"did the summary ({exc})") from exc
            self.last = HandoffResult(path, "summary" if fell_back or executor == "summary"
                                      else "self", fell_back)
            return self.last
        finally:
            self.busy = False
            self.writing = None

    def _document_path(self) -> Path:
        from datetime import UTC, datetime

        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        session = self.runtime.session
        workspace = Path(session.cwd).resolve()
        path = (workspace / self.directory
                / f"handoff-{session.session_id[:8]}-{stamp}.md").resolve()
        if not path.is_relative_to(workspace):
            raise HandoffError(
                f"the hand-off directory {self.directory!r} (setting "
                f"plugins.builtins.handoff.directory) leads to {path.parent}, outside the "
                f"working directory {workspace}; choose a folder inside it")
        return path

    async def _by_self(self, path: Path, template: HandoffTemplate, state: str) -> None:
        prompt = (
            f"Stop the task here: the context is about to be rebuilt. Write a hand-off "
            f"document to {path} with the write tool, following the template below, then "
            f"answer with one line saying it is written. Until then it is the only file you "
            f"may write.\n\nTemplate ({template.source}):\n\n{template.text}\n\nThe real "
            f"state of the working tree, checked just now:\n\n{state}")
        self.writing = path
        stop_guarding = self.runtime.session.guard_tools(self.bash_refusal) \
            if enabled(self.runtime.settings, SERVICE) else (lambda: None)
        try:
            result = await self.runtime.ports.conversation.run(prompt)
        finally:
            self.writing = None
            stop_guarding()
        if result.is_error:
            raise HandoffError(f"the agent's run ended with an error: {result.result}")
        try:
            document = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise HandoffError(f"the agent did not write {path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise HandoffError(f"{path} cannot be read: {exc}") from exc
        self._validate(document, template, path)

    async def _by_summary(self, path: Path, template: HandoffTemplate, state: str) -> None:
        from zpi_host.agent.compaction import transcript_text

        model = self.runtime.ports.model
        if not model.can_answer(PURPOSE):
            raise HandoffError("the model cannot be asked for a hand-off (a scripted model "
                               "whose script has no turn with purpose 'handoff')")
        conversation = transcript_text(self.runtime.session.messages)
        if len(conversation) > CONVERSATION_CHARS:
            conversation = "[… earlier part left out]\n\n" + conversation[-CONVERSATION_CHARS:]
        prompt = (f"Write the hand-off document following this template:\n\n{template.text}"
                  f"\n\nThe real state of the working tree, checked just now:\n\n{state}\n\n"
                  f"The conversation so far:\n\n{conversation}")
        try:
            document = await model.complete(system=SUMMARY_SYSTEM, prompt=prompt,
                                            purpose=PURPOSE, max_tokens=SUMMARY_TOKENS)
        except ZpiError as exc:
            raise HandoffError(f"the hand-off request failed: {exc}") from exc
        self._validate(document, template, None)
        _write_atomically(path, document.strip() + "\n")

    @staticmethod
    def _validate(document: str, template: HandoffTemplate, path: Path | None) -> None:
        missing = missing_sections(document, template.sections)
        if missing:
            where = f"{path}" if path is not None else "the document"
            raise HandoffError(f"{where} lacks the section(s) {', '.join(missing)} required "
                               f"by the template {template.source} (or leaves them empty)")

    def refusal(self, cwd: Path, target: str) -> str | None:
        """The soft refusal for a write of ``target`` while the agent writes its hand-off;
        None when the write may go ahead."""
        if self.writing is None:
            return None
        if (Path(cwd) / target).resolve() == self.writing:
            return None
        return (f"Not now: during the hand-off the only file you may write is the hand-off "
                f"document {self.writing}. Put what you wanted to change into its next "
                f"steps, and write the document now.")

    def bash_refusal(self, call: Any) -> str | None:
        """The soft refusal for a ``bash`` call that deletes or moves files while the agent
        writes its hand-off (the kernel's shell reader sees through ``sudo``, ``sh -c``,
        ``find -delete``; a line whose commands cannot be told counts); None otherwise."""
        if self.writing is None or call.name != "bash":
            return None
        command = call.arguments.get("command")
        if not isinstance(command, str):
            return None
        from zpi_host.permissions.file_removals import removes_or_moves

        found = removes_or_moves(command)
        if found is None:
            return None
        return (f"Not now: during the hand-off no file may be deleted or moved ({found}). "
                f"The only file you may write is the hand-off document {self.writing}. Put "
                f"what you wanted to do into its next steps, and write the document now.")

    # ---------------------------------------------------------------------- migration

    async def migrate(self, strategy: str = "omit") -> MigrationResult:
        """Rebuild the context after the last hand-off: ``omit`` (the default) or ``prune``
        the records before it and inject the break point naming the document. Both take
        them out of the model's context; ``omit`` keeps them in the session's history
        (marked omitted), ``prune`` drops them from it too. Between runs only."""
        if strategy not in STRATEGIES:
            raise UsageError(f"unknown migration strategy {strategy!r}; use one of "
                             f"{', '.join(STRATEGIES)}")
        if self.last is None:
            raise HandoffError("there is no hand-off document to migrate to; run handoff() "
                               "first")
        messages = list(self.runtime.session.messages)
        document = self.last.path
        if strategy == "prune":
            summary = (f"The {len(messages)} earlier messages were pruned from the context "
                       f"and the session's history after a hand-off; the transcript file "
                       f"keeps their records.")
        else:
            summary = (f"The {len(messages)} earlier messages are omitted from the context "
                       f"after a hand-off and kept in the session's transcript for audit:\n"
                       + outline(messages))
        break_point = (f"Break point: the context was rebuilt after a hand-off ({strategy}). "
                       f"The hand-off document is {document}: read it first, then go on with "
                       f"its next steps.")
        uuid = self.runtime.ports.conversation.restart(summary, break_point, BREAK_POINT_SOURCE,
                                                       strategy)
        return MigrationResult(strategy, document, uuid, len(messages))

    async def handoff_and_migrate(self, executor: str | None, strategy: str) -> MigrationResult:
        await self.handoff(executor)
        return await self.migrate(strategy)


def outline(messages: Sequence[Any]) -> str:
    """One line per message (role and the start of its text or its calls), at most
    ``OUTLINE_LINES`` lines."""
    lines = []
    for message in messages[:OUTLINE_LINES]:
        role = getattr(message, "role", "?")
        calls = getattr(message, "tool_calls", ())
        if calls:
            text = ", ".join(f"{c.name}({_short(str(c.arguments), 60)})" for c in calls)
        elif role == "tool":
            text = f"result of {message.tool_name}" + (" (error)" if message.is_error else "")
        else:
            body = message.text_content if isinstance(message, UserMessage) else \
                getattr(message, "text", "")
            text = _short(str(body), 100)
        lines.append(f"- {role}: {text}")
    if len(messages) > OUTLINE_LINES:
        lines.append(f"- ... and {len(messages) - OUTLINE_LINES} more")
    return "\n".join(lines)


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _write_atomically(path: Path, text: str) -> None:
    """Write the document through the kernel's file commit (temporary file, fsync, rename;
    no symlink followed). It replaces what is there: the path is this hand-off's own, and a
    summary after a failed ``self`` attempt replaces the agent's rejected document."""
    from zpi_host.fs.files import ANY_STATE, FileChange, FileCommitError, commit

    try:
        commit([FileChange(path, text.encode("utf-8"), ANY_STATE)])
    except FileCommitError as exc:
        raise HandoffError(f"the hand-off document {path} could not be written: {exc}") \
            from exc
