"""A compaction lets the records it took out of the context go from memory (the file keeps
them): everything read from the session is what the file says, a long session compacted
again and again holds about one context, and a file changed underneath is an error."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path

import pytest

from zpi_host.providers.messages import (
    AssistantMessage,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from zpi_host.transcript import SessionManager, TranscriptError, history, read_transcript
from zpi_host.transcript.records import Record


def turn(m: SessionManager, n: int) -> list[Record]:
    """One tool-using turn: prompt, call, journal, result, answer."""
    call = f"call-{n}"
    return [m.append_message(UserMessage.text(f"prompt {n}")),
            m.append_message(AssistantMessage((ToolCallContent(call, "read", {"n": n}),),
                                              "tool_use", provider="openai", model="gpt")),
            m.append_tool_use(call, "read", {"n": n}),
            m.append_message(ToolResultMessage(call, "read", (TextContent("x" * 4000),))),
            m.append_message(AssistantMessage((TextContent(f"answer {n}"),)))]


def as_read_from_the_file(m: SessionManager) -> tuple[list[Record], list, list]:
    """Records, the people's history and the model's context, computed from the file alone."""
    assert m.path is not None
    records = list(read_transcript(m.path).records)
    branch = history.active_branch(records)
    return records, history.history_entries(branch), history.context_entries(branch)


def check_same_as_the_file(m: SessionManager) -> None:
    records, people, context = as_read_from_the_file(m)
    assert list(m.records) == records
    assert m.history_entries() == people
    assert m.context_entries() == context
    assert m.history() == [message for _, message in people]


def alive(refs: list[weakref.ref[Record]]) -> int:
    gc.collect()
    return sum(ref() is not None for ref in refs)


def test_compacted_records_leave_memory_and_are_read_back(tmp_path: Path) -> None:
    with SessionManager.create(tmp_path / "p", agent_dir=tmp_path / "a") as m:
        m.append("model_change", provider="openai", model="gpt")  # kept: the session's state
        early = [weakref.ref(r) for n in range(5) for r in turn(m, n)]
        kept = turn(m, 5)
        m.append_compaction("turns 0-4 read files", kept[0].uuid, 9000, 900)
        assert alive(early) == 0  # neither the records nor their messages stay
        check_same_as_the_file(m)
        assert len(m.records) == 2 + 6 * 5 + 1
        assert repr(m).endswith("records=33>")

        middle = [weakref.ref(r) for n in range(6, 9) for r in turn(m, n)]
        last = turn(m, 9)
        m.append_compaction("turns 5-8 read more", last[0].uuid, 9000, 900)
        assert alive(middle) == 0
        check_same_as_the_file(m)
        assert [message.text for _, message in m.context_entries()[:1]] == [
            history.summary_message(m.records[-1]).text]  # type: ignore[arg-type]
        after = turn(m, 10)
        check_same_as_the_file(m)
        held = list(m.held_records)  # what a resume's housekeeping looks through
        assert held[0] == m.header and held[-5:] == after and len(held) < len(m.records)
        assert all(r in m.records for r in held)
        path = m.path
    with SessionManager.open(path) as again:  # a resume lets them go too
        check_same_as_the_file(again)
        turn(again, 11)
        again.append_compaction("everything", None, 9000, 900)
        check_same_as_the_file(again)
        assert [type(msg).__name__ for msg in again.messages()] == ["ContextMessage"]


def test_the_state_of_released_records_is_still_answered(tmp_path: Path) -> None:
    with SessionManager.create(tmp_path / "p", agent_dir=tmp_path / "a") as m:
        m.append_message(AssistantMessage((TextContent("hi"),), provider="anthropic",
                                          model="claude"))  # the fallback: no model_change
        m.append("reasoning_level", level="high")
        m.append("snapshot", snapshot={"v": 1})
        m.set_title("a title")
        m.set_tags(["x", "y"])
        turn(m, 1)  # its assistant names openai/gpt: the latest fallback
        kept = turn(m, 2)
        m.append_compaction("s", kept[0].uuid, 10, 1)
        state = (m.last_model(), m.last_reasoning_level(), m.latest_snapshot(), m.title,
                 m.tags)
        assert state == (("openai", "gpt"), "high", {"v": 1}, "a title", ("x", "y"))
        m.append("model_change", provider="anthropic", model="opus")
        m.set_title("another")
        kept = turn(m, 3)
        m.append_compaction("s", kept[0].uuid, 10, 1)  # releases what the last one carried
        assert (m.last_model(), m.title, m.tags) == (("anthropic", "opus"), "another",
                                                     ("x", "y"))
        check_same_as_the_file(m)
        path = m.path
    with SessionManager.open(path) as again:
        assert (again.last_model(), again.last_reasoning_level(), again.latest_snapshot(),
                again.title, again.tags) == (("anthropic", "opus"), "high", {"v": 1},
                                             "another", ("x", "y"))


def test_a_view_taken_before_a_compaction_keeps_what_it_saw(tmp_path: Path) -> None:
    with SessionManager.create(tmp_path / "p", agent_dir=tmp_path / "a") as m:
        turn(m, 1)
        kept = turn(m, 2)
        before = m.records
        seen = list(before)
        m.append_compaction("s", kept[0].uuid, 10, 1)
        assert list(before) == seen


def test_a_history_migration_reads_the_released_records(tmp_path: Path) -> None:
    with SessionManager.create(tmp_path / "p", agent_dir=tmp_path / "a") as m:
        turn(m, 1)
        kept = turn(m, 2)
        m.append_compaction("handed off", kept[0].uuid, 10, 1, migration="omit")
        check_same_as_the_file(m)
        omitted = [msg for _, msg in m.history_entries()
                   if getattr(msg, "source", None) == history.OMITTED_SOURCE]
        assert len(omitted) == 1
        kept = turn(m, 3)
        m.append_compaction("pruned", kept[0].uuid, 10, 1, migration="prune")
        check_same_as_the_file(m)


def test_a_file_changed_underneath_is_an_error_and_memory_is_kept(tmp_path: Path) -> None:
    with SessionManager.create(tmp_path / "p", agent_dir=tmp_path / "a") as m:
        turn(m, 1)
        assert m.path is not None
        backup = m.path.read_bytes()
        kept = turn(m, 2)
        m.append_compaction("s", kept[0].uuid, 10, 1)
        context = m.context_entries()
        m.path.write_bytes(backup)  # a valid transcript, but not this session's any more
        with pytest.raises(TranscriptError, match="changed by something else") as caught:
            m.records  # noqa: B018
        assert str(m.path) in str(caught.value)
        with pytest.raises(TranscriptError, match="changed by something else"):
            m.history()
        assert m.context_entries() == context  # the model's context is still whole


def test_a_broken_released_line_names_the_file_and_line(tmp_path: Path) -> None:
    with SessionManager.create(tmp_path / "p", agent_dir=tmp_path / "a") as m:
        turn(m, 1)
        kept = turn(m, 2)
        m.append_compaction("s", kept[0].uuid, 10, 1)
        assert m.path is not None
        lines = m.path.read_bytes().splitlines(keepends=True)
        lines[2] = b'{"type": "user", "broken\n'
        m.path.write_bytes(b"".join(lines))
        with pytest.raises(TranscriptError, match=":3"):
            m.records  # noqa: B018


def test_memory_only_and_branched_sessions_keep_every_record(tmp_path: Path) -> None:
    m = SessionManager.in_memory(tmp_path)  # nothing to read back from
    early = [weakref.ref(r) for r in turn(m, 1)]
    kept = turn(m, 2)
    m.append_compaction("s", kept[0].uuid, 10, 1)
    assert alive(early) == 5
    assert len(m.records) == 12

    with SessionManager.create(tmp_path / "p", agent_dir=tmp_path / "a") as m:
        first = turn(m, 1)
        path = m.path
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    rewind = {**lines[1], "uuid": "b-1", "parentUuid": first[0].uuid}  # a second branch
    rewind["message"] = {"role": "user", "content": [{"type": "text", "text": "again"}]}
    path.write_text(path.read_text() + json.dumps(rewind) + "\n")
    with SessionManager.open(path) as branched:
        kept = turn(branched, 2)
        branched.append_compaction("s", kept[0].uuid, 10, 1)
        check_same_as_the_file(branched)
        assert len(branched.records) == 1 + 5 + 1 + 5 + 1


def test_a_compaction_keeping_from_a_released_record_keeps_from_it(tmp_path: Path) -> None:
    with SessionManager.create(tmp_path / "p", agent_dir=tmp_path / "a") as m:
        old = turn(m, 1)
        kept = turn(m, 2)
        m.append_compaction("s", kept[0].uuid, 10, 1)
        m.append_compaction("a plugin's", old[0].uuid, 10, 1)  # from a record let go
        check_same_as_the_file(m)
        assert m.messages()[1] == old[0].message  # type: ignore[attr-defined]


def test_a_record_appended_while_reading_back_shows_in_the_next_read(tmp_path: Path) -> None:
    with SessionManager.create(tmp_path / "p", agent_dir=tmp_path / "a") as m:
        turn(m, 1)
        kept = turn(m, 2)
        m.append_compaction("s", kept[0].uuid, 10, 1)
        before = list(m.records)
        read = m._stored_records
        late: list[Record] = []

        def appending_meanwhile() -> object:  # as another thread's append would
            late.append(m.append_message(UserMessage.text("while reading")))
            return read()

        m._stored_records = appending_meanwhile  # type: ignore[method-assign]
        assert list(m.records) == before  # as it was when asked, not an error
        m._stored_records = read  # type: ignore[method-assign]
        assert list(m.records) == [*before, *late]
