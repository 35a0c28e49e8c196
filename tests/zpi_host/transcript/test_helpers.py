"""Session helpers: listing, inspecting, renaming, tagging, forking, deleting."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from zpi_host.errors import UsageError
from zpi_host.providers.messages import (
    AssistantMessage,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from zpi_host.transcript import (
    InvalidSessionIdError,
    SessionBusyError,
    SessionManager,
    SessionNotFoundError,
    TranscriptLockedError,
    delete_session,
    fork_session,
    get_session_info,
    get_session_messages,
    list_sessions,
    read_transcript,
    rename_session,
    tag_session,
)
from zpi_host.transcript.records import AssistantRecord, ToolResultRecord, ToolUseRecord

MISSING = "0b6b1c1e-5d0a-4f55-9d1e-3f5a2f1d6c2b"
Lines = Callable[[Path], list[dict[str, Any]]]


def make(agent: Path, cwd: Path, *prompts: str, title: str | None = None) -> str:
    with SessionManager.create(cwd, agent_dir=agent) as m:
        for prompt in prompts:
            m.append_message(UserMessage.text(prompt))
            m.append_message(AssistantMessage((TextContent(f"re: {prompt}"),)))
        if title:
            m.set_title(title)
        return m.session_id


def touch_later(agent: Path, sid: str, seconds: float) -> None:
    path = next(agent.rglob(f"{sid}.jsonl"))
    stamp = time.time() + seconds
    os.utime(path, (stamp, stamp))


# --------------------------------------------------------------------------------- listing


def test_list_sessions_newest_first_with_facts(agent: Path, project: Path,
                                               tmp_path: Path) -> None:
    old = make(agent, project, "first question", "second")
    new = make(agent, project, "x" * 500, title="Named")
    other = make(agent, tmp_path, "elsewhere")
    touch_later(agent, new, 10)
    infos = list_sessions(project, agent_dir=agent)
    assert [i.session_id for i in infos] == [new, old]
    first = infos[1]
    assert (first.title, first.tags, first.message_count) == (None, (), 4)
    assert first.first_prompt == "first question" and first.cwd == project
    assert first.created_at is not None and first.created_at.endswith("Z")
    assert first.modified_at.endswith("Z") and first.problem is None
    assert infos[0].title == "Named" and len(infos[0].first_prompt or "") == 200
    assert infos[0].first_prompt.endswith("…")  # type: ignore[union-attr]
    everything = list_sessions(agent_dir=agent)
    assert {i.session_id for i in everything} == {old, new, other}
    assert list_sessions(tmp_path / "nothing-here", agent_dir=agent) == []
    assert list_sessions(agent_dir=tmp_path / "no-agent") == []


def test_listing_follows_title_and_tag_changes(agent: Path, project: Path) -> None:
    sid = make(agent, project, "q", title="one")
    rename_session(sid, "two", agent_dir=agent)
    tag_session(sid, ["x", "y"], agent_dir=agent)
    (info,) = list_sessions(project, agent_dir=agent)
    assert (info.title, info.tags) == ("two", ("x", "y"))
    tag_session(sid, [], agent_dir=agent)
    assert get_session_info(sid, agent_dir=agent).tags == ()  # type: ignore[union-attr]


def test_listing_same_key_different_directory(agent: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "b", tmp_path / "a-b"  # both become "...-a-b"
    a.mkdir(parents=True)
    b.mkdir()
    sa, sb = make(agent, a, "in a/b"), make(agent, b, "in a-b")
    assert [i.session_id for i in list_sessions(a, agent_dir=agent)] == [sa]
    assert [i.session_id for i in list_sessions(b, agent_dir=agent)] == [sb]


def test_listing_shows_damaged_sessions_with_their_problem(agent: Path, project: Path) -> None:
    sid = make(agent, project, "ok")
    path = next(agent.rglob(f"{sid}.jsonl"))
    path.write_text("not a transcript\n")
    (info,) = list_sessions(project, agent_dir=agent)
    assert info.session_id == sid and info.cwd is None
    assert info.problem is not None and f"{path}:1" in info.problem


def test_listing_reads_files_of_other_writers_fully(agent: Path, project: Path,
                                                    read_lines: Lines) -> None:
    import json

    sid = make(agent, project, "hello", title="T")
    path = next(agent.rglob(f"{sid}.jsonl"))
    reordered = [dict(sorted(line.items())) for line in read_lines(path)]  # "type" not first
    path.write_text("".join(json.dumps(r) + "\n" for r in reordered))
    (info,) = list_sessions(project, agent_dir=agent)
    assert (info.title, info.message_count, info.first_prompt) == ("T", 2, "hello")


def test_listing_ignores_a_torn_tail(agent: Path, project: Path) -> None:
    sid = make(agent, project, "hello")
    path = next(agent.rglob(f"{sid}.jsonl"))
    path.write_bytes(path.read_bytes() + b'{"type":"title","uuid":"x","title":"half')
    info = get_session_info(sid, agent_dir=agent)
    assert info is not None and (info.title, info.message_count) == (None, 2)


def test_get_session_info_and_messages(agent: Path, project: Path) -> None:
    sid = make(agent, project, "one", "two", "three")
    info = get_session_info(sid, agent_dir=agent)
    assert info is not None and info.message_count == 6
    assert get_session_info(MISSING, agent_dir=agent) is None
    messages = get_session_messages(sid, agent_dir=agent)
    assert len(messages) == 6 and messages[0] == UserMessage.text("one")
    assert get_session_messages(sid, limit=2, offset=2, agent_dir=agent) == messages[2:4]
    assert get_session_messages(sid, offset=5, agent_dir=agent) == messages[5:]
    assert get_session_messages(sid, limit=0, agent_dir=agent) == []
    assert get_session_messages(MISSING, agent_dir=agent) == []
    with pytest.raises(UsageError):
        get_session_messages(sid, offset=-1, agent_dir=agent)
    with pytest.raises(InvalidSessionIdError):
        get_session_info("../../etc/passwd", agent_dir=agent)


def test_messages_of_an_open_session_come_from_its_owner(agent: Path, project: Path) -> None:
    with SessionManager.create(project, agent_dir=agent) as m:
        m.append_message(UserMessage.text("live"))
        assert get_session_messages(m.session_id, agent_dir=agent) == [UserMessage.text("live")]


def test_agent_dir_defaults_to_the_environment(tmp_path: Path, project: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZPI_AGENT_DIR", str(tmp_path / "env-agent"))
    with SessionManager.create(project) as m:
        m.append_message(UserMessage.text("hello"))
        sid = m.session_id
    assert (tmp_path / "env-agent" / "sessions").is_dir()
    assert [i.session_id for i in list_sessions(project)] == [sid]


# -------------------------------------------------------------------------- rename and tag


def test_rename_and_tag_without_an_owner(agent: Path, project: Path) -> None:
    sid = make(agent, project, "q")
    rename_session(sid, "New title", agent_dir=agent)
    tag_session(sid, ["a", "b"], agent_dir=agent)
    with SessionManager.open(sid, agent_dir=agent) as m:
        assert (m.title, m.tags) == ("New title", ("a", "b"))
    with pytest.raises(UsageError):
        rename_session(sid, "  ", agent_dir=agent)
    with pytest.raises(UsageError):
        tag_session(sid, ["ok", 3], agent_dir=agent)  # type: ignore[list-item]
    for change in (lambda: rename_session(MISSING, "t", agent_dir=agent),
                   lambda: tag_session(MISSING, ["t"], agent_dir=agent)):
        with pytest.raises(SessionNotFoundError):
            change()


def test_rename_and_tag_go_through_an_idle_owner(agent: Path, project: Path) -> None:
    with SessionManager.create(project, agent_dir=agent) as m:
        rename_session(m.session_id, "through the owner", agent_dir=agent)
        tag_session(m.session_id, ["t"], agent_dir=agent)
        assert (m.title, m.tags) == ("through the owner", ("t",))
        m.append_message(UserMessage.text("still the owner"))
    transcript = read_transcript(m.path)  # type: ignore[arg-type]
    assert [r.type for r in transcript.records] == ["header", "title", "tag", "user"]


def test_running_session_cannot_be_renamed_but_can_be_tagged(agent: Path,
                                                             project: Path) -> None:
    with SessionManager.create(project, agent_dir=agent) as m:
        m.running = True
        with pytest.raises(SessionBusyError, match="while it is running"):
            rename_session(m.session_id, "t", agent_dir=agent)
        tag_session(m.session_id, ["live"], agent_dir=agent)
        assert m.tags == ("live",)
        m.running = False
        rename_session(m.session_id, "t", agent_dir=agent)
        assert m.title == "t"


HOLDER = """
import sys
from zpi_host.transcript import SessionManager
m = SessionManager.open(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
"""


def test_a_session_locked_by_another_process(agent: Path, project: Path) -> None:
    sid = make(agent, project, "q")
    path = next(agent.rglob(f"{sid}.jsonl"))
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        for change in (lambda: rename_session(sid, "t", agent_dir=agent),
                       lambda: tag_session(sid, ["t"], agent_dir=agent),
                       lambda: delete_session(sid, agent_dir=agent)):
            with pytest.raises(TranscriptLockedError, match=f"pid {child.pid}"):
                change()
        assert path.exists()
        new = fork_session(sid, agent_dir=agent)  # reading needs no lock
        assert get_session_messages(new, agent_dir=agent) == get_session_messages(
            sid, agent_dir=agent)
    finally:
        child.kill()
        child.wait(timeout=30)


# ------------------------------------------------------------------------------------ fork


def tool_session(agent: Path, project: Path) -> tuple[str, list[str]]:
    with SessionManager.create(project, agent_dir=agent) as m:
        uuids = [m.append_message(UserMessage.text("list files")).uuid]
        uuids.append(m.append_message(AssistantMessage(
            (TextContent("running"), ToolCallContent("toolu_abc", "bash", {"command": "ls"}),
             ToolCallContent("call_7", "read", {"path": "a"})), "tool_use")).uuid)
        uuids.append(m.append_tool_use("toolu_abc", "bash", {"command": "ls"}).uuid)
        uuids.append(m.append_message(ToolResultMessage("toolu_abc", "bash",
                                                        (TextContent("a b"),))).uuid)
        uuids.append(m.append_tool_use("call_7", "read", {"path": "a"}).uuid)
        uuids.append(m.append_message(ToolResultMessage("call_7", "read",
                                                        (TextContent("x"),))).uuid)
        uuids.append(m.set_title("tools").uuid)
        return m.session_id, uuids


def test_fork_copies_everything_with_new_ids(agent: Path, project: Path) -> None:
    sid, uuids = tool_session(agent, project)
    source = read_transcript(next(agent.rglob(f"{sid}.jsonl")))
    new = fork_session(sid, agent_dir=agent)
    path = next(agent.rglob(f"{new}.jsonl"))
    assert path.parent == source.path.parent  # type: ignore[union-attr]
    fork = read_transcript(path)
    header = fork.header
    assert header.session_id == new != sid
    assert header.forked_from is not None
    assert (header.forked_from.session_id, header.forked_from.uuid) == (sid, uuids[-1])
    assert [r.type for r in fork.records] == [r.type for r in source.records]
    assert not {r.uuid for r in fork.records} & {r.uuid for r in source.records}
    assert all(r.session_id == new for r in fork.records)
    assert [r.timestamp for r in fork.records[1:]] == [r.timestamp for r in source.records[1:]]
    assistant = next(r for r in fork.records if isinstance(r, AssistantRecord))
    new_ids = [c.id for c in assistant.message.tool_calls]
    assert new_ids[0].startswith("toolu_") and new_ids[1].startswith("call_")
    assert not set(new_ids) & {"toolu_abc", "call_7"}
    uses = [r.call_id for r in fork.records if isinstance(r, ToolUseRecord)]
    results = [r for r in fork.records if isinstance(r, ToolResultRecord)]
    assert uses == new_ids == [r.call_id for r in results] == [r.message.call_id for r in results]
    with SessionManager.open(new, agent_dir=agent) as m:
        assert m.title == "tools" and m.warnings == []
        assert [type(x).__name__ for x in m.messages()] == [
            "UserMessage", "AssistantMessage", "ToolResultMessage", "ToolResultMessage"]


def test_fork_up_to_a_record(agent: Path, project: Path) -> None:
    sid, uuids = tool_session(agent, project)
    new = fork_session(sid, up_to=uuids[2], agent_dir=agent)  # after the first tool_use
    fork = read_transcript(next(agent.rglob(f"{new}.jsonl")))
    assert [r.type for r in fork.records] == ["header", "user", "assistant", "tool_use"]
    with SessionManager.open(new, agent_dir=agent) as m:  # the cut calls are closed
        results = [x for x in m.messages() if isinstance(x, ToolResultMessage)]
        assert [r.is_error for r in results] == [True, True]
        assert "interrupted" in results[0].content[0].text  # type: ignore[union-attr]
        assert "not run" in results[1].content[0].text  # type: ignore[union-attr]
    with pytest.raises(SessionNotFoundError, match="no record 'nope'"):
        fork_session(sid, up_to="nope", agent_dir=agent)
    with pytest.raises(SessionNotFoundError):
        fork_session(MISSING, agent_dir=agent)


def test_fork_copies_the_spilled_output_its_results_point_at(agent: Path, project: Path
                                                             ) -> None:
    from zpi_host.fs.spill import create_spill_file, spill_folder

    with SessionManager.create(project, agent_dir=agent) as m:
        sid = m.session_id
        kept, handle = create_spill_file(spill_folder(agent, sid), "zpi-bash")
        with handle:
            handle.write(b"the whole output")
        other, handle = create_spill_file(spill_folder(agent, sid), "zpi-bash")
        handle.close()  # spilled by a later call, not in the fork
        m.append_message(UserMessage.text("run"))
        for call, path in (("call_1", kept), ("call_2", other)):
            m.append_message(AssistantMessage(
                (ToolCallContent(call, "bash", {"command": "x"}),), "tool_use"))
            m.append_tool_use(call, "bash", {"command": "x"})
            cut = m.append_message(ToolResultMessage(
                call, "bash", (TextContent(f"head [... full output in {path} ...] tail"),),
                details={"full_output_path": str(path)})).uuid
            if call == "call_1":
                up_to = cut
    new = fork_session(sid, up_to=up_to, agent_dir=agent)
    copied = spill_folder(agent, new) / kept.name
    assert copied.read_bytes() == b"the whole output"
    assert not (spill_folder(agent, new) / other.name).exists()
    with SessionManager.open(new, agent_dir=agent) as m:
        result = next(x for x in m.messages() if isinstance(x, ToolResultMessage))
    assert result.content[0].text == f"head [... full output in {copied} ...] tail"  # type: ignore[union-attr]
    assert result.details == {"full_output_path": str(copied)}
    delete_session(sid, agent_dir=agent)  # the fork's output outlives its source
    assert copied.read_bytes() == b"the whole output"


def test_fork_keeps_unknown_fields(agent: Path, project: Path, read_lines: Lines) -> None:
    import json

    sid = make(agent, project, "q")
    path = next(agent.rglob(f"{sid}.jsonl"))
    lines = read_lines(path)
    lines[1]["addedLater"] = [1, 2]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    new = fork_session(sid, agent_dir=agent)
    assert read_lines(next(agent.rglob(f"{new}.jsonl")))[1]["addedLater"] == [1, 2]


def test_fork_of_a_running_session(agent: Path, project: Path) -> None:
    with SessionManager.create(project, agent_dir=agent) as m:
        early = m.append_message(UserMessage.text("one")).uuid
        last = m.append_message(UserMessage.text("two")).uuid
        m.running = True
        for up_to in (None, last):
            with pytest.raises(SessionBusyError, match="running"):
                fork_session(m.session_id, up_to=up_to, agent_dir=agent)
        new = fork_session(m.session_id, up_to=early, agent_dir=agent)
        assert get_session_messages(new, agent_dir=agent) == [UserMessage.text("one")]
        m.running = False
        assert len(get_session_messages(fork_session(m.session_id, agent_dir=agent),
                                        agent_dir=agent)) == 2


# ---------------------------------------------------------------------------------- delete


def test_delete(agent: Path, project: Path) -> None:
    sid = make(agent, project, "q")
    path = next(agent.rglob(f"{sid}.jsonl"))
    delete_session(sid, agent_dir=agent)
    assert not path.exists() and list(path.parent.iterdir()) == []  # lock file gone too
    delete_session(sid, agent_dir=agent)  # missing: fine
    assert get_session_info(sid, agent_dir=agent) is None


def test_delete_refuses_an_open_session(agent: Path, project: Path) -> None:
    with SessionManager.create(project, agent_dir=agent) as m:
        m.running = True
        with pytest.raises(SessionBusyError, match="is running in this process"):
            delete_session(m.session_id, agent_dir=agent)
        m.running = False
        with pytest.raises(SessionBusyError, match="is open in this process"):
            delete_session(m.session_id, agent_dir=agent)
    delete_session(m.session_id, agent_dir=agent)
    assert not m.path.exists()  # type: ignore[union-attr]
