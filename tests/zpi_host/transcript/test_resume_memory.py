"""What resuming a long session leaves to the garbage collector, and how often it resolves
the paths a session named."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from zpi_host.permissions import paths
from zpi_host.providers.messages import UserMessage
from zpi_host.session import housekeeping
from zpi_host.transcript import SessionManager, read_transcript


def _traced_read(path: Path) -> tuple[Any, int, int]:
    """``read_transcript(path)`` with what the Python heap keeps after it and its peak."""
    gc.collect()
    tracemalloc.start()
    try:
        transcript = read_transcript(path)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return transcript, kept, peak

def test_loaded_records_go_to_the_oldest_generation(tmp_path: Path) -> None:
    with SessionManager.create(tmp_path / "project", agent_dir=tmp_path / "agent") as manager:
        for i in range(20):
            manager.append_message(UserMessage.text(f"prompt {i}"))
        path = manager.path
    assert path is not None
    transcript = read_transcript(path)
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    records = [r for r in transcript.records if gc.is_tracked(r)]
    assert records and all(id(r) in oldest for r in records)
    assert gc.get_freeze_count() == 0  # nothing stays frozen: a library must not leak cycles
    assert gc.isenabled()


def test_each_named_path_is_resolved_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    from types import SimpleNamespace

    seen: list[str] = []
    absolute = paths.absolute

    def counting(raw: str, cwd: Path) -> Path:
        seen.append(raw)
        return absolute(raw, cwd)

    monkeypatch.setattr(paths, "absolute", counting)
    (tmp_path / "src").mkdir()
    stale = tmp_path / "src" / ".a.py.zpi-999999999-abcd1234.tmp"  # of a process that is gone
    stale.write_text("partial")
    records = [SimpleNamespace(TYPE="tool_use", name=name, arguments={"path": f"src/{f}"})
               for _ in range(50) for name in ("read", "write") for f in ("a.py", "b.py")]
    records.append(SimpleNamespace(TYPE="message"))
    assert housekeeping.sweep_touched_folders(records, tmp_path) == [stale]
    assert sorted(seen) == ["src/a.py", "src/b.py"]


def test_only_folders_inside_the_working_directory_are_swept(tmp_path: Path) -> None:
    """A record naming a folder elsewhere (a shared store may say anything) is data: the
    stale temporary files there are left alone."""
    from types import SimpleNamespace

    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    inside = work / ".a.py.zpi-999999999-abcd1234.tmp"
    outside = elsewhere / ".b.py.zpi-999999999-abcd1234.tmp"
    for stale in (inside, outside):
        stale.write_text("partial")
    records = [SimpleNamespace(TYPE="tool_use", name="write", arguments={"path": path})
               for path in ("a.py", str(elsewhere / "b.py"), "../elsewhere/b.py")]
    assert housekeeping.sweep_touched_folders(records, work) == [inside]
    assert outside.exists()


def test_reading_a_transcript_does_not_hold_the_file_three_times(tmp_path: Path) -> None:
    """The file's bytes, its text and its lines are let go while the records are built: the
    traced peak of ``read_transcript`` stays near what the records keep plus one copy of the
    file, where holding bytes, lines and records together took about four times the file."""
    from zpi_host.providers.messages import TextContent, ToolResultMessage

    with SessionManager.create(tmp_path / "project", agent_dir=tmp_path / "agent") as manager:
        for i in range(300):  # long results: the records hold little beside their text
            manager.append_message(ToolResultMessage(
                f"call_{i}", "read", (TextContent(f"line {i} " * 800),), False))
        path = manager.path
    assert path is not None
    size = path.stat().st_size
    transcript, kept, peak = _traced_read(path)
    assert len(transcript.records) == 301
    assert peak < kept + 1.3 * size, (peak / size, kept / size)


def _long_session(tmp_path: Path) -> Path:
    """A session of turns as a model makes them: an assistant message with a tool call, the
    call's journal record, a plugin's record naming the call, the result."""
    from zpi_host.providers.messages import (
        AssistantMessage,
        TextContent,
        ToolCallContent,
        ToolResultMessage,
    )

    with SessionManager.create(tmp_path / "project", agent_dir=tmp_path / "agent") as manager:
        for i in range(200):
            call = ToolCallContent(f"call_{i}", "read", {"path": f"src/m{i % 7}.py",
                                                         "limit": 200})
            manager.append_message(AssistantMessage((TextContent(f"reading {i}"), call),
                                                    "tool_use", provider="p", model="m"))
            manager.append_tool_use(call.id, call.name, call.arguments)
            manager.append_custom("bench.progress", {"hook": "PreToolUse",
                                                     "tool_use_id": call.id})
            manager.append_message(ToolResultMessage(
                call.id, "read", (TextContent(f"line {i} " * (200 + 100 * (i % 5))),), False,
                {"duration_ms": 1.5}))
        path = manager.path
    assert path is not None
    return path


def test_reading_holds_one_line_besides_the_records(tmp_path: Path) -> None:
    """The file is read one line at a time and each line let go once its record exists: the
    traced peak is what the records keep plus a few times the longest line (its bytes, its
    text, the reader's buffer), not a copy of the file."""

    path = _long_session(tmp_path)
    longest = max(len(line) for line in path.read_bytes().splitlines())
    size = path.stat().st_size
    assert size > 150 * longest  # else a copy of the file could pass for a few lines
    transcript, kept, peak = _traced_read(path)
    assert len(transcript.records) == 801
    assert peak < kept + 6 * longest + 16 * 1024, ((peak - kept) / longest, size / longest)


def test_equal_values_are_one_object_across_records(tmp_path: Path) -> None:
    """The session id, each parent uuid, a call's id, name and arguments repeated by its
    journal and result records, the keys of JSON objects: one object each, not a copy per
    record (the values are equal either way)."""
    from zpi_host.transcript.records import (
        AssistantRecord,
        CustomRecord,
        ToolResultRecord,
        ToolUseRecord,
    )

    records = read_transcript(_long_session(tmp_path)).records
    header, rest = records[0], records[1:]
    assert all(r.session_id is header.session_id for r in rest)
    assert all(r.parent_uuid is p.uuid for p, r in zip(records, rest, strict=False))
    assert all(r.extra is rest[0].extra and r.extra == {} for r in rest)
    for first in range(1, len(records), 4):
        assistant, use, custom, result = records[first:first + 4]
        assert isinstance(assistant, AssistantRecord) and isinstance(use, ToolUseRecord)
        assert isinstance(custom, CustomRecord) and isinstance(result, ToolResultRecord)
        call = assistant.message.content[1]
        assert use.call_id is call.id and use.name is call.name  # type: ignore[union-attr]
        assert use.arguments is call.arguments  # type: ignore[union-attr]
        assert result.call_id is call.id and result.message.call_id is call.id  # type: ignore[union-attr]
        assert custom.data["tool_use_id"] is call.id  # type: ignore[union-attr]
    keys = {id(k) for r in rest if isinstance(r, CustomRecord) for k in r.data}
    assert len(keys) == 2  # "hook" and "tool_use_id", once each
    roles = {id(r.message.role) for r in rest if isinstance(r, ToolResultRecord)}
    assert len(roles) == 1


def test_values_that_only_compare_equal_are_not_merged(tmp_path: Path) -> None:
    """``true`` equals ``1`` in Python, ``-0.0`` equals ``0.0`` and two objects with their keys
    in another order are equal: each record still holds exactly what its line says."""
    from zpi_host.providers.messages import AssistantMessage, ToolCallContent
    from zpi_host.transcript.codec import encode_record

    arguments = {"flag": 1, "scale": 0.0, "a": 1, "b": 2}
    with SessionManager.create(tmp_path / "project", agent_dir=tmp_path / "agent") as manager:
        call = ToolCallContent("call_1", "read", arguments)
        manager.append_message(AssistantMessage((call,), "tool_use"))
        manager.append_tool_use("call_1", "read", {"flag": True, "scale": 0.0, "a": 1, "b": 2})
        manager.append_tool_use("call_1", "read", {"flag": 1, "scale": -0.0, "a": 1, "b": 2})
        manager.append_tool_use("call_1", "read", {"flag": 1, "scale": 0.0, "b": 2, "a": 1})
        manager.append_tool_use("call_1", "read", dict(arguments))
        path = manager.path
    assert path is not None
    lines = path.read_bytes().splitlines()
    records = read_transcript(path).records
    for line, record in zip(lines, records, strict=True):  # each writes its line back as it was
        assert json.dumps(encode_record(record), separators=(",", ":")).encode() == line
    shared = records[1].message.content[0].arguments  # type: ignore[attr-defined]
    assert [r.arguments is shared for r in records[2:]] == [False, False, False, True]
    assert records[2].arguments["flag"] is True  # type: ignore[attr-defined]


def test_resumed_sessions_continue_their_branch(tmp_path: Path) -> None:
    """A linear session holds one list for its records and its branch; a branched one its
    branch apart: after a resume both append to the branch they continue, and the history
    the model sees is that branch with the new message."""
    from zpi_host.transcript.records import UserRecord, new_uuid, now

    with SessionManager.create(tmp_path / "project", agent_dir=tmp_path / "agent") as manager:
        for i in range(3):
            manager.append_message(UserMessage.text(f"prompt {i}"))
        path, sid = manager.path, manager.session_id
        first = manager.records[1].uuid
    assert path is not None
    with SessionManager.open(path) as linear:
        linear.append_message(UserMessage.text("linear"))
        assert [m.content[0].text for m in linear.messages()] == [  # type: ignore[union-attr]
            "prompt 0", "prompt 1", "prompt 2", "linear"]
    from zpi_host.transcript.codec import dump_line, encode_record

    fork = UserRecord(uuid=new_uuid(), parent_uuid=first, session_id=sid, timestamp=now(),
                      message=UserMessage.text("another branch"))
    with path.open("ab") as file:
        file.write(dump_line(encode_record(fork)))
    with SessionManager.open(path) as branched:
        branched.append_message(UserMessage.text("after the branch"))
        assert [m.content[0].text for m in branched.messages()] == [  # type: ignore[union-attr]
            "prompt 0", "another branch", "after the branch"]
        assert len(branched.records) == 7
    assert not read_transcript(path).linear
