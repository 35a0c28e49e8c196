"""SessionManager: appending, fsync policy, repair, tool journal recovery, memory mode."""

from __future__ import annotations

import errno
import gc
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from zpi_host.errors import UsageError
from zpi_host.providers.messages import (
    AssistantMessage,
    ContextMessage,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from zpi_host.transcript import (
    InvalidSessionIdError,
    RecordError,
    SessionExistsError,
    SessionManager,
    SessionNotFoundError,
    TranscriptError,
    open_owner,
    project_key,
    read_transcript,
)
from zpi_host.transcript.records import ToolResultRecord, WarningRecord
from zpi_host.transcript.store import INTERRUPTED_TEXT, NOT_STARTED_TEXT

Lines = Callable[[Path], list[dict[str, Any]]]


def calls(*ids: str) -> AssistantMessage:
    return AssistantMessage(tuple(ToolCallContent(i, "bash", {"command": f"echo {i}"})
                                  for i in ids), "tool_use")


def result(call_id: str, text: str = "ok") -> ToolResultMessage:
    return ToolResultMessage(call_id, "bash", (TextContent(text),))


def test_create_writes_a_header_under_the_project_key(agent: Path, project: Path,
                                                      read_lines: Lines) -> None:
    with SessionManager.create(project, agent_dir=agent) as manager:
        path = manager.path
        assert path == agent / "sessions" / project_key(project) / f"{manager.session_id}.jsonl"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        (line,) = read_lines(path)
        assert line["type"] == "header" and line["version"] == 2
        assert line["parentUuid"] is None and line["sessionId"] == manager.session_id
        assert line["cwd"] == str(project) and line["createdAt"].endswith("Z")
        assert line["forkedFrom"] is None
        assert manager.cwd == project


def test_every_message_round_trips_through_the_file(agent: Path, project: Path,
                                                    messages: list[Any]) -> None:
    with SessionManager.create(project, agent_dir=agent) as manager:
        for message in messages:
            manager.append_message(message)
        assert manager.messages() == messages
        records = list(manager.records)
        sid = manager.session_id
    with SessionManager.open(sid, agent_dir=agent) as again:
        assert list(again.records) == records
        assert again.messages() == messages
        assert again.warnings == []


def test_records_chain_and_flush_per_record(agent: Path, project: Path,
                                            read_lines: Lines) -> None:
    with SessionManager.create(project, agent_dir=agent) as manager:
        first = manager.append_message(UserMessage.text("a"))
        assert len(read_lines(manager.path)) == 2  # on disk before sync()
        second = manager.append("model_change", provider="p", model="m")
        assert second.parent_uuid == first.uuid == read_lines(manager.path)[2]["parentUuid"]
        assert manager.leaf_uuid == second.uuid
        view = manager.records
        manager.append("reasoning_level", level="high")
        assert len(view) == 3 and len(manager.records) == 4


def count_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    return synced


def test_fsync_per_turn_is_the_default(agent: Path, project: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    synced = count_fsyncs(monkeypatch)
    manager = SessionManager.create(project, agent_dir=agent)
    for i in range(3):
        manager.append_message(UserMessage.text(str(i)))
    assert synced == []  # written and flushed, not yet synced
    manager.sync()  # end of turn: the file, and (once) the new file's folder entry
    assert len(synced) == 2
    manager.sync()
    assert len(synced) == 2  # nothing new: no fsync
    manager.append_message(UserMessage.text("late"))
    manager.close()
    assert len(synced) == 3
    manager.close()
    assert len(synced) == 3


def test_fsync_per_record(agent: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced = count_fsyncs(monkeypatch)
    manager = SessionManager.create(project, agent_dir=agent, fsync="record")
    assert len(synced) == 2  # the header and the folder entry
    for i in range(3):
        manager.append_message(UserMessage.text(str(i)))
    assert len(synced) == 5
    manager.sync()
    manager.close()
    assert len(synced) == 5
    with SessionManager.open(manager.session_id, agent_dir=agent, fsync="record") as again:
        again.append_message(UserMessage.text("again"))
        assert len(synced) == 6


def test_unknown_fsync_policy_is_a_usage_error(agent: Path, project: Path) -> None:
    with pytest.raises(UsageError, match="fsync must be one of turn, record"):
        SessionManager.create(project, agent_dir=agent, fsync="always")  # type: ignore[arg-type]
    assert not agent.exists()


def test_given_session_ids_are_checked(agent: Path, project: Path) -> None:
    sid = "0b6b1c1e-5d0a-4f55-9d1e-3f5a2f1d6c2b"
    with SessionManager.create(project, agent_dir=agent, session_id=sid.upper()) as manager:
        assert manager.session_id == sid
        manager.append_message(UserMessage.text("kept"))
    with pytest.raises(SessionExistsError, match="already exists"):
        SessionManager.create(project, agent_dir=agent, session_id=sid)
    for bad in ("../../etc/passwd", "x", ""):
        with pytest.raises(InvalidSessionIdError, match="session ids are UUIDs"):
            SessionManager.create(project, agent_dir=agent, session_id=bad)


def test_open_by_id_path_and_missing(agent: Path, project: Path, tmp_path: Path) -> None:
    with SessionManager.create(project, agent_dir=agent) as manager:
        manager.append_message(UserMessage.text("kept"))
        sid, path = manager.session_id, manager.path
    with SessionManager.open(sid, agent_dir=agent, cwd=tmp_path / "elsewhere") as m:
        assert m.path == path  # found in another project
    with SessionManager.open(path) as m:
        assert m.session_id == sid
    with pytest.raises(SessionNotFoundError, match="no session '1b6b1c1e"):
        SessionManager.open("1b6b1c1e-5d0a-4f55-9d1e-3f5a2f1d6c2b", agent_dir=agent)
    with pytest.raises(SessionNotFoundError, match="no session file"):
        SessionManager.open(tmp_path / "none.jsonl")


def test_a_session_created_and_never_used_leaves_no_file(agent: Path, project: Path) -> None:
    with SessionManager.create(project, agent_dir=agent) as manager:
        path = manager.path
        assert path.exists()  # locked and owned while open
    assert not path.exists()
    with SessionManager.create(project, agent_dir=agent) as manager:
        manager.append_message(UserMessage.text("used"))
    assert manager.path.exists()


def test_invalid_appends_write_nothing(agent: Path, project: Path) -> None:
    with SessionManager.create(project, agent_dir=agent) as manager:
        manager.append_message(UserMessage.text("a"))
        before = manager.path.read_bytes()
        bad: list[tuple[str, dict[str, Any], str]] = [
            ("header", {}, "cannot append a 'header' record"),
            ("hologram", {}, "cannot append a 'hologram' record"),
            ("reasoning_level", {"level": None}, "expected a string, got null"),
            ("title", {"title": "t", "colour": 1}, "no field(s) ['colour']"),
            ("model_change", {"provider": "p"}, "cannot make a 'model_change' record"),
            ("custom", {"namespace": "a/b", "data": 1}, "must look like 'plugin.name'"),
            ("custom", {"namespace": "a.b", "data": {1, 2}}, "not JSON-serialisable"),
            ("compaction", {"summary": "s", "first_kept_uuid": "nope", "tokens_before": 1,
                            "tokens_after": 1}, "does not name an earlier record"),
            ("tool_result", {"call_id": "a", "message": result("b")}, "differs from"),
        ]
        for kind, fields, problem in bad:
            with pytest.raises(RecordError) as info:
                manager.append(kind, **fields)
            assert problem in str(info.value), kind
        with pytest.raises(RecordError):
            manager.set_title("  ")
        with pytest.raises(RecordError):
            manager.set_tags(["ok", ""])
        assert manager.path.read_bytes() == before
        assert len(manager.records) == 2


def test_appending_after_close_is_an_error(agent: Path, project: Path) -> None:
    manager = SessionManager.create(project, agent_dir=agent)
    manager.close()
    assert manager.closed
    with pytest.raises(UsageError, match="was closed"):
        manager.append_message(UserMessage.text("late"))


def test_state_accessors(agent: Path, project: Path) -> None:
    with SessionManager.create(project, agent_dir=agent) as m:
        assert (m.last_model(), m.last_reasoning_level(), m.latest_snapshot()) == (None,) * 3
        assert (m.title, m.tags) == (None, ())
        m.append_message(AssistantMessage((TextContent("x"),), provider="anthropic",
                                          model="claude"))
        assert m.last_model() == ("anthropic", "claude")  # no model_change yet: the message's
        m.append("model_change", provider="openai", model="gpt")
        m.append_message(AssistantMessage((TextContent("y"),), provider="openai",
                                          model="fallback"))
        assert m.last_model() == ("openai", "gpt")  # the choice, not a one-off fallback
        m.append("reasoning_level", level="low")
        m.append("reasoning_level", level="high")
        m.append("snapshot", snapshot={"v": 1})
        m.append("snapshot", snapshot={"v": 2})
        m.set_title("first")
        m.set_title(" second ")
        m.set_tags(["a", "b", "a"])
        assert (m.last_reasoning_level(), m.latest_snapshot()) == ("high", {"v": 2})
        assert (m.title, m.tags) == ("second", ("a", "b"))
        m.set_tags([])
        assert m.tags == ()
        custom = m.append_custom("memory.facts", {"k": [1]})
        assert custom.data == {"k": [1]}  # type: ignore[attr-defined]
        sid = m.session_id
    with SessionManager.open(sid, agent_dir=agent) as again:
        assert again.last_model() == ("openai", "gpt")
        assert (again.last_reasoning_level(), again.latest_snapshot()) == ("high", {"v": 2})
        assert (again.title, again.tags) == ("second", ())


# ---------------------------------------------------------------------------- torn lines


def torn_session(agent: Path, project: Path) -> tuple[str, Path, bytes, bytes]:
    with SessionManager.create(project, agent_dir=agent) as m:
        m.append_message(UserMessage.text("before the crash"))
        sid, path = m.session_id, m.path
    complete = path.read_bytes()
    torn = b'{"type":"assistant","uuid":"0f2c'
    path.write_bytes(complete + torn)
    return sid, path, complete, torn


def test_torn_line_is_repaired_only_on_the_owners_next_write(agent: Path, project: Path,
                                                             read_lines: Lines) -> None:
    sid, path, complete, torn = torn_session(agent, project)
    manager = SessionManager.open(sid, agent_dir=agent)
    assert len(manager.warnings) == 1 and "dropped a torn final line" in manager.warnings[0]
    assert path.read_bytes() == complete + torn  # opened, nothing written yet
    manager.append_message(UserMessage.text("after"))
    manager.close()
    lines = read_lines(path)
    assert path.read_bytes().startswith(complete)
    assert [line["type"] for line in lines] == ["header", "user", "warning", "user"]
    assert lines[2]["code"] == "torn_line_removed" and f"({len(torn)} bytes)" in lines[2]["text"]
    again = read_transcript(path)
    assert again.warnings == () and isinstance(again.records[2], WarningRecord)


def test_a_reader_never_repairs(agent: Path, project: Path) -> None:
    from zpi_host.transcript import get_session_messages, list_sessions

    sid, path, complete, torn = torn_session(agent, project)
    read_transcript(path)
    list_sessions(project, agent_dir=agent)
    assert get_session_messages(sid, agent_dir=agent) == [UserMessage.text("before the crash")]
    assert path.read_bytes() == complete + torn


def test_a_complete_line_without_newline_gets_one(agent: Path, project: Path) -> None:
    with SessionManager.create(project, agent_dir=agent) as m:
        m.append_message(UserMessage.text("a"))
        sid, path = m.session_id, m.path
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    with SessionManager.open(sid, agent_dir=agent) as m:
        assert m.warnings == []
        m.append_message(UserMessage.text("b"))
    assert [type(r).__name__ for r in read_transcript(path).records] == \
        ["HeaderRecord", "UserRecord", "UserRecord"]


def test_a_failed_write_is_cut_before_the_next(agent: Path, project: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    manager = SessionManager.create(project, agent_dir=agent)
    manager.append_message(UserMessage.text("ok"))
    real = os.write

    def half_then_full(fd: int, data: Any) -> int:
        real(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(TranscriptError, match=r"could not append a 'user' record.*No space"):
        manager.append_message(UserMessage.text("lost"))
    monkeypatch.setattr(os, "write", real)
    assert manager.messages() == [UserMessage.text("ok")]
    manager.append_message(UserMessage.text("next"))
    manager.close()
    transcript = read_transcript(manager.path)
    assert transcript.warnings == ()
    assert [type(r).__name__ for r in transcript.records][-2:] == ["WarningRecord", "UserRecord"]


# --------------------------------------------------------------------------- tool journal


def test_pending_calls_are_closed_as_interrupted_on_open(agent: Path, project: Path) -> None:
    with SessionManager.create(project, agent_dir=agent) as m:
        m.append_message(UserMessage.text("run things"))
        m.append_message(calls("c1", "c2", "c3"))
        m.append_tool_use("c1", "bash", {"command": "echo c1"})
        m.append_message(result("c1", "done"))
        m.append_tool_use("c2", "bash", {"command": "echo c2"})  # crashed while running
        sid = m.session_id  # c3 never started
    with SessionManager.open(sid, agent_dir=agent) as m:
        tail = m.messages()[-3:]
        assert tail[0] == result("c1", "done")
        assert tail[1] == ToolResultMessage("c2", "bash", (TextContent(INTERRUPTED_TEXT),), True,
                                            {"interrupted": True})
        assert tail[2] == ToolResultMessage("c3", "bash", (TextContent(NOT_STARTED_TEXT),),
                                            True, {"interrupted": True})
        assert "closed 2 tool call(s)" in m.warnings[0] and "bash (c2)" in m.warnings[0]
        count = len(m.records)
    with SessionManager.open(sid, agent_dir=agent) as m:
        assert len(m.records) == count and m.warnings == []  # nothing left to close


def test_a_call_journaled_while_streaming_is_closed_only_if_its_message_was_written(
        agent: Path, project: Path) -> None:
    # read-only calls may start before the assistant message that holds them is recorded
    with SessionManager.create(project, agent_dir=agent) as m:
        m.append_message(UserMessage.text("look"))
        m.append_tool_use("early", "read", {"path": "a"})
        m.append_message(calls("early"))
        m.append_message(UserMessage.text("again"))
        m.append_tool_use("orphan", "read", {"path": "b"})  # crash before its message
        sid = m.session_id
    with SessionManager.open(sid, agent_dir=agent) as m:
        results = [x for x in m.messages() if isinstance(x, ToolResultMessage)]
        assert [(r.call_id, r.content[0].text) for r in results] == [
            ("early", INTERRUPTED_TEXT)]


def test_recover_false_leaves_the_journal_alone(agent: Path, project: Path) -> None:
    with SessionManager.create(project, agent_dir=agent) as m:
        m.append_message(calls("c1"))
        m.append_tool_use("c1", "bash", {})
        sid = m.session_id
    with SessionManager.open(sid, agent_dir=agent, recover=False) as m:
        assert not any(isinstance(r, ToolResultRecord) for r in m.records)


CRASHER = """
import os, signal, sys
from zpi_host.providers.messages import AssistantMessage, ToolCallContent, UserMessage
from zpi_host.transcript import SessionManager
m = SessionManager.create(sys.argv[1], agent_dir=sys.argv[2])
print(m.session_id, flush=True)
m.append_message(UserMessage.text("delete the temp files"))
m.append_message(AssistantMessage((ToolCallContent("toolu_9", "bash", {"command": "rm x"}),),
                                  "tool_use"))
m.append_tool_use("toolu_9", "bash", {"command": "rm x"})
os.write(os.open(sys.argv[3], os.O_WRONLY | os.O_CREAT), b"ran")  # the tool ran once
os.kill(os.getpid(), signal.SIGKILL)  # ... and the process died before recording a result
"""


def test_a_killed_process_leaves_a_journal_that_is_closed_not_rerun(
    agent: Path, project: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    proc = subprocess.run([sys.executable, "-c", CRASHER, str(project), str(agent), str(marker)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -9, proc.stderr
    sid = proc.stdout.strip()
    marker.unlink()
    with SessionManager.open(sid, agent_dir=agent) as m:  # the dead process's lock is gone
        last = m.messages()[-1]
        assert isinstance(last, ToolResultMessage) and last.is_error
        assert last.call_id == "toolu_9" and "interrupted" in last.content[0].text  # type: ignore[union-attr]
    assert not marker.exists()  # not re-run


# ----------------------------------------------------------------------------- memory


def test_memory_mode_has_the_same_api_and_no_files(tmp_path: Path, messages: list[Any]) -> None:
    before = sorted(tmp_path.rglob("*"))
    manager = SessionManager.in_memory(tmp_path)
    assert manager.path is None and manager.in_memory_only
    for message in messages:
        manager.append_message(message)
    manager.append_tool_use("toolu_x", "read", {})
    manager.append("model_change", provider="p", model="m")
    manager.set_title("mem")
    manager.sync()
    assert manager.messages() == messages
    assert (manager.last_model(), manager.title) == (("p", "m"), "mem")
    assert open_owner(tmp_path) is None
    with pytest.raises(RecordError):
        manager.append("custom", namespace="x", data={1})
    manager.close()
    with pytest.raises(UsageError):
        manager.append_message(UserMessage.text("late"))
    assert sorted(tmp_path.rglob("*")) == before


def test_memory_mode_takes_a_session_id(tmp_path: Path) -> None:
    sid = "0b6b1c1e-5d0a-4f55-9d1e-3f5a2f1d6c2b"
    assert SessionManager.in_memory(tmp_path, session_id=sid).session_id == sid
    with pytest.raises(InvalidSessionIdError):
        SessionManager.in_memory(tmp_path, session_id="../x")


def test_context_messages_are_kept_as_context_records(tmp_path: Path) -> None:
    manager = SessionManager.in_memory(tmp_path)
    record = manager.append_message(ContextMessage("note", "plugin-a"))
    assert record.type == "context" and manager.messages() == [ContextMessage("note", "plugin-a")]


def test_a_dropped_manager_releases_its_lock(agent: Path, project: Path) -> None:
    manager = SessionManager.create(project, agent_dir=agent)
    sid, path = manager.session_id, manager.path
    assert open_owner(path) is manager
    del manager
    gc.collect()
    assert open_owner(path) is None
    with SessionManager.open(sid, agent_dir=agent):
        pass


def test_lines_are_one_json_object_each(agent: Path, project: Path,
                                        messages: list[Any]) -> None:
    with SessionManager.create(project, agent_dir=agent) as m:
        for message in messages:
            m.append_message(message)
        data = m.path.read_bytes()
    assert data.isascii() and data.endswith(b"\n")
    for line in data.splitlines():
        assert isinstance(json.loads(line), dict)
