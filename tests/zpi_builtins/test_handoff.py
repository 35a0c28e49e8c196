"""builtins:handoff and builtins:auto_migrate: the document, its executors, the migration."""

from __future__ import annotations

import re
import subprocess

import anyio
import pytest
from helpers.builtins import builtins_settings

from zpi_builtins.context_guard import guard_for
from zpi_builtins.handoff import (
    HandoffError,
    handoff_for,
    load_template,
    missing_sections,
)
from zpi_host.errors import UsageError
from zpi_host.providers.messages import ContextMessage, UserMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import FunctionModel
from zpi_host.transcript import read_transcript

pytestmark = pytest.mark.anyio

SECTIONS = ("Goal", "State", "Changed files", "Decisions", "Next steps")
GOOD = "\n\n".join(f"## {s}\n{s} text" for s in SECTIONS) + "\n"
BAD = "## Goal\nonly a goal\n\n## State\n\n"
ASKED = re.compile(r"Write a hand-off document to (\S+) with the write tool")


class Agent:
    """A model that plays the agent: answers prompts, writes the hand-off as told."""

    def __init__(self, document: str = GOOD, summary: str | None = GOOD,
                 stray_write: bool = False) -> None:
        self.document, self.summary, self.stray_write = document, summary, stray_write
        self.handoff_prompts: list[str] = []
        self.relaxed_seen: list[bool] = []
        self.session = None

    def __call__(self, request):
        if request.purpose == "handoff":
            return self.summary
        last = request.messages[-1]
        users = [m for m in request.messages if isinstance(m, UserMessage)]
        asked = ASKED.search(users[-1].text_content) if users else None
        if asked is None:
            return f"answer to {users[-1].text_content[:20]}" if users else "ok"
        if self.session is not None:
            self.relaxed_seen.append(guard_for(self.session.view).is_relaxed)
        if isinstance(last, UserMessage):
            self.handoff_prompts.append(last.text_content)
            if self.stray_write:
                return {"tool_calls": [{"name": "write", "arguments": {
                    "path": "other.txt", "content": "not now"}}]}
            return self.write(asked.group(1))
        if last.role == "tool" and last.tool_name == "write" and \
                last.details.get("handoff_refusal"):
            return self.write(asked.group(1))
        return "the hand-off document is written"

    def write(self, path):
        return {"tool_calls": [{"name": "write", "arguments": {
            "path": path, "content": self.document}}]}


def git_repo(path):
    def git(*args):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (path / "a.txt").write_text("one\n")
    git("add", "a.txt")
    git("commit", "-qm", "first")
    (path / "a.txt").write_text("two\n")


async def agent_session(tmp_path, agent, settings=None):
    model = FunctionModel(agent, side=("handoff",) if agent.summary is not None else ())
    session = await create_session(model="fn:m", provider=model, cwd=tmp_path,
                                   settings=settings or {})
    agent.session = session
    assert not (await session.run("fix the bug")).is_error
    return session


def compactions(session):
    return [r for r in read_transcript(session.store.path).records if r.type == "compaction"]


# ------------------------------------------------------------------------------ template


def test_the_shipped_template_and_a_users_skill_that_overrides_it(tmp_path):
    assert load_template([]).sections == SECTIONS
    skill_file = tmp_path / "SKILL.md"
    skill_file.write_text("---\nname: handoff\ndescription: mine\n---\n## Why\n\n## What now\n")

    class Skill:
        name, path = "handoff", skill_file

    mine = load_template([Skill()])
    assert mine.sections == ("Why", "What now") and mine.source == skill_file
    skill_file.write_text("---\nname: handoff\ndescription: mine\n---\nno headings\n")
    with pytest.raises(HandoffError, match="has no '## ' sections"):
        load_template([Skill()])


def test_missing_sections_are_absent_or_empty_ones():
    assert missing_sections(GOOD, SECTIONS) == []
    assert missing_sections(BAD, SECTIONS) == ["State", "Changed files", "Decisions",
                                               "Next steps"]
    assert missing_sections("# goal\nx\n### NEXT STEPS\ny", ["Goal", "Next steps"]) == []


# ------------------------------------------------------------------------------ executors


async def test_self_writes_the_document_with_the_real_state_and_a_relaxed_guard(
        zpi_env, tmp_path):
    git_repo(tmp_path)
    agent = Agent()
    session = await agent_session(tmp_path, agent)
    result = await handoff_for(session.view).handoff("self")
    await session.dispose()
    assert result.executor == "self" and result.fell_back_because is None
    assert result.path.parent == tmp_path / ".zpi" / "handoffs"
    assert result.path.read_text() == GOOD
    (prompt,) = agent.handoff_prompts
    assert " M a.txt" in prompt and "a.txt | 2 +-" in prompt  # git status and diff --stat
    assert "## Next steps" in prompt  # the template
    assert agent.relaxed_seen and all(agent.relaxed_seen)
    assert not guard_for(session.view).is_relaxed


