"""claude-agent-sdk's session helpers over the kernel's transcript helpers.

Same names, arguments and return shapes as claude-agent-sdk (``directory`` is the project's
working directory); ``agent_dir`` (keyword) says where sessions are kept (default: as the
kernel, ``ZPI_AGENT_DIR`` or ``~/.zpi/agent``). Mutating a session that this process runs is
refused by the kernel helpers with :class:`~zpi_host.transcript.SessionBusyError`.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import attrs

from ..providers.messages import AssistantMessage, ContextMessage, ToolResultMessage, UserMessage
from ..support.attrs_methods import FieldsEq
from .translate import assistant_blocks, result_content

if TYPE_CHECKING:
    from ..providers.messages import Message
    from ..transcript import SessionInfo

__all__ = [
    "ForkSessionResult", "SDKSessionInfo", "SessionMessage", "delete_session", "fork_session",
    "get_session_info", "get_session_messages", "get_subagent_messages", "list_sessions",
    "list_subagents", "rename_session", "tag_session",
]

AgentDir = str | Path | None


@attrs.define(repr=False, eq=False, slots=False)
class SDKSessionInfo(FieldsEq):
    """A session as ``list_sessions`` shows it; times in milliseconds since the epoch."""

    session_id: str
    summary: str
    last_modified: int
    file_size: int | None = None
    custom_title: str | None = None
    first_prompt: str | None = None
    git_branch: str | None = None
    cwd: str | None = None
    tag: str | None = None
    created_at: int | None = None


@attrs.define(repr=False, eq=False, slots=False)
class SessionMessage(FieldsEq):
    """One user or assistant message of a transcript; ``message`` in the Anthropic API's
    shape (``role``, ``content`` blocks)."""

    type: Literal["user", "assistant"]
    uuid: str
    session_id: str
    message: dict[str, Any]
    #: a sub-agent's message: the ``Agent`` call of the parent session that started it
    parent_tool_use_id: str | None = None
    #: a sub-agent's message: the agent id of the sub-agent that started this one (None:
    #: started by the main session, or not known; always None for top-level messages)
    parent_agent_id: str | None = None


@attrs.define(repr=False, eq=False, slots=False)
class ForkSessionResult(FieldsEq):
    session_id: str


def _millis(stamp: str | None) -> int | None:
    if not stamp:
        return None
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def _info(info: SessionInfo) -> SDKSessionInfo:
    try:
        size: int | None = info.path.stat().st_size
    except OSError:
        size = None
    summary = info.title or info.first_prompt or info.problem or ""
    return SDKSessionInfo(
        session_id=info.session_id, summary=summary,
        last_modified=_millis(info.modified_at) or 0, file_size=size,
        custom_title=info.title, first_prompt=info.first_prompt,
        cwd=str(info.cwd) if info.cwd is not None else None,
        tag=info.tags[-1] if info.tags else None, created_at=_millis(info.created_at))


def _count(value: Any, name: str, *, optional: bool) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")


def list_sessions(directory: str | None = None, limit: int | None = None, offset: int = 0,
                  include_worktrees: bool = True, *, agent_dir: AgentDir = None
                  ) -> list[SDKSessionInfo]:
    """Sessions of ``directory`` (None: of every project), newest first. Worktrees are not
    searched (``include_worktrees`` has no effect)."""
    from ..transcript import list_sessions as kernel_list

    _count(limit, "limit", optional=True)
    _count(offset, "offset", optional=False)
    infos = kernel_list(directory, agent_dir=agent_dir)
    infos = infos[offset:] if limit is None else infos[offset:offset + limit]
    return [_info(i) for i in infos]


def get_session_info(session_id: str, directory: str | None = None, *,
                     agent_dir: AgentDir = None) -> SDKSessionInfo | None:
    """One session's listing entry; None when there is no such session."""
    from ..transcript import get_session_info as kernel_info

    found = kernel_info(session_id, agent_dir=agent_dir, cwd=directory)
    return _info(found) if found is not None else None


def _api_message(message: Message) -> tuple[Literal["user", "assistant"], dict[str, Any]]:
    if isinstance(message, AssistantMessage):
        blocks = []
        for block in assistant_blocks(message):
            data = attrs.asdict(block)
            data["type"] = {"TextBlock": "text", "ThinkingBlock": "thinking",
                            "ToolUseBlock": "tool_use"}[type(block).__name__]
            blocks.append(data)
        return "assistant", {"role": "assistant", "content": blocks,
                             "model": f"{message.provider}:{message.model}",
                             "stop_reason": message.stop_reason}
    if isinstance(message, ToolResultMessage):
        return "user", {"role": "user", "content": [{
            "type": "tool_result", "tool_use_id": message.call_id,
            "content": result_content(message.content), "is_error": message.is_error}]}
    if isinstance(message, ContextMessage):
        return "user", {"role": "user", "content": [{"type": "text", "text": message.text}]}
    assert isinstance(message, UserMessage)
    return "user", {"role": "user", "content": result_content(message.content)}


def get_session_messages(session_id: str, directory: str | None = None,
                         limit: int | None = None, offset: int = 0, *,
                         agent_dir: AgentDir = None) -> list[SessionMessage]:
    """The conversation of a session (``[]`` if there is no such session); ``limit`` and
    ``offset`` must be non-negative integers (else ValueError)."""
    from ..transcript import get_session_entries

    _count(limit, "limit", optional=True)
    _count(offset, "offset", optional=False)
    out = []
    for uuid, message in get_session_entries(session_id, limit, offset, agent_dir=agent_dir,
                                             cwd=directory):
        kind, data = _api_message(message)
        out.append(SessionMessage(kind, uuid, session_id, data))
    return out


