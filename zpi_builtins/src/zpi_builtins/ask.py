"""Service ``builtins:ask``: the ``ask_user`` tool, which asks the user through the session's
asking port (a terminal prompt, an SDK callback) and tells the model plainly when nobody can
answer. The questions and answers are the tool call and its result in the transcript."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zpi_host import hookimpl
from zpi_host.tools import Tool, ToolArgumentError, ToolContext, ToolMetadata, ToolResult

from .settings import enabled

if TYPE_CHECKING:
    from zpi_host.session.ports import Question

__all__ = ["ASK_TOOL", "zpi_register_tools"]

NAME = "ask_user"
#: shown by ``zpi-host --list-plugins``; read by ``builtins:tool_hint`` when it is disabled
contributes = {"tools": [NAME]}
MAX_QUESTIONS = 4
NOBODY = ("Nobody can answer questions in this session (it has no terminal and no ask_user "
          "callback). Go on with your best judgement and say in your answer what you assumed.")

PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array", "minItems": 1, "maxItems": MAX_QUESTIONS,
            "description": "the questions, asked one after another",
            "items": {
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "the full question"},
                    "header": {"type": "string", "description": "a short label (a few words)"},
                    "options": {
                        "type": "array",
                        "description": "choices; leave out for a free-text answer",
                        "items": {"type": "object", "properties": {
                            "label": {"type": "string"},
                            "description": {"type": "string"}},
                            "required": ["label"]},
                    },
                    "multi_select": {"type": "boolean",
                                     "description": "whether several options may be chosen"},
                },
                "required": ["question"],
            },
        },
    },
    "required": ["questions"],
    "additionalProperties": False,
}

DESCRIPTION = """\
Ask the user one or more questions and wait for the answers. Use it when a decision is the \
user's (an ambiguous requirement, a choice between approaches, a missing value) and you \
cannot find the answer in the workspace. Give options when the likely answers are known; the \
user can always answer in their own words. Do not use it to ask for permission to run a \
tool: the host asks for that itself."""


def _text(value: Any, where: str, *, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise ToolArgumentError(NAME, where, "must be a non-empty string")
    return value.strip()


def parse_questions(arguments: Mapping[str, Any]) -> tuple[Question, ...]:
    """The model's arguments as :class:`Question` objects; a ToolArgumentError names the
    field that does not fit."""
    from zpi_host.session.ports import Question, QuestionOption

    if not isinstance(arguments, Mapping) or set(arguments) - {"questions"}:
        raise ToolArgumentError(NAME, None, "expected an object with only 'questions'")
    raw = arguments.get("questions")
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_QUESTIONS:
        raise ToolArgumentError(NAME, "questions",
                                f"must be a list of 1 to {MAX_QUESTIONS} questions")
    questions: list[Question] = []
    for i, item in enumerate(raw):
        where = f"questions[{i}]"
        if not isinstance(item, Mapping):
            raise ToolArgumentError(NAME, where, "must be an object")
        options = item.get("options") or []
        if not isinstance(options, list):
            raise ToolArgumentError(NAME, f"{where}.options", "must be a list")
        parsed = []
        for j, option in enumerate(options):
            if not isinstance(option, Mapping):
                raise ToolArgumentError(NAME, f"{where}.options[{j}]", "must be an object")
            parsed.append(QuestionOption(
                _text(option.get("label"), f"{where}.options[{j}].label"),
                _text(option.get("description"), f"{where}.options[{j}].description",
                      required=False)))
        multi = item.get("multi_select", False)
        if not isinstance(multi, bool):
            raise ToolArgumentError(NAME, f"{where}.multi_select", "must be true or false")
        question = Question(_text(item.get("question"), f"{where}.question"),
                            _text(item.get("header"), f"{where}.header", required=False),
                            tuple(parsed), multi)
        if any(q.question == question.question for q in questions):
            raise ToolArgumentError(NAME, f"{where}.question", "repeats an earlier question")
        questions.append(question)
    return tuple(questions)


def format_answers(answers: Mapping[str, str | list[str]]) -> str:
    lines = ["The user answered:"]
    for question, answer in answers.items():
        shown = ", ".join(answer) if isinstance(answer, list) else answer
        lines.append(f"- {question} -> {shown or '(no answer)'}")
    return "\n".join(lines)


async def ask_user(questions: Sequence[Question], ctx: ToolContext) -> ToolResult:
    from zpi_host.session.ports import AskUserError, NobodyToAsk, check_answers

    session = ctx.session
    port = session.ports.ask_user if session is not None else None
    if port is None:
        return ToolResult.text(NOBODY, details={"answered": False})
    await session.notify(questions[0].question, "The agent has a question", "input_needed")
    try:
        answers = check_answers(questions, await port(questions))
    except NobodyToAsk as exc:
        return ToolResult.text(f"{NOBODY} ({exc})", details={"answered": False})
    except AskUserError as exc:
        return ToolResult.error(f"the question could not be asked: {exc}")
    return ToolResult.text(format_answers(answers),
                           details={"answered": True, "answers": answers})


#: read-only (it changes nothing, so plan and ask modes let it run without approval) but
#: never run beside other calls or started while the model streams: it waits for a person
ASK_TOOL = Tool(name=NAME, description=DESCRIPTION, parameters=PARAMETERS, execute=ask_user,
                metadata=ToolMetadata(read_only=True, concurrency_safe=False,
                                      side_effects=False, interactive=True),
                prepare=parse_questions)


@hookimpl
def zpi_register_tools(cwd: Path, settings: Mapping[str, Any]) -> list[Tool] | None:
    return [ASK_TOOL] if enabled(settings, "ask") else None
