"""Compaction on threshold, on overflow (loopback server), cancelled, with a plugin's summary,
manual; context usage with and without provider figures; session start and end hooks."""

from __future__ import annotations

import pytest

from zpi_host import hookimpl
from zpi_host.agent.compaction import SUMMARY_SYSTEM_PROMPT, find_cut
from zpi_host.contract.decisions import CompactDecision
from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.errors import ContextOverflowError
from zpi_host.providers.catalog import ModelEntry
from zpi_host.providers.messages import (
    AssistantMessage,
    ContextMessage,
    ImageContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from zpi_host.session.assembly import create_session
from zpi_host.testing import FunctionModel, ScriptedModel
from zpi_host.tools.base import TextContent
from zpi_host.transcript import SessionManager, read_transcript

pytestmark = pytest.mark.anyio

SMALL = {"compaction": {"reserve_tokens": 100, "keep_recent_tokens": 30}}


def host() -> PluginHost:
    return PluginHost(PluginConfig(autoload=False)).load()


def with_window(model, window: int = 1000):
    model.entry = ModelEntry(name="m", provider="t", model="m", context_window=window)
    return model


def turn(text: str, input_tokens: int = 10) -> dict:
    return {"text": text, "usage": {"input_tokens": input_tokens, "output_tokens": 5}}


# ------------------------------------------------------------------------------ the cut


def test_the_cut_never_separates_a_call_from_its_result():
    call = AssistantMessage((ToolCallContent("c1", "read", {"path": "a"}),), "tool_use")
    result = ToolResultMessage("c1", "read", (TextContent("x" * 400),))
    messages = [UserMessage.text("a" * 400), call, result, AssistantMessage(
        (TextContent("done"),))]
    cut = find_cut(messages, keep_tokens=60)
    assert cut == 3 and not isinstance(messages[cut], ToolResultMessage)
    assert find_cut(messages[:1], keep_tokens=10) == 0  # nothing older to summarise
    assert find_cut([UserMessage.text("x"), result], keep_tokens=1) == 0


# -------------------------------------------------------------------------- triggers


async def test_threshold_compacts_before_the_next_request(zpi_env, tmp_path):
    model = with_window(ScriptedModel([
        turn("first answer " + "x" * 400, input_tokens=950),  # leaves less than the reserve
        "the summary of it",  # the summarisation request
        turn("second answer"),
    ]))
    session = await create_session(model="t:m", provider=model, cwd=tmp_path, host=host(),
                                   settings=SMALL)
    events = []
    session.subscribe(events.append)
    await session.run("first question " + "y" * 400)
    result = await session.run("second question")
    await session.dispose()
    assert result.result == "second answer"
    summarising = model.requests[1]
    assert summarising.system_prompt == SUMMARY_SYSTEM_PROMPT and summarising.tools == ()
    assert "first question" in summarising.messages[0].text_content
    sent = model.requests[2].messages
    assert isinstance(sent[0], ContextMessage) and "the summary of it" in sent[0].text
    assert sent[-1] == UserMessage.text("second question")
    (compaction,) = [e.result for e in events if e.type == "compaction"]
    assert (compaction.trigger, compaction.reason, compaction.summarized_by) == (
        "auto", "threshold", "model")
    assert compaction.tokens_after < compaction.tokens_before
    records = read_transcript(session.store.path).records
    (record,) = [r for r in records if r.type == "compaction"]
    assert record.summary == "the summary of it"
    assert sum(r.type == "user" for r in records) == 2  # the originals stay in the file
    resumed = await create_session(model="t:m", provider=ScriptedModel([]), cwd=tmp_path,
                                   host=host(), resume=session.session_id)
    assert "the summary of it" in resumed.messages[0].text
    assert resumed.messages[-1].text == "second answer"
    await resumed.dispose()


async def test_overflow_from_the_provider_compacts_once_and_retries(
        zpi_env, zpi_model_server, tmp_path):
    zpi_env.set("OPENAI_API_KEY", "sk-test")
    zpi_model_server.add_turns("one " + "z" * 500, "the summary", "two")
    settings = {"providers": {"openai": {"base_url": zpi_model_server.base_url}},
                "requests": {"retry_base_delay": 0.001}, **SMALL}
    session = await create_session(model="openai:gpt-test", cwd=tmp_path, host=host(),
                                   settings=settings)
    await session.run("question one " + "q" * 500)
    zpi_model_server.fail_next(context_overflow=True)
    result = await session.run("question two")
    await session.dispose()
    assert result.result == "two" and not result.is_error
    paths = [r.json["messages"][0]["content"] for r in zpi_model_server.requests[1:]]
    assert paths[1] == SUMMARY_SYSTEM_PROMPT  # overflowed, then summarised, then retried
    retried = zpi_model_server.requests[3].json["messages"]
    assert "the summary" in retried[1]["content"] and retried[-1]["content"] == "question two"


class Cancels:
    @hookimpl
    def zpi_before_compact(self, preparation):
        return CompactDecision(cancel=True, reason=f"not now ({preparation.reason})")


async def test_a_cancelled_compaction_on_overflow_ends_the_run_with_the_error(
        zpi_env, zpi_plugins, tmp_path):
    zpi_plugins.register(Cancels(), "cancels")

    def answer(request):
        if len(request.messages) > 2:
            raise ContextOverflowError("prompt is too long")
        return "short"

    session = await create_session(model="t:m", provider=FunctionModel(answer), cwd=tmp_path)
    await session.run("one")
    result = await session.run("two")
    await session.dispose()
    assert result.is_error and "prompt is too long" in result.result
    assert "could not be compacted" in result.result
    assert any("not now (overflow)" in w for w in session.warnings)


class Summarises:
    def __init__(self) -> None:
        self.seen = []

    @hookimpl
    def zpi_before_compact(self, preparation):
        self.seen.append(preparation)
        return CompactDecision(summary="a plugin's summary")

    @hookimpl
    def zpi_after_compact(self, result):
        self.seen.append(result)


async def test_manual_compaction_with_a_plugin_summary(zpi_env, zpi_plugins, tmp_path):
    plugin = Summarises()
    zpi_plugins.register(plugin, "summarises")
    (tmp_path / "a.txt").write_text("alpha\n")
    model = ScriptedModel([
        {"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]},
        "read it " + "r" * 300,
        "after",
    ])
    session = await create_session(model="t:m", provider=model, cwd=tmp_path,
                                   settings={"compaction": {"keep_recent_tokens": 10}})
    await session.run("look " + "l" * 300)
    result = await session.compact("keep the file names")
    preparation, observed = plugin.seen
    assert preparation.trigger == "manual" and preparation.instructions == "keep the file names"
    assert observed is result and result.summarized_by == "summarises"
    assert result.read_files == ("a.txt",)
    assert len(model.requests) == 2  # the model was not asked for the summary
    await session.run("next")
    await session.dispose()
    assert "a plugin's summary" in model.requests[2].messages[0].text
    assert "Files read: a.txt" in model.requests[2].messages[0].text


# ------------------------------------------------------------------- context usage


async def test_context_usage_without_and_with_provider_figures(zpi_env, tmp_path):
    model = with_window(ScriptedModel([turn("hello", input_tokens=1234)]), window=8000)
    session = await create_session(model="t:m", provider=model, cwd=tmp_path, host=host())
    before = session.get_context_usage()
    assert before.estimated and before.last_reported_input_tokens is None
    assert before.categories["system_prompt"].tokens > 0
    assert before.categories["tools"].tokens > 0
    assert before.total_tokens == sum(c.tokens for c in before.categories.values())
    assert len(model.requests) == 0  # never calls the model
    await session.run("hi")
    after = session.get_context_usage()
    assert after.last_reported_input_tokens == 1234
    assert after.total_tokens > 1234 and after.context_window == 8000
    assert 0 < after.fraction_used < 1
    await session.dispose()


async def test_context_usage_reports_images_as_unknown(zpi_env, tmp_path):
    store = SessionManager.in_memory(cwd=tmp_path)
    store.append_message(UserMessage((ImageContent("aGk=", "image/png"),)))
    session = await create_session(model="t:m", provider=ScriptedModel([]), cwd=tmp_path,
                                   host=host(), session_manager=store)
    usage = session.get_context_usage()
    assert usage.categories["messages"].tokens is None and usage.total_tokens is None
    await session.dispose()


# --------------------------------------------------------------- session start and end


class Lifecycle:
    def __init__(self) -> None:
        self.calls = []

    @hookimpl
    def zpi_session_start(self, session, source):
        self.calls.append(("start", source))
        return f"started by {source}"

    @hookimpl
    def zpi_session_end(self, session, reason):
        self.calls.append(("end", reason))


async def test_session_start_once_per_session_and_end_on_dispose(zpi_env, zpi_plugins,
                                                                 tmp_path):
    plugin = Lifecycle()
    zpi_plugins.register(plugin, "lifecycle")
    model = ScriptedModel(["one", "two"])
    session = await create_session(model="t:m", provider=model, cwd=tmp_path)
    await session.run("a")
    await session.run("b")
    await session.dispose("prompt_input_exit")
    assert plugin.calls == [("start", "startup"), ("end", "prompt_input_exit")]
    first = model.requests[0].messages
    assert first[0] == ContextMessage("started by startup", "lifecycle")
    assert sum(isinstance(m, ContextMessage) for m in model.requests[1].messages) == 1
    resumed = await create_session(model="t:m", provider=ScriptedModel(["three"]),
                                   cwd=tmp_path, resume=session.session_id)
    await resumed.run("c")
    await resumed.dispose()
    assert plugin.calls[2:] == [("start", "resume"), ("end", "other")]
    records = read_transcript(resumed.store.path).records
    assert [r.text for r in records if r.type == "context"] == [
        "started by startup", "started by resume"]
    unused = await create_session(model="t:m", provider=ScriptedModel([]), cwd=tmp_path)
    await unused.dispose()
    assert len(plugin.calls) == 4  # a session that never ran neither starts nor ends


async def test_only_the_last_answers_figure_counts(zpi_env, tmp_path):
    # an older figure described a shorter history: once a later answer came without one, it
    # neither sizes the context nor triggers another compaction
    model = with_window(ScriptedModel([turn("one", input_tokens=990), "the summary", "three",
                                       "four"]), window=1000)
    session = await create_session(model="t:m", provider=model, cwd=tmp_path, host=host(),
                                   settings=SMALL)
    await session.run("a")
    assert session.get_context_usage().last_reported_input_tokens == 990
    await session.run("b")  # 990 > 1000 - 100: compacted first
    usage = session.get_context_usage()
    assert usage.last_reported_input_tokens is None and usage.estimated
    result = await session.run("c")  # no second compaction
    await session.dispose()
    assert result.result == "four"
    summaries = [r for r in model.requests if r.system_prompt == SUMMARY_SYSTEM_PROMPT]
    assert len(model.requests) == 4 and len(summaries) == 1