async def test_another_write_gets_a_soft_refusal_and_the_agent_goes_back(zpi_env, tmp_path):
    agent = Agent(stray_write=True)
    session = await agent_session(tmp_path, agent)
    result = await handoff_for(session.view).handoff("self")
    await session.dispose()
    assert result.executor == "self" and not (tmp_path / "other.txt").exists()
    refused = [m for m in session.messages if m.role == "tool" and m.is_error]
    assert "Not now: during the hand-off the only file you may write is the hand-off " \
        f"document {result.path}" in refused[0].content[0].text
    assert "not a git work tree" in agent.handoff_prompts[0]


async def test_self_falls_back_to_summary_once(zpi_env, tmp_path):
    agent = Agent(document=BAD)
    session = await agent_session(tmp_path, agent)
    result = await handoff_for(session.view).handoff("self")
    await session.dispose()
    assert result.executor == "summary" and result.path.read_text() == GOOD
    assert "lacks the section(s) State, Changed files" in result.fell_back_because


async def test_a_failed_hand_off_loses_no_message_and_migrates_nothing(zpi_env, tmp_path):
    agent = Agent(document=BAD, summary=BAD)
    session = await agent_session(tmp_path, agent)
    before = list(session.messages)
    service = handoff_for(session.view)
    with pytest.raises(HandoffError, match=r"the agent's hand-off failed .* and so did the "
                       r"summary .*lacks the section"):
        await service.handoff("self")
    assert list(session.messages)[:len(before)] == before
    with pytest.raises(HandoffError, match="no hand-off document"):
        await service.migrate("prune")
    assert compactions(session) == [] and not service.busy
    await session.dispose()


@pytest.mark.parametrize("directory", ["../outside", "/tmp/elsewhere", "linked"])
async def test_the_document_stays_inside_the_working_directory(zpi_env, tmp_path, directory):
    """A project's settings choose the folder; a folder that leads out of the working
    directory (``..``, absolute, a symlink) is refused and nothing is written."""
    project = tmp_path / "project"
    project.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "linked").symlink_to(outside)
    session = await agent_session(project, Agent(), builtins_settings(
        handoff={"directory": directory}))
    with pytest.raises(HandoffError, match="outside the working directory"):
        await handoff_for(session.view).handoff("summary")
    await session.dispose()
    assert list(outside.iterdir()) == []


async def test_summary_without_a_model_that_may_answer_is_a_clear_error(zpi_env, tmp_path):
    session = await agent_session(tmp_path, Agent(summary=None))
    with pytest.raises(HandoffError, match="cannot be asked for a hand-off"):
        await handoff_for(session.view).handoff("summary")
    with pytest.raises(UsageError, match="unknown hand-off executor 'them'"):
        await handoff_for(session.view).handoff("them")
    await session.dispose()


async def test_hand_off_stops_the_run_in_progress(zpi_env, tmp_path):
    started, never = anyio.Event(), anyio.Event()

    async def model(request):
        if request.purpose == "handoff":
            return GOOD
        started.set()
        await never.wait()

    session = await create_session(model="fn:m", provider=FunctionModel(
        model, side=("handoff",)), cwd=tmp_path)
    outcome = {}

    async def run():
        outcome["run"] = await session.run("a long task")

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await started.wait()
        result = await handoff_for(session.view).handoff("summary")
    await session.dispose()
    assert result.executor == "summary" and outcome["run"].stop_reason == "aborted"


# ------------------------------------------------------------------------------ migration


async def test_prune_rebuilds_the_context_and_a_resumed_session_sees_the_same(
        zpi_env, tmp_path):
    agent = Agent()
    session = await agent_session(tmp_path, agent)
    service = handoff_for(session.view)
    done = await service.handoff("summary")
    migrated = await service.migrate("prune")
    assert migrated.document == done.path and migrated.omitted == 2
    summary, break_point = session.messages
    assert "were pruned from the context" in summary.text
    assert isinstance(break_point, ContextMessage) and break_point.source == "handoff"
    assert f"The hand-off document is {done.path}: read it first" in break_point.text
    answer = await session.run("go on")
    assert answer.result == "answer to go on"
    await session.dispose()
    records = read_transcript(session.store.path).records
    assert sum(r.type == "user" for r in records) == 2  # the transcript keeps every fact
    resumed = await create_session(model="fn:m", provider=FunctionModel(agent), cwd=tmp_path,
                                   resume=session.session_id)
    assert [m.text for m in resumed.messages[:2]] == [summary.text, break_point.text]
    await resumed.dispose()


