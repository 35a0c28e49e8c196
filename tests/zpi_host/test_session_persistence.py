"""Sessions on disk through create_session: records, resume, the frozen snapshot, warnings,
the tool journal, busy sessions and a stream that breaks after it started."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zpi_host import hookimpl
from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.providers.messages import AssistantMessage, UserMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel
from zpi_host.tools.base import Tool, ToolResult
from zpi_host.transcript import SessionBusyError, delete_session, read_transcript

pytestmark = pytest.mark.anyio


def host() -> PluginHost:
    return PluginHost(PluginConfig(autoload=False)).load()


def record_types(path: Path) -> list[str]:
    return [json.loads(line)["type"] for line in path.read_text().splitlines()]


async def test_a_run_is_recorded_and_a_resume_restores_the_history(zpi_env, tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    model = ScriptedModel([
        {"text": "reading", "tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]},
        "it says alpha",
    ])
    session = await create_session(model="t:m", provider=model, cwd=tmp_path, host=host())
    await session.run("what is in a.txt?")
    path = session.store.path
    await session.dispose()
    assert record_types(path) == ["header", "snapshot", "model_change", "reasoning_level",
                                  "user", "assistant", "tool_use", "tool_result", "assistant"]
    again_model = ScriptedModel(["still alpha"])
    again = await create_session(model="t:m", provider=again_model, cwd=tmp_path, host=host(),
                                 resume=session.session_id)
    assert again.session_id == session.session_id
    await again.run("and now?")
    await again.dispose()
    sent = again_model.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert "alpha" in sent[2].content[0].text
    # same plugins, same options: no second snapshot; the model did not change either
    assert record_types(path).count("snapshot") == 1
    assert record_types(path).count("model_change") == 1


async def test_a_resumed_session_never_repeats_a_recorded_call_id(zpi_env, tmp_path):
    """Each resume gets a new scripted model that counts its turns from 1; its generated call
    ids must still differ from the ids the transcript already holds."""
    (tmp_path / "a.txt").write_text("alpha\n")
    read = {"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]}
    session_id = None
    for prompt in ("first", "second", "third"):
        session = await create_session(model="t:m", provider=ScriptedModel([read, "done"]),
                                       cwd=tmp_path, host=host(), resume=session_id)
        await session.run(prompt)
        await session.dispose()
        session_id = session.session_id
    records = read_transcript(session.store.path).records
    ids = [r.call_id for r in records if r.TYPE == "tool_result"]
    assert ids == ["call_1_0", "call_2_0", "call_3_0"]


def journal_reader(seen: list[list[str]]) -> Tool:
    schema = {"type": "object", "properties": {}, "additionalProperties": False}

    def execute(args, ctx):
        path = next((ctx.cwd.parent / "agent").rglob("*.jsonl"), None)
        seen.append(record_types(path) if path else [])
        return ToolResult.text("looked")

    return Tool("look", "reads its own transcript", schema, execute)


async def test_a_tool_call_is_journaled_before_it_runs(zpi_env, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    seen: list[list[str]] = []
    model = ScriptedModel([{"tool_calls": [{"name": "look", "arguments": {}}]}, "done"])
    session = await create_session(model="t:m", provider=model, cwd=work, host=host(),
                                   agent_dir=tmp_path / "agent",
                                   custom_tools=[journal_reader(seen)])
    await session.run("go")
    await session.dispose()
    assert seen[0][-1] == "tool_use"  # pending on disk while the tool runs


class AddsTool:
    @hookimpl
    def zpi_register_tools(self):
        schema = {"type": "object", "properties": {}}
        return [Tool("extra", "an extra tool", schema, lambda a, c: ToolResult.text("x"))]


async def test_the_session_is_frozen_at_first_send_and_a_new_one_sees_changes(
        zpi_env, zpi_plugins, tmp_path):
    skill = tmp_path / ".zpi" / "skills" / "notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\ndescription: first version\n---\nbody\n")
    (zpi_env.agent_dir / "settings.json").write_text('{"tools": {"output_limit_bytes": 9000}}')
    model = ScriptedModel(["one", "two"])
    session = await create_session(model="t:m", provider=model, cwd=tmp_path)
    await session.run("first")
    # change everything a session was assembled from
    undo = zpi_plugins.register(AddsTool(), "adds-tool")
    (skill / "SKILL.md").write_text("---\ndescription: second version\n---\nbody\n")
    (zpi_env.agent_dir / "settings.json").write_text('{"tools": {"output_limit_bytes": 1}}')
    await session.run("second")
    await session.dispose()
    assert "extra" not in session.tools
    assert session.settings["tools"]["output_limit_bytes"] == 9000
    assert all("first version" in r.system_prompt for r in model.requests)
    assert undo == "adds-tool"
    fresh_model = ScriptedModel(["three"])
    fresh = await create_session(model="t:m", provider=fresh_model, cwd=tmp_path)
    assert "extra" in fresh.tools
    assert fresh.settings["tools"]["output_limit_bytes"] == 1
    await fresh.run("third")
    await fresh.dispose()
    assert "second version" in fresh_model.requests[0].system_prompt


async def test_resuming_after_plugins_changed_warns_and_records_a_new_snapshot(
        zpi_env, zpi_plugins, tmp_path):
    first = await create_session(model="t:m", provider=ScriptedModel(["one"]), cwd=tmp_path)
    await first.run("hi")
    await first.dispose()
    zpi_plugins.register(AddsTool(), "adds-tool")
    again = await create_session(model="t:m", provider=ScriptedModel(["two"]), cwd=tmp_path,
                                 resume=first.session_id)
    events = []
    again.subscribe(events.append)
    result = await again.run("again")
    await again.dispose()
    assert not result.is_error
    warnings = [e.message for e in events if e.type == "warning"]
    assert warnings == ["plugins changed since this session was last used: added adds-tool "
                        "(continuing with what is installed now)"]
    transcript = read_transcript(again.store.path)
    snapshots = [r for r in transcript.records if r.type == "snapshot"]
    assert len(snapshots) == 2
    assert any(p["name"] == "adds-tool" for p in snapshots[-1].snapshot["plugins"])


async def test_a_broken_settings_file_is_a_warning_and_the_other_file_applies(
        zpi_env, tmp_path):
    (zpi_env.agent_dir / "settings.json").write_text('{"tools": ')
    project = tmp_path / ".zpi"
    project.mkdir()
    (project / "settings.json").write_text('{"tools": {"output_limit_bytes": 5000}}')
    session = await create_session(model="t:m", provider=ScriptedModel(["ok"]), cwd=tmp_path)
    events = []
    session.subscribe(events.append)
    await session.run("hi")
    await session.dispose()
    assert session.settings["tools"]["output_limit_bytes"] == 5000
    (warning,) = [e.message for e in events if e.type == "warning"]
    assert "settings.json: line 1, column 11: invalid JSON" in warning
    assert (zpi_env.agent_dir / "settings.json").read_text() == '{"tools": '


async def test_a_torn_last_line_is_a_warning_on_resume(zpi_env, tmp_path):
    first = await create_session(model="t:m", provider=ScriptedModel(["one"]), cwd=tmp_path)
    await first.run("hi")
    await first.dispose()
    with first.store.path.open("a") as handle:
        handle.write('{"type":"user","uuid":"x')  # a crash in the middle of a write
    again = await create_session(model="t:m", provider=ScriptedModel(["two"]), cwd=tmp_path,
                                 resume=first.session_id)
    events = []
    again.subscribe(events.append)
    await again.run("again")
    await again.dispose()
    assert any("torn" in e.message for e in events if e.type == "warning")
    assert read_transcript(again.store.path).records[-1].type == "assistant"


class DeleteWhileRunning:
    def __init__(self) -> None:
        self.error: Exception | None = None

    @hookimpl
    def zpi_turn_start(self, session):
        try:
            delete_session(session.session_id)
        except SessionBusyError as exc:
            self.error = exc


async def test_a_running_session_cannot_be_deleted(zpi_env, zpi_plugins, tmp_path):
    probe = DeleteWhileRunning()
    zpi_plugins.register(probe, "probe")
    session = await create_session(model="t:m", provider=ScriptedModel(["ok"]), cwd=tmp_path)
    await session.run("hi")
    await session.dispose()
    assert probe.error is not None and session.session_id in str(probe.error)
    assert session.store.path.exists()


async def test_a_stream_that_breaks_is_recorded_with_its_error_and_not_replayed(
        zpi_env, zpi_model_server, tmp_path):
    zpi_env.set("OPENAI_API_KEY", "sk-test")
    # a turn whose stream is dropped by injection is served again to the next request
    zpi_model_server.add_turns({"text": "a long answer that breaks off"})
    zpi_model_server.fail_next(drop_after=2)
    settings = {"providers": {"openai": {"base_url": zpi_model_server.base_url}},
                "requests": {"retry_base_delay": 0.001}}
    session = await create_session(model="openai:gpt-test", cwd=tmp_path, host=host(),
                                   settings=settings)
    result = await session.run("tell me")
    assert result.is_error and result.stop_reason == "error"
    assert len(zpi_model_server.requests) == 1  # not replayed
    last = session.messages[-1]
    assert isinstance(last, AssistantMessage) and last.error and last.text
    assert "openai" in last.error
    follow_up = await session.run("go on")
    await session.dispose()
    assert follow_up.result == "a long answer that breaks off"
    stored = read_transcript(session.store.path)
    errors = [r.message.error for r in stored.records if r.type == "assistant"]
    assert errors[0] and errors[1] is None
    resent = zpi_model_server.requests[1].json["messages"]
    assert resent[-1] == {"role": "user", "content": "go on"}
    assert isinstance(session.messages[-2], UserMessage)


async def test_images_go_with_the_prompt_and_survive_a_resume(zpi_env, tmp_path):
    from zpi_host.tools.base import ImageContent, TextContent

    image = ImageContent.from_bytes(b"\x89PNG\r\n\x1a\nfake", "image/png")
    model = ScriptedModel(["a picture"])
    session = await create_session(model="t:m", provider=model, cwd=tmp_path, host=host())
    await session.run("what is this?", images=[image])
    await session.dispose()
    assert model.requests[0].messages[-1].content == (TextContent("what is this?"), image)
    again_model = ScriptedModel(["still a picture"])
    again = await create_session(model="t:m", provider=again_model, cwd=tmp_path, host=host(),
                                 resume=session.session_id)
    await again.run("and now?")
    await again.dispose()
    assert again_model.requests[0].messages[0].content == (TextContent("what is this?"), image)
