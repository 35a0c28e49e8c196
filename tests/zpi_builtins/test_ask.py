"""builtins:ask: the ask_user tool through the session's asking port."""

from __future__ import annotations

import io
import json

import pytest
from helpers.builtins import builtins_settings, scripted_session

from zpi_builtins.ask import NOBODY, parse_questions
from zpi_host import hookimpl
from zpi_host.errors import UsageError
from zpi_host.session.ports import HostPorts, NobodyToAsk, Question, QuestionOption, TerminalAsker
from zpi_host.tools import ToolArgumentError

pytestmark = pytest.mark.anyio

QUESTIONS = [
    {"question": "Which database?", "header": "DB",
     "options": [{"label": "sqlite", "description": "a file"}, {"label": "postgres"}]},
    {"question": "Which checks?", "multi_select": True,
     "options": [{"label": "lint"}, {"label": "types"}, {"label": "tests"}]},
    {"question": "Anything else?"},
]


def asking_turns(questions=QUESTIONS):
    return [{"tool_calls": [{"name": "ask_user", "arguments": {"questions": questions}}]},
            "noted"]


def tool_result(session) -> str:
    (result,) = [m for m in session.messages if m.role == "tool"]
    return "".join(c.text for c in result.content)


def test_questions_are_parsed_and_bad_ones_name_the_field():
    parsed = parse_questions({"questions": QUESTIONS})
    assert parsed[0] == Question("Which database?", "DB", (QuestionOption("sqlite", "a file"),
                                                           QuestionOption("postgres")))
    assert parsed[1].multi_select and parsed[2].options == ()
    cases = [({"questions": []}, "questions"),
             ({"questions": [{"question": " "}]}, "questions[0].question"),
             ({"questions": [{"question": "a", "options": [{"label": 3}]}]},
              "questions[0].options[0].label"),
             ({"questions": [{"question": "a", "multi_select": "yes"}]},
              "questions[0].multi_select"),
             ({"questions": [{"question": "a"}, {"question": "a"}]}, "questions[1].question"),
             ({"questions": [{"question": "a"}], "extra": 1}, None)]
    for arguments, field in cases:
        with pytest.raises(ToolArgumentError) as caught:
            parse_questions(arguments)
        assert caught.value.field == field


async def test_without_a_port_the_model_is_told_nobody_can_answer(zpi_env, tmp_path):
    session = await scripted_session(tmp_path, asking_turns())
    result = await session.run("set it up")
    await session.dispose()
    assert not result.is_error and result.result == "noted"
    assert tool_result(session) == NOBODY


class Notified:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, str]] = []

    @hookimpl
    def zpi_notification(self, message, title, kind):
        self.seen.append((message, title, kind))


async def test_a_callback_answers_and_the_transcript_keeps_questions_and_answers(
        zpi_env, zpi_plugins, tmp_path):
    notified = Notified()
    zpi_plugins.register(notified, "notified")
    asked = []

    async def ask(questions):
        asked.append(questions)
        return {"Which database?": "sqlite", "Which checks?": ["lint", "tests"]}

    session = await scripted_session(tmp_path, asking_turns(), ports=HostPorts(ask_user=ask))
    await session.run("set it up")
    path = session.store.path
    await session.dispose()
    assert [q.question for q in asked[0]] == [q["question"] for q in QUESTIONS]
    assert tool_result(session) == ("The user answered:\n- Which database? -> sqlite\n"
                                    "- Which checks? -> lint, tests\n"
                                    "- Anything else? -> (no answer)")
    assert notified.seen == [("Which database?", "The agent has a question", "input_needed")]
    records = [json.loads(line) for line in path.read_text().splitlines()]
    text = json.dumps(records)
    assert "Which checks?" in text and "lint, tests" in text


async def test_a_bad_answer_is_an_error_result_and_a_declining_port_means_nobody(
        zpi_env, tmp_path):
    async def bad(questions):
        return ["sqlite"]

    async def declines(questions):
        raise NobodyToAsk("the user walked away")

    session = await scripted_session(tmp_path, asking_turns(), ports=HostPorts(ask_user=bad))
    await session.run("go")
    await session.dispose()
    assert "must return a mapping of question to answer, got list" in tool_result(session)
    session = await scripted_session(tmp_path, asking_turns(),
                                     ports=HostPorts(ask_user=declines))
    await session.run("go")
    await session.dispose()
    assert tool_result(session) == f"{NOBODY} (the user walked away)"


@pytest.mark.parametrize("mode", ["plan", "ask"])
async def test_asking_needs_no_approval_in_plan_and_ask_modes(zpi_env, tmp_path, mode):
    async def ask(questions):
        return {q.question: "fine" for q in questions}

    session = await scripted_session(tmp_path, asking_turns(QUESTIONS[2:]),
                                     ports=HostPorts(ask_user=ask), permission_mode=mode)
    result = await session.run("plan it")
    await session.dispose()
    assert not result.denials
    assert tool_result(session) == "The user answered:\n- Anything else? -> fine"


async def test_switched_off_the_tool_is_not_offered(zpi_env, tmp_path):
    on = await scripted_session(tmp_path, ["a"])
    off = await scripted_session(tmp_path, ["a"], settings=builtins_settings(
        ask={"enabled": False}))
    assert "ask_user" in on.tools and "ask_user" not in off.tools
    await on.dispose()
    await off.dispose()


async def test_the_terminal_port_reads_numbers_labels_and_own_answers():
    questions = parse_questions({"questions": QUESTIONS})
    out = io.StringIO()
    asker = TerminalAsker(io.StringIO("2\n1, 3\nuse docker\n"), out)
    answers = await asker(questions)
    assert answers == {"Which database?": "postgres", "Which checks?": ["lint", "tests"],
                       "Anything else?": "use docker"}
    shown = out.getvalue()
    assert "[DB] Which database?" in shown and "  1. sqlite - a file" in shown
    assert "numbers separated by commas" in shown and "Your answer: " in shown
    # a number out of range is the user's own words; closed input declines
    assert TerminalAsker.parse(questions[0], "7") == "7"
    with pytest.raises(NobodyToAsk):
        await TerminalAsker(io.StringIO(""), io.StringIO())(questions)


async def test_the_sdk_option_ask_user_reaches_the_tool(zpi_env, tmp_path):
    from zpi_host.sdk.options import AgentOptions

    async def ask(questions):
        return {q.question: "yes" for q in questions}

    kwargs = AgentOptions(ask_user=ask, cwd=tmp_path).session_kwargs()
    assert kwargs["ports"].ask_user is ask
    with pytest.raises(UsageError, match="ask_user must be an async callable"):
        AgentOptions(ask_user="no").session_kwargs()
    with pytest.raises(UsageError, match=r"ports\.ask_user must be an async callable"):
        HostPorts(ask_user="no")
    with pytest.raises(UsageError, match=r"ports must be a zpi_host\.session\.ports\.HostPorts"):
        await scripted_session(tmp_path, [], ports={"ask_user": ask})
