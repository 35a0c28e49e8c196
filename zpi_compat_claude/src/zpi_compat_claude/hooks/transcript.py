"""A Claude-shaped JSONL rendering of a session, for hooks that read ``transcript_path``.

Claude hooks open the file named by ``transcript_path`` and read Claude Code's transcript
records (``type`` user/assistant, ``message`` with ``role`` and content blocks ``text``,
``tool_use``, ``tool_result``, chained by ``uuid``/``parentUuid``). This host's own transcript
has a different format, so a rendering of the history is kept in a file per session and
brought up to date (by appending) just before matching handlers run; nothing is rendered for an
event no handler matches. The file is where Claude Code keeps its own:
``<agent dir>/projects/<working directory, every other character than letters and digits a
hyphen>/<session id>.jsonl``; a session without an agent directory gets one in a private
temporary folder, removed when the process exits. Lines are written compact (``,`` and ``:``
without spaces) as Claude Code writes them: hooks such as ralph-loop's Stop hook find the last
answer with ``grep '"role":"assistant"'``.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import tempfile
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .responses import claude_tool_response, images_of
from .toolnames import claude_tool_input, claude_tool_name

_NAMESPACE = uuid.UUID("5b0f8a52-7c0e-4d0c-9a57-1f1f3b2d9c01")


def _uuid(session_id: str, index: int) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{session_id}:{index}"))


def _blocks(content: Sequence[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            out.append({"type": "text", "text": block.text})
        elif kind == "image":
            out.append({"type": "image", "source": {"type": "base64",
                                                    "media_type": block.mime_type,
                                                    "data": block.data}})
    return out


def _arguments_of(messages: Sequence[Any], index: int, call_id: str) -> Any:
    """The arguments of the call ``call_id`` answered at ``index``: from the nearest assistant
    message before it that made the call (results follow their calls closely)."""
    for position in range(index - 1, -1, -1):
        message = messages[position]
        if getattr(message, "role", None) != "assistant":
            continue
        for block in message.content:
            if getattr(block, "type", None) == "tool_call" and block.id == call_id:
                return block.arguments
    return {}


def _is_reminder(text: str) -> bool:
    return text.startswith("<system-reminder>\n") and text.endswith("\n</system-reminder>")


def tool_use_result(message: Any, arguments: Any, cwd: Path | str) -> Any:
    """``toolUseResult`` of a tool_result record, as Claude Code writes it: the tool's
    response in the shape PostToolUse hooks get as ``tool_response``; for a failed call
    ``"Error: <text>"``. The text is the tool's own output, without the contexts hooks
    appended to the result (``<system-reminder>`` blocks)."""
    text = "\n".join(c.text for c in message.content if getattr(c, "type", "") == "text"
                     and not _is_reminder(c.text))
    if message.is_error:
        return f"Error: {text}"
    return claude_tool_response(message.tool_name, arguments, text, message.details, cwd,
                                images=images_of(message.content))


def claude_records(messages: Sequence[Any], *, session_id: str, cwd: Path | str,
                   version: str = "", start: int = 0) -> Iterator[dict[str, Any]]:
    """One Claude transcript record per message of ``messages`` (this host's Message types).

    uuids are derived from the session id and the message's position, so the same history
    renders the same chain every time; timestamps are the time of rendering (the history does
    not keep them). ``start``: render from that position on (the records before it exist).
    """
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    parent: str | None = _uuid(session_id, start - 1) if start else None
    for index in range(start, len(messages)):
        message = messages[index]
        role = getattr(message, "role", None)
        record: dict[str, Any] = {
            "parentUuid": parent, "isSidechain": False, "userType": "external",
            "cwd": str(cwd), "sessionId": session_id, "version": version,
        }
        if role == "user":
            record.update(type="user", message={"role": "user",
                                                "content": _blocks(message.content)})
        elif role == "context":
            record.update(type="user", isMeta=True, message={
                "role": "user", "content": [{"type": "text", "text": message.text}]})
        elif role == "assistant":
            content: list[dict[str, Any]] = []
            for block in message.content:
                kind = getattr(block, "type", None)
                if kind == "thinking" and getattr(block, "redacted", None) is not None:
                    content.append({"type": "redacted_thinking", "data": block.redacted})
                elif kind == "thinking":
                    content.append({"type": "thinking", "thinking": block.thinking,
                                    "signature": block.signature or ""})
                elif kind == "text":
                    content.append({"type": "text", "text": block.text})
                elif kind == "tool_call":
                    content.append({"type": "tool_use", "id": block.id,
                                    "name": claude_tool_name(block.name),
                                    "input": claude_tool_input(block.name, block.arguments,
                                                               cwd)})
            record.update(type="assistant", message={
                "role": "assistant", "model": getattr(message, "model", ""),
                "type": "message", "content": content,
                "stop_reason": getattr(message, "stop_reason", None),
                "usage": {"input_tokens": message.usage.input_tokens,
                          "output_tokens": message.usage.output_tokens},
            })
        elif role == "tool":
            text = "\n".join(c.text for c in message.content if getattr(c, "type", "") == "text")
            record.update(type="user", message={"role": "user", "content": [{
                "type": "tool_result", "tool_use_id": message.call_id, "content": text,
                "is_error": bool(message.is_error)}]},
                toolUseResult=tool_use_result(
                    message, _arguments_of(messages, index, message.call_id), cwd))
        else:
            continue
        record["uuid"] = _uuid(session_id, index)
        record["timestamp"] = stamp
        parent = record["uuid"]
        yield record


class TranscriptMirror:
    """The rendering of one session, kept up to date by appending what is new.

    ``update`` appends the records of messages added since the last call; when the history
    was replaced (a compaction) or the file was changed by someone else, it is written again
    from the start. One mirror per session serves every plugin of the process.
    """

    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self._count = 0
        self._last: Any = None
        self._size = 0

    def update(self, messages: Sequence[Any], cwd: Path | str, version: str = "") -> Path:
        count = len(messages)
        fresh = (count < self._count or (self._count and messages[self._count - 1] is not
                                         self._last) or self._file_size() != self._size)
        start = 0 if fresh else self._count
        if fresh or count > start:
            lines = [json.dumps(record, ensure_ascii=False, separators=(",", ":"),
                                default=str) + "\n"
                     for record in claude_records(messages, session_id=self.session_id,
                                                  cwd=cwd, version=version, start=start)]
            data = "".join(lines).encode("utf-8")
            with open(self.path, "wb" if fresh else "ab") as handle:
                handle.write(data)
            self._size = (0 if fresh else self._size) + len(data)
        self._count, self._last = count, messages[count - 1] if count else None
        return self.path

    def _file_size(self) -> int:
        try:
            return os.stat(self.path).st_size
        except OSError:
            return -1

    def forget(self) -> None:
        """No longer kept current: a temporary file is removed; one under the agent
        directory stays, as Claude Code's transcripts do."""
        if _folder and self.path.parent == _folder[0]:
            with contextlib.suppress(OSError):
                self.path.unlink()


#: most sessions whose mirror is kept; the least recently used one beyond is removed
MAX_MIRRORS = 32
_mirrors: OrderedDict[str, TranscriptMirror] = OrderedDict()
_folder: list[Path] = []


def _mirror_folder() -> Path:
    if not _folder:
        folder = Path(tempfile.mkdtemp(prefix="zpi-claude-transcripts-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _folder.append(folder)
    return _folder[0]


def project_folder_name(cwd: Path | str) -> str:
    """Claude Code's name for a project's transcript folder: the working directory with every
    character other than an ASCII letter or digit replaced by ``-`` (``/a/b.c`` -> ``-a-b-c``)."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in str(cwd))


def transcript_for(session_id: str, messages: Sequence[Any], cwd: Path | str,
                   version: str = "", agent_dir: Path | str | None = None) -> Path:
    """The path of the Claude-shaped transcript of ``session_id``, brought up to date with
    ``messages``: under ``agent_dir/projects/`` as Claude Code lays it out, or (no
    ``agent_dir``) in a private temporary folder removed when the process exits."""
    mirror = _mirrors.get(session_id)
    if mirror is None:
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id) or "session"
        if agent_dir is not None:
            folder = Path(agent_dir) / "projects" / project_folder_name(cwd)
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{safe}.jsonl"
        else:
            path = _mirror_folder() / f"{safe}-{uuid.uuid4().hex[:8]}.jsonl"
        mirror = _mirrors[session_id] = TranscriptMirror(path, session_id)
        while len(_mirrors) > MAX_MIRRORS:
            _mirrors.popitem(last=False)[1].forget()
    else:
        _mirrors.move_to_end(session_id)
    return mirror.update(messages, cwd, version)