async def test_omit_keeps_an_outline_of_the_old_records(zpi_env, tmp_path):
    session = await agent_session(tmp_path, Agent())
    service = handoff_for(session.view)
    await service.handoff("summary")
    with pytest.raises(UsageError, match="unknown migration strategy 'drop'"):
        await service.migrate("drop")
    await service.migrate("omit")
    text = session.messages[0].text
    await session.dispose()
    assert "are omitted from the context after a hand-off and kept in the session's " \
        "transcript for audit" in text
    assert "- user: fix the bug" in text and "- assistant: answer to fix the bug" in text


# ------------------------------------------------------------------------------ auto


def auto(**extra):
    """The prompt of these tests (about 6,000 tokens) alone is past the threshold (5,000);
    the ceiling (19,000) leaves room for the system prompt and every service's tools."""
    return builtins_settings(auto_migrate={"enabled": True, "threshold": 0.25, **extra},
                             context_guard={"max_tokens": 20_000})


async def test_past_the_threshold_the_run_ends_with_a_hand_off_and_a_migration(
        zpi_env, tmp_path):
    agent = Agent()
    model = FunctionModel(agent, side=("handoff",))
    session = await create_session(model="fn:m", provider=model, cwd=tmp_path,
                                   settings=auto())
    agent.session = session
    result = await session.run("fix the bug " + "x" * 24_000)
    assert result.result == "answer to fix the bug xxxxxxxx"  # the user's run's own result
    assert len(agent.handoff_prompts) == 1  # the hand-off's own run did not start another
    assert session.messages[-1].source == "handoff"
    assert len(compactions(session)) == 1
    service = handoff_for(session.view)
    assert not service.busy and not service.scheduled
    await session.dispose()


async def test_below_the_threshold_or_switched_off_nothing_happens(zpi_env, tmp_path):
    for settings in (auto(threshold=1.0), builtins_settings(context_guard={
            "max_tokens": 20_000})):
        agent = Agent()
        session = await create_session(model="fn:m", provider=FunctionModel(agent),
                                       cwd=tmp_path, settings=settings)
        await session.run("fix the bug " + "x" * 24_000)
        assert agent.handoff_prompts == [] and compactions(session) == []
        await session.dispose()


async def test_a_failing_automatic_hand_off_is_a_warning_and_keeps_every_message(
        zpi_env, tmp_path):
    agent = Agent(document=BAD, summary=BAD)
    session = await create_session(model="fn:m", provider=FunctionModel(
        agent, side=("handoff",)), cwd=tmp_path, settings=auto())
    agent.session = session
    result = await session.run("fix the bug " + "x" * 24_000)
    assert not result.is_error
    assert any("work after the run failed: HandoffError" in w for w in session.warnings)
    assert compactions(session) == []
    assert session.messages[0] == UserMessage.text("fix the bug " + "x" * 24_000)
    await session.dispose()


async def test_the_summary_gets_the_most_recent_part_of_a_long_conversation(
        zpi_env, tmp_path, monkeypatch):
    import zpi_builtins.handoff_service as handoff

    monkeypatch.setattr(handoff, "CONVERSATION_CHARS", 200)
    prompts = []
    agent = Agent()

    def model(request):
        if request.purpose == "handoff":
            prompts.append(request.messages[0].text_content)
        return agent(request)

    session = await create_session(model="fn:m", provider=FunctionModel(
        model, side=("handoff",)), cwd=tmp_path)
    await session.run("early " * 100)
    await session.run("the latest request")
    await handoff_for(session.view).handoff("summary")
    await session.dispose()
    conversation = prompts[0].split("The conversation so far:\n\n", 1)[1]
    assert conversation.startswith("[… earlier part left out]")
    assert "early " * 30 not in conversation and "the latest request" in conversation


# ------------------------------------------------------------------ history and bash guard


def history(session, tmp_path):
    from zpi_host.transcript import get_session_entries

    return get_session_entries(session.session_id, agent_dir=session.agent_dir, cwd=tmp_path)


