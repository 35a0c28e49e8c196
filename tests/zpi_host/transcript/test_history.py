"""The context rebuild: compaction, the active branch, and the full history for people."""

from __future__ import annotations

import json
from pathlib import Path

from zpi_host.providers.messages import ContextMessage, TextContent, ToolResultMessage, UserMessage
from zpi_host.transcript import COMPACTION_SOURCE, SessionManager, summary_message
from zpi_host.transcript.history import SUMMARY_INTRO
from zpi_host.transcript.records import CompactionRecord


def texts(messages: list) -> list[str]:
    out = []
    for m in messages:
        out.append(m.text if isinstance(m, ContextMessage) else m.content[0].text)
    return out


def conversation(manager: SessionManager, *words: str) -> dict[str, str]:
    uuids = {}
    for word in words:
        uuids[word] = manager.append_message(UserMessage.text(word)).uuid
    return uuids


def test_summary_message_is_exact() -> None:
    record = CompactionRecord(uuid="c", parent_uuid="p", session_id="s", timestamp="t",
                              summary="We fixed the parser.", first_kept_uuid=None,
                              tokens_before=9000, tokens_after=800,
                              read_files=("a.py", "b.py"), modified_files=("a.py",))
    message = summary_message(record)
    assert message == ContextMessage(
        "The earlier part of this conversation was compacted to save context. Summary of it:"
        "\n\nWe fixed the parser.\n\nFiles read: a.py, b.py\n\nFiles modified: a.py",
        "compaction")
    bare = CompactionRecord(uuid="c", parent_uuid="p", session_id="s", timestamp="t",
                            summary="S", first_kept_uuid=None, tokens_before=1, tokens_after=1)
    assert summary_message(bare).text == f"{SUMMARY_INTRO}\n\nS"
    assert COMPACTION_SOURCE == "compaction"


def test_compaction_keeps_from_first_kept_uuid(tmp_path: Path) -> None:
    m = SessionManager.in_memory(tmp_path)
    ids = conversation(m, "one", "two", "three", "four")
    m.append_compaction("about one and two", ids["three"], 5000, 700, ["r.py"], ["w.py"])
    conversation(m, "five")
    messages = m.messages()
    assert messages[0] == summary_message(m.records[-2])  # type: ignore[arg-type]
    assert texts(messages[1:]) == ["three", "four", "five"]
    assert texts(m.history()) == ["one", "two", "three", "four", messages[0].text, "five"]


def test_compaction_without_first_kept_keeps_only_what_follows(tmp_path: Path) -> None:
    m = SessionManager.in_memory(tmp_path)
    conversation(m, "one", "two")
    m.append_compaction("all of it", None, 100, 10)
    assert texts(m.messages()) == [f"{SUMMARY_INTRO}\n\nall of it"]
    conversation(m, "three")
    assert texts(m.messages())[1:] == ["three"]


def test_only_the_last_compaction_counts(tmp_path: Path) -> None:
    m = SessionManager.in_memory(tmp_path)
    ids = conversation(m, "one", "two")
    m.append_compaction("first", ids["two"], 100, 10)
    ids.update(conversation(m, "three", "four"))
    m.append_compaction("second", ids["two"], 100, 10)  # keeps "two" and later, ...
    messages = m.messages()
    # ... but the earlier compaction inside the kept range is not shown again
    assert texts(messages) == [f"{SUMMARY_INTRO}\n\nsecond", "two", "three", "four"]


def test_compaction_survives_a_reopen(agent: Path, project: Path) -> None:
    with SessionManager.create(project, agent_dir=agent) as m:
        ids = conversation(m, "one", "two", "three")
        m.append_compaction("sum", ids["two"], 100, 10)
        expected, sid = m.messages(), m.session_id
    with SessionManager.open(sid, agent_dir=agent) as again:
        assert again.messages() == expected


def test_recovery_only_looks_at_the_context(tmp_path: Path) -> None:
    from zpi_host.providers.messages import AssistantMessage, ToolCallContent

    m = SessionManager.in_memory(tmp_path)
    m.append_message(AssistantMessage((ToolCallContent("old", "bash", {}),), "tool_use"))
    kept = m.append_message(UserMessage.text("kept"))
    m.append_compaction("the old call is summarised", kept.uuid, 10, 1)
    m.append_message(AssistantMessage((ToolCallContent("new", "bash", {}),), "tool_use"))
    written = m.recover()
    assert [r.call_id for r in written] == ["new"]  # type: ignore[attr-defined]
    assert isinstance(m.messages()[-1], ToolResultMessage)


def test_the_active_branch_is_the_last_record_and_its_ancestors(
    tmp_path: Path, write_lines
) -> None:
    with SessionManager.create(tmp_path / "p", agent_dir=tmp_path / "a") as m:
        ids = conversation(m, "one", "two", "three")
        path = m.path
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    rewind = {**lines[2], "uuid": "b-1", "parentUuid": ids["one"]}  # "two" again, branched
    rewind["message"] = {"role": "user", "content": [{"type": "text", "text": "two, again"}]}
    path.write_text(path.read_text() + json.dumps(rewind) + "\n")
    with SessionManager.open(path) as m:
        assert texts(m.messages()) == ["one", "two, again"]
        m.append_message(ToolResultMessage("x", "t", (TextContent("after"),)))
        assert m.records[-1].parent_uuid == "b-1"
        assert texts(m.messages())[-1] == "after"
    with SessionManager.open(path) as m:
        assert texts(m.messages()) == ["one", "two, again", "after"]
        assert texts(m.history()) == ["one", "two, again", "after"]