def subagent_messages(owner: Any, session_id: str, limit: int | None,
                      offset: int) -> list[SessionMessage]:
    """A sub-agent's conversation (``owner``: its SessionManager) as SessionMessages of the
    parent ``session_id``, each naming the parent's tool call that started it."""
    from ..session.subagents import NAMESPACE
    from ..transcript import CustomRecord

    link = next((r.data for r in owner.records if isinstance(r, CustomRecord)
                 and r.namespace == NAMESPACE and isinstance(r.data, dict)
                 and r.data.get("event") == "link"), {})
    call_id = link.get("tool_call_id") or None
    started_by = link.get("parent_agent_id") or None
    pairs = owner.history_entries()
    pairs = pairs[offset:] if limit is None else pairs[offset:offset + limit]
    out = []
    for uuid, message in pairs:
        kind, data = _api_message(message)
        out.append(SessionMessage(kind, uuid, session_id, data,
                                  parent_tool_use_id=call_id if isinstance(call_id, str)
                                  else None,
                                  parent_agent_id=started_by if isinstance(started_by, str)
                                  else None))
    return out


def _subagent_files(session_id: str, directory: str | None, agent_dir: AgentDir
                    ) -> dict[str, Path]:
    """agent id -> its transcript, for a saved session (empty when there is none)."""
    from ..transcript.paths import agent_dir as default_agent_dir
    from ..transcript.paths import check_session_id, find_session, subagents_folder

    agent = Path(agent_dir) if agent_dir is not None else default_agent_dir()
    path = find_session(check_session_id(session_id), agent, directory)
    if path is None:
        return {}
    try:
        found = sorted(subagents_folder(path).glob("agent-*.jsonl"))
    except OSError:
        return {}
    return {p.name[len("agent-"):-len(".jsonl")]: p for p in found if p.is_file()}


def list_subagents(session_id: str, directory: str | None = None, *,
                   agent_dir: AgentDir = None) -> list[str]:
    """The ids of a saved session's sub-agents, sorted (``[]`` when it has none or there is
    no such session)."""
    return list(_subagent_files(session_id, directory, agent_dir))


def get_subagent_messages(session_id: str, agent_id: str, directory: str | None = None,
                          limit: int | None = None, offset: int = 0, *,
                          agent_dir: AgentDir = None) -> list[SessionMessage]:
    """A sub-agent's conversation (``[]`` when there is no such session or sub-agent);
    ``limit`` and ``offset`` as for :func:`get_session_messages`. Each message's
    ``parent_tool_use_id`` is the parent's tool call that started the sub-agent."""
    from ..transcript import SessionManager, read_transcript

    _count(limit, "limit", optional=True)
    _count(offset, "offset", optional=False)
    path = _subagent_files(session_id, directory, agent_dir).get(agent_id) \
        if isinstance(agent_id, str) else None
    if path is None:
        return []
    return subagent_messages(SessionManager(read_transcript(path)), session_id, limit, offset)


def rename_session(session_id: str, title: str, directory: str | None = None, *,
                   agent_dir: AgentDir = None) -> None:
    """Set a session's title."""
    from ..transcript import rename_session as kernel_rename

    kernel_rename(session_id, title, agent_dir=agent_dir, cwd=directory)


def tag_session(session_id: str, tag: str | None, directory: str | None = None, *,
                agent_dir: AgentDir = None) -> None:
    """Set a session's tag; None clears it."""
    from ..transcript import tag_session as kernel_tag

    kernel_tag(session_id, [] if tag is None else [tag], agent_dir=agent_dir, cwd=directory)


def delete_session(session_id: str, directory: str | None = None, *,
                   agent_dir: AgentDir = None) -> None:
    """Delete a session's file; deleting it twice is fine."""
    from ..transcript import delete_session as kernel_delete

    kernel_delete(session_id, agent_dir=agent_dir, cwd=directory)


def fork_session(session_id: str, directory: str | None = None,
                 up_to_message_id: str | None = None, title: str | None = None, *,
                 agent_dir: AgentDir = None) -> ForkSessionResult:
    """Copy a session (up to and including message ``up_to_message_id``) into a new session
    with new record and tool call ids; never reuses the old id. Without ``title`` the fork is
    titled as claude-agent-sdk does: the source's title (or first prompt) plus " (fork)"."""
    from ..transcript import fork_session as kernel_fork
    from ..transcript import get_session_info as kernel_info
    from ..transcript import rename_session as kernel_rename

    new_id = kernel_fork(session_id, up_to_message_id, agent_dir=agent_dir, cwd=directory)
    if title is None or not title.strip():
        source = kernel_info(session_id, agent_dir=agent_dir, cwd=directory)
        title = fork_title(source.title if source else None,
                           source.first_prompt if source else None)
    kernel_rename(new_id, title.strip(), agent_dir=agent_dir)
    return ForkSessionResult(new_id)


def fork_title(title: str | None, first_prompt: str | None) -> str:
    """A fork's title when none is given: the source's title, else its first prompt, else
    "Forked session", then " (fork)" (claude-agent-sdk's rule)."""
    return f"{title or first_prompt or 'Forked session'} (fork)"
