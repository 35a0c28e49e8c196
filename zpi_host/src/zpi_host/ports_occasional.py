"""The value types of the host ports only some runs use: questions for the user, what the host
knows of a background task, a web search's hits. Importable from :mod:`.ports` too; apart so
that a run that asks nothing, starts no background task and searches nothing does not build
their classes."""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["Question", "QuestionOption", "SearchHit", "TaskInfo"]


@attrs.frozen
class QuestionOption:
    label: str
    description: str = ""


@attrs.frozen
class Question:
    """One question for the user: free text when it has no options, else a choice (several
    labels when ``multi_select``); the user may always type an answer of their own."""

    question: str
    header: str = ""
    options: tuple[QuestionOption, ...] = ()
    multi_select: bool = False


@attrs.frozen
class TaskInfo:
    """What the host knows about one background task (a command run with
    ``run_in_background``): a snapshot, safe to keep. ``status`` is ``running``,
    ``completed`` (exit code 0), ``failed`` (another exit code) or ``stopped`` (killed by
    ``task_stop``, ``stop_task``, the end of a plain run or of the session, or found ended on
    resume)."""

    task_id: str
    session_id: str
    command: str
    description: str
    status: str
    output_file: str
    pid: int | None = None
    pgid: int | None = None
    tool_use_id: str | None = None
    exit_code: int | None = None
    output_bytes: int = 0
    duration_ms: int = 0
    summary: str = ""

    @property
    def running(self) -> bool:
        return self.status == "running"

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class SearchHit:
    """One result of a web search."""

    title: str
    url: str
    snippet: str = ""