async def test_omit_is_the_default_and_keeps_the_old_records_in_the_history_marked(
        zpi_env, tmp_path):
    from zpi_host.sdk import get_session_messages
    from zpi_host.transcript.history import OMITTED_SOURCE, OMITTED_SUFFIX

    session = await agent_session(tmp_path, Agent())
    service = handoff_for(session.view)
    await service.handoff("summary")
    migrated = await service.migrate()  # omit, as the seed's default
    assert migrated.strategy == "omit"
    assert [m.role for m in session.messages] == ["context", "context"]  # out of the context
    await session.dispose()
    (record,) = compactions(session)
    assert record.migration == "omit"
    entries = history(session, tmp_path)
    (mark_uuid, mark), (_, user), (_, answer), (summary_uuid, summary) = entries[:4]
    assert mark.source == OMITTED_SOURCE and mark_uuid == record.uuid + OMITTED_SUFFIX
    assert "the 2 message(s) from here to the summary below" in mark.text
    assert user.text_content == "fix the bug" and answer.text == "answer to fix the bug"
    assert summary_uuid == record.uuid and summary.source == "compaction"
    assert entries[4][1].source == "handoff"  # the break point
    sdk = get_session_messages(session.session_id, directory=str(tmp_path),
                               agent_dir=session.agent_dir)
    assert len(sdk) == len(entries) and sdk[0].uuid == mark_uuid
    import os
    import sys

    shown = subprocess.run([sys.executable, "-m", "zpi_host", "--cwd", str(tmp_path),
                            "sessions", "show", session.session_id], capture_output=True,
                           text=True, timeout=60, cwd=tmp_path,
                           env={**os.environ, "ZPI_AGENT_DIR": str(session.agent_dir)})
    assert shown.returncode == 0, shown.stderr
    assert "(omitted) Omitted from the model's context by a hand-off (omit)" in shown.stdout
    assert "fix the bug" in shown.stdout


async def test_prune_drops_them_from_the_history_too_and_the_file_keeps_them(
        zpi_env, tmp_path):
    session = await agent_session(tmp_path, Agent())
    service = handoff_for(session.view)
    await service.handoff("summary")
    await service.migrate("prune")
    await session.run("go on")
    await session.dispose()
    (record,) = compactions(session)
    assert record.migration == "prune"
    entries = [m for _, m in history(session, tmp_path)]
    assert entries[0].source == "compaction" and "were pruned" in entries[0].text
    assert not any(isinstance(m, UserMessage) and m.text_content == "fix the bug"
                   for m in entries)
    assert [m.text_content for m in entries if isinstance(m, UserMessage)] == ["go on"]
    records = read_transcript(session.store.path).records
    assert any(r.type == "user" and r.message.text_content == "fix the bug" for r in records)


async def test_an_ordinary_compaction_still_shows_everything(zpi_env, tmp_path):
    session = await agent_session(tmp_path, Agent())
    from zpi_host.agent.compaction import restart_context

    restart_context(session, "a summary", "a break", "test")
    await session.dispose()
    (record,) = compactions(session)
    assert record.migration is None
    roles = [m.role for _, m in history(session, tmp_path)]
    assert roles == ["user", "assistant", "context", "context"]


class Deleter(Agent):
    """Tries a deleting or moving bash line before writing the document; then a harmless one."""

    def __init__(self, lines):
        super().__init__()
        self.lines = list(lines)
        self.results: list[tuple[str, bool, str]] = []

    def __call__(self, request):
        last = request.messages[-1]
        if last.role == "tool" and last.tool_name == "bash":
            self.results.append((self.command, last.is_error, last.content[0].text))
        users = [m for m in request.messages if isinstance(m, UserMessage)]
        asked = ASKED.search(users[-1].text_content) if users else None
        if asked is not None and self.lines and (isinstance(last, UserMessage) or
                                                 last.role == "tool"):
            self.command = self.lines.pop(0)
            return {"tool_calls": [{"name": "bash", "arguments": {"command": self.command}}]}
        if asked is not None and last.role == "tool" and last.tool_name == "bash":
            return self.write(asked.group(1))
        return super().__call__(request)


async def test_self_hand_off_softly_refuses_bash_that_deletes_or_moves(zpi_env, tmp_path):
    (tmp_path / "keep.txt").write_text("keep\n")
    lines = ["rm -f keep.txt", "sudo mv keep.txt gone.txt", "find . -name keep.txt -delete",
             "sh -c 'rm keep.txt'", "git rm -q keep.txt", "echo still here > seen.txt"]
    agent = Deleter(lines)
    model = FunctionModel(agent, side=("handoff",))
    session = await create_session(model="fn:m", provider=model, cwd=tmp_path,
                                   permission_mode="bypass")
    agent.session = session
    await session.run("fix the bug")
    result = await handoff_for(session.view).handoff("self")
    assert result.executor == "self"
    assert (tmp_path / "keep.txt").read_text() == "keep\n"
    refused = [r for r in agent.results if r[1]]
    assert [r[0] for r in refused] == lines[:5]
    assert all("Not now: during the hand-off no file may be deleted or moved" in r[2]
               for r in refused)
    assert (tmp_path / "seen.txt").exists()  # a line that removes nothing ran
    assert session.tool_guards == []  # after the hand-off the guard is gone
    await session.dispose()
