"""Service ``builtins:todos``: the ``todo_write`` tool, the model's task list for a session.

Claude Code's ``TodoWrite`` with its schema: each call gives the whole list, every item with
``content`` (what to do), ``status`` (``pending``, ``in_progress``, ``completed``) and
``activeForm`` (the same in the present continuous, shown while it is in progress). The tool
changes nothing outside the session, so it is read-only (no approval in any mode); calls run
one at a time, in order. The list lives in the session's runtime; a resumed session starts
from the last list its history gave. The result's ``details`` are Claude Code's
``{"oldTodos", "newTodos"}``; the CLI draws the list as one line, the SDK shows the call as
Claude Code does (a ``TodoWrite`` tool use).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from zpi_host import hookimpl
from zpi_host.tools import Tool, ToolArgumentError, ToolContext, ToolMetadata, ToolResult

from .settings import enabled

__all__ = ["TODO_TOOL", "TodoList", "prepare_todos", "zpi_register_tools"]

SERVICE = "todos"
NAME = "todo_write"
STATUSES = ("pending", "in_progress", "completed")

#: shown by ``zpi-host --list-plugins``
contributes = {"tools": [NAME]}

PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "description": "The updated todo list",
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 1},
                    "status": {"type": "string", "enum": list(STATUSES)},
                    "activeForm": {"type": "string", "minLength": 1},
                },
                "required": ["content", "status", "activeForm"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["todos"],
    "additionalProperties": False,
}

DESCRIPTION = """\
Create and update a structured task list for this session, to track progress on work with \
several steps and show the user where you are. Give the whole list on every call: each item \
has content (imperative: "Run the tests"), activeForm (present continuous: "Running the \
tests") and status (pending, in_progress, completed). Keep exactly one item in_progress while \
working; mark an item completed as soon as it is done, and add items you discover. Skip it \
for a single trivial step."""

RESULT = ("Todos have been modified successfully. Ensure that you continue to use the todo "
          "list to track your progress. Please proceed with the current tasks if applicable")


def prepare_todos(arguments: Mapping[str, Any]) -> list[dict[str, str]]:
    """The checked list; a ToolArgumentError names the item and field that do not fit."""
    from zpi_host.tools.base import _check_object

    _check_object(NAME, PARAMETERS, arguments)
    todos = arguments["todos"]
    out = []
    for i, item in enumerate(todos):
        if not isinstance(item, Mapping):
            raise ToolArgumentError(NAME, f"todos[{i}]", "must be an object with content, "
                                    "status and activeForm")
        for field in sorted(set(item) - {"content", "status", "activeForm"}):
            raise ToolArgumentError(NAME, f"todos[{i}].{field}", "is not a field of a todo "
                                    "(known: content, status, activeForm)")
        for field in ("content", "status", "activeForm"):
            if not isinstance(item.get(field), str):
                raise ToolArgumentError(NAME, f"todos[{i}].{field}", "is required (a string)")
        for field in ("content", "activeForm"):
            if not item[field].strip():
                raise ToolArgumentError(NAME, f"todos[{i}].{field}", "must not be empty")
        if item["status"] not in STATUSES:
            raise ToolArgumentError(NAME, f"todos[{i}].status",
                                    f"must be one of {', '.join(STATUSES)}")
        out.append({"content": item["content"], "status": item["status"],
                    "activeForm": item["activeForm"]})
    return out


class TodoList:
    """One session's list (the runtime's ``todos`` service). Seeded from the history the
    first time it is used, so a resumed session goes on from its last list."""

    def __init__(self, runtime: Any) -> None:
        self.items: list[dict[str, str]] = last_list(getattr(runtime.session, "messages", ()))

    def replace(self, todos: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
        """Put ``todos`` in place; the old list comes back. A list whose items are all
        completed is done: the session's list is empty again (as in Claude Code)."""
        old = self.items
        done = bool(todos) and all(t["status"] == "completed" for t in todos)
        self.items = [] if done else [dict(t) for t in todos]
        return old


def last_list(messages: Sequence[Any]) -> list[dict[str, str]]:
    """The list the last successful todo call in ``messages`` left (empty when it finished
    every item, or when there is none). A call without a result (the one running now, or one
    a crash interrupted) left nothing."""
    from zpi_host.providers.messages import AssistantMessage, ToolResultMessage

    succeeded = {m.call_id for m in messages
                 if isinstance(m, ToolResultMessage) and not m.is_error}
    for message in reversed(messages):
        if not isinstance(message, AssistantMessage):
            continue
        for call in reversed(message.tool_calls):
            if call.name in (NAME, "TodoWrite") and call.id in succeeded:
                try:
                    todos = prepare_todos(call.arguments)
                except ToolArgumentError:
                    continue
                done = bool(todos) and all(t["status"] == "completed" for t in todos)
                return [] if done else todos
    return []


def _service(session: Any) -> TodoList:
    from .runtime import runtime_for

    return runtime_for(session).service(SERVICE, TodoList)


def execute(todos: list[dict[str, str]], ctx: ToolContext) -> ToolResult:
    if ctx.session is None:
        return ToolResult.error("the todo list needs a session to keep it in")
    old = _service(ctx.session).replace(todos)
    return ToolResult.text(RESULT, details={"oldTodos": old, "newTodos": todos})


TODO_TOOL = Tool(name=NAME, description=DESCRIPTION, parameters=PARAMETERS, execute=execute,
                 metadata=ToolMetadata(read_only=True, concurrency_safe=False,
                                       side_effects=False),
                 prepare=prepare_todos)


@hookimpl
def zpi_register_tools(cwd: Path, settings: Mapping[str, Any]) -> list[Tool] | None:
    return [TODO_TOOL] if enabled(settings, SERVICE) else None
