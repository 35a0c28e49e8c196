"""The standard tool names: ``Read``, ``Write``, ``Edit``, ``Bash`` with Claude's parameters,
adapted onto the session's own ``read``, ``write``, ``edit`` and ``bash`` tools; ``Skill`` onto
the Claude adapter's ``skill`` tool when the session has it (same parameters); ``TaskOutput``
and ``TaskStop`` onto builtins:tasks' ``task_output`` and ``task_stop``; ``Agent`` (Claude
Code's sub-agent tool, formerly ``Task``) onto builtins:subagents' ``task``; ``WebFetch`` and
``WebSearch`` onto builtins:web's ``web_fetch`` and ``web_search`` (same parameters);
``MultiEdit`` onto ``edit`` too (several edits, all or none); ``TodoWrite``, ``LS``,
``NotebookRead`` and ``NotebookEdit`` onto builtins:todos' ``todo_write``, builtins:search's
``ls`` and builtins:notebooks' ``notebook_read`` and ``notebook_edit`` (same parameters);
``Read`` of a ``.ipynb`` shows its cells through ``notebook_read`` when the session has it.

An adapter is a :class:`~zpi_host.tools.Tool` whose ``prepare`` turns Claude's arguments into
the wrapped tool's (and names Claude's field when they do not fit) and whose ``execute`` is the
wrapped tool's. They are added by the ``zpi_prepare_tools`` hook of :class:`StandardToolsPlugin`,
so they wrap whatever implements the kernel tools in that session (plugin overrides included),
and the kernel tools themselves are left out of what the model sees. The loop never learns
these names: to it they are tools like any other. Permission rules name them as Claude does
(``Bash(git status:*)``, ``Edit(src/**)``): their path and command arguments are registered
with the permission checks below.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any

import attrs

from ..contract.hookspecs import hookimpl
from ..permissions import COMMAND_ARGUMENTS, PATH_ARGUMENTS, READ_TOOLS
from ..permissions.toolnames import CLAUDE_SPELLINGS
from ..tools.base import Tool, ToolArgumentError, ToolFailure, ToolMetadata, _check_object

__all__ = ["STANDARD_NAMES", "StandardToolsPlugin", "standard_tools"]

#: kernel (or service) tool -> the standard name the model sees (Claude's current name, from
#: the one table of spellings that permission rules also match by); ``task_output`` and
#: ``task_stop`` exist when the task service (zpi-builtins' ``builtins:tasks``) is installed,
#: ``web_fetch`` and ``web_search`` with the web service (``builtins:web``); ``glob`` and
#: ``grep`` (Claude's parameters already) with ``builtins:search``; the MCP resource tools
#: (Claude's parameters too) with ``builtins:mcp`` when a server offers resources
STANDARD_NAMES: Mapping[str, str] = {
    name: CLAUDE_SPELLINGS[name][0] for name in (
        "read", "write", "edit", "bash", "skill", "task_output", "task_stop", "task",
        "web_fetch", "web_search", "glob", "grep", "list_mcp_resources", "read_mcp_resource",
        "todo_write", "ls", "notebook_read", "notebook_edit")}
#: further standard names for a tool that has one above: Claude's ``MultiEdit`` is the
#: kernel's ``edit`` with several edits, all or none (Claude's parameters)
MORE_STANDARD_NAMES: Mapping[str, tuple[str, ...]] = {"edit": ("MultiEdit",)}

#: Claude's Bash timeout limit, in milliseconds
MAX_TIMEOUT_MS = 600_000

PATH_ARGUMENTS.update({"Read": ("file_path",), "Write": ("file_path",),
                       "Edit": ("file_path",), "MultiEdit": ("file_path",), "Glob": ("path",),
                       "Grep": ("path",), "LS": ("path",), "NotebookRead": ("notebook_path",),
                       "NotebookEdit": ("notebook_path",)})
COMMAND_ARGUMENTS["Bash"] = "command"
READ_TOOLS.update(("Read", "Grep"))

_FILE_PATH = {"type": "string", "description": "The absolute path of the file (a path "
                                                "relative to the working directory works too)."}

SCHEMAS: Mapping[str, Mapping[str, Any]] = {
    "Read": {"type": "object", "properties": {
        "file_path": _FILE_PATH,
        "offset": {"type": "integer", "description": "The line number to start reading at "
                                                     "(1 is the first line)."},
        "limit": {"type": "integer", "description": "The number of lines to read."},
    }, "required": ["file_path"], "additionalProperties": False},
    "Write": {"type": "object", "properties": {
        "file_path": _FILE_PATH,
        "content": {"type": "string", "description": "The whole content to write."},
    }, "required": ["file_path", "content"], "additionalProperties": False},
    "Edit": {"type": "object", "properties": {
        "file_path": _FILE_PATH,
        "old_string": {"type": "string", "description": "The exact text to replace."},
        "new_string": {"type": "string", "description": "The text to put in its place."},
        "replace_all": {"type": "boolean", "description": "Replace every occurrence of "
                                                          "old_string (default false)."},
    }, "required": ["file_path", "old_string", "new_string"], "additionalProperties": False},
    "MultiEdit": {"type": "object", "properties": {
        "file_path": _FILE_PATH,
        "edits": {"type": "array", "minItems": 1, "description": "The edits, applied in "
                  "order to the result of the one before; all apply or none is written.",
                  "items": {"type": "object", "properties": {
                      "old_string": {"type": "string", "description": "The exact text to "
                                                                      "replace."},
                      "new_string": {"type": "string", "description": "The text to put in "
                                                                      "its place."},
                      "replace_all": {"type": "boolean", "description": "Replace every "
                                      "occurrence of old_string (default false)."},
                  }, "required": ["old_string", "new_string"], "additionalProperties": False}},
    }, "required": ["file_path", "edits"], "additionalProperties": False},
    "Bash": {"type": "object", "properties": {
        "command": {"type": "string", "description": "The command to run."},
        "timeout": {"type": "integer", "description": f"Timeout in milliseconds (at most "
                                                      f"{MAX_TIMEOUT_MS})."},
        "description": {"type": "string", "description": "What the command does, in a few "
                                                         "words."},
        "run_in_background": {"type": "boolean", "description": "Run the command in the "
                              "background and return at once with a task id; read its output "
                              "with TaskOutput, stop it with TaskStop. You are told when it "
                              "ends."},
    }, "required": ["command"], "additionalProperties": False},
    "TaskOutput": {"type": "object", "properties": {
        "task_id": {"type": "string", "description": "The id of the background task."},
        "block": {"type": "boolean", "description": "Whether to wait for the task to end "
                                                    "(default true)."},
        "timeout": {"type": "number", "description": "How long to wait, in milliseconds "
                                                     "(default 30000, at most 600000)."},
    }, "required": ["task_id"], "additionalProperties": False},
    "TaskStop": {"type": "object", "properties": {
        "task_id": {"type": "string", "description": "The id of the background task to stop."},
        "shell_id": {"type": "string", "description": "Deprecated: use task_id."},
    }, "additionalProperties": False},
    "Agent": {"type": "object", "properties": {
        "description": {"type": "string", "description": "A short (3-5 word) description of "
                                                         "the task."},
        "prompt": {"type": "string", "description": "The task for the agent to perform: all "
                                                    "it needs, since it sees nothing else."},
        "subagent_type": {"type": "string", "description": "The type of agent to use "
                                                           "(default general-purpose)."},
    }, "required": ["description", "prompt"], "additionalProperties": False},
    "WebFetch": {"type": "object", "properties": {
        "url": {"type": "string", "description": "The URL to fetch content from."},
        "prompt": {"type": "string", "description": "The prompt to run on the fetched "
                                                    "content."},
    }, "required": ["url", "prompt"], "additionalProperties": False},
    "WebSearch": {"type": "object", "properties": {
        "query": {"type": "string", "description": "The search query to use."},
        "allowed_domains": {"type": "array", "items": {"type": "string"},
                            "description": "Only include search results from these domains."},
        "blocked_domains": {"type": "array", "items": {"type": "string"},
                            "description": "Never include search results from these domains."},
    }, "required": ["query"], "additionalProperties": False},
}

DESCRIPTIONS: Mapping[str, str] = {
    "Read": "Read a file from the workspace. Text comes back as numbered lines; offset and "
            "limit choose a part of a long file. Read a file before you change it.",
    "Write": "Write a whole file, creating it (and missing folders) or replacing it. An "
             "existing file must have been read first; prefer Edit for a small change.",
    "Edit": "Replace text in a file: old_string must match exactly once (copy it from Read's "
            "output without the line numbers), unless replace_all is true.",
    "Bash": "Run a shell command in the working directory and return its output. stdin is "
            "empty: do not run interactive programs.",
    "MultiEdit": "Make several replacements in one file at once: each edit is applied to the "
                 "result of the one before, like Edit's old_string/new_string; either all "
                 "apply or the file is left unchanged. Read the file first.",
    "TaskOutput": "Show the output of a background task (Bash with run_in_background) and "
                  "whether it ended; with block (the default) wait up to timeout ms for its "
                  "end first.",
    "TaskStop": "Stop a background task and every process it started. Stopping a task that "
                "already ended does nothing.",
    "Agent": "Launch a new agent to handle a complex, multi-step task on its own; it returns "
             "its final answer. The agent types are listed in the instructions. Start several "
             "in one answer to run them in parallel. The agent sees nothing of this "
             "conversation: give it the whole task.",
    "WebFetch": "Fetch a URL (public http or https addresses) and answer the prompt from its "
                "content, converted to Markdown. A redirect to another host is reported, not "
                "followed: fetch the new URL if you want it.",
    "WebSearch": "Search the web; returns result titles, URLs and snippets. allowed_domains or "
                 "blocked_domains filter the results by domain.",
    "Glob": "Find files by name with a glob pattern (**/*.py, src/**/*.{ts,tsx}); newest "
            "first. Hidden files (.env, .claude/...) are included; files ignored by "
            ".gitignore, version-control folders and symlinks are left out.",
    "Grep": "Search file contents with a regular expression (ripgrep syntax). output_mode: "
            "files_with_matches (default), content (lines, with -n, -A/-B/-C) or count; "
            "narrow with glob or type. Ignored, hidden and binary files are skipped.",
}

#: kernel field -> Claude's field, to name Claude's field in argument errors (None: the
#: problem concerns the arguments as a whole)
_CLAUDE_FIELDS: Mapping[str, str | None] = {
    "path": "file_path", "edits[0].old_text": "old_string", "edits[0].new_text": "new_string",
    "edits[0].replace_all": "replace_all", "edits[0]": None, "agent_type": "subagent_type"}


def _claude_field(name: str, field: str | None) -> str | None:
    """The kernel's field ``field`` as Claude's tool ``name`` calls it (``edits[2].old_text``
    is MultiEdit's ``edits[2].old_string``, Edit's ``old_string``)."""
    if name == "MultiEdit" and field is not None and field != "path":
        return field.replace("old_text", "old_string").replace("new_text", "new_string")
    return _CLAUDE_FIELDS.get(field or "", field)


def _read(args: dict[str, Any], accepts: Container[str]) -> dict[str, Any]:
    out = {"path": args["file_path"]}
    for key in ("offset", "limit"):
        if args.get(key) is not None:
            out[key] = args[key]
    if out.get("offset") == 0:  # Claude's Read accepts 0 for the start
        out["offset"] = 1
    return out


def _write(args: dict[str, Any], accepts: Container[str]) -> dict[str, Any]:
    return {"path": args["file_path"], "content": args["content"]}


def _edit(args: dict[str, Any], accepts: Container[str]) -> dict[str, Any]:
    edit = {"old_text": args["old_string"], "new_text": args["new_string"]}
    if args.get("replace_all") is not None:
        edit["replace_all"] = args["replace_all"]
    return {"path": args["file_path"], "edits": [edit]}


def _multi_edit(args: dict[str, Any], accepts: Container[str]) -> dict[str, Any]:
    edits = []
    for edit in args["edits"]:
        one = {"old_text": edit["old_string"], "new_text": edit["new_string"]}
        if edit.get("replace_all") is not None:
            one["replace_all"] = edit["replace_all"]
        edits.append(one)
    return {"path": args["file_path"], "edits": edits}


def _bash(args: dict[str, Any], accepts: Container[str]) -> dict[str, Any]:
    """``run_in_background`` and ``description`` go to a bash that takes them (the task
    service's override); a plain bash cannot run in the background."""
    out: dict[str, Any] = {"command": args["command"]}
    if args.get("run_in_background"):
        if "run_in_background" not in accepts:
            raise ToolArgumentError("Bash", "run_in_background", "background commands need "
                                    "the task service (zpi-builtins, builtins:tasks), which "
                                    "this session does not have; run the command in the "
                                    "foreground")
        out["run_in_background"] = True
    if args.get("description") is not None and "description" in accepts:
        out["description"] = args["description"]
    timeout = args.get("timeout")
    if timeout is not None:
        if timeout <= 0 or timeout > MAX_TIMEOUT_MS:
            raise ToolArgumentError("Bash", "timeout", f"must be between 1 and "
                                    f"{MAX_TIMEOUT_MS} milliseconds, got {timeout}")
        out["timeout"] = max(1, math.ceil(timeout / 1000))
    return out


def _task_output(args: dict[str, Any], accepts: Container[str]) -> dict[str, Any]:
    return dict(args)  # the service takes Claude's parameters as they are


def _task_stop(args: dict[str, Any], accepts: Container[str]) -> dict[str, Any]:
    task_id = args.get("task_id", args.get("shell_id"))
    if task_id is None:
        raise ToolArgumentError("TaskStop", "task_id", "is required")
    return {"task_id": task_id}


def _unchanged(args: dict[str, Any], accepts: Container[str]) -> dict[str, Any]:
    return dict(args)


def _agent(args: dict[str, Any], accepts: Container[str]) -> dict[str, Any]:
    return {"agent_type": args.get("subagent_type") or "general-purpose",
            "description": args["description"], "prompt": args["prompt"]}


#: Claude's arguments -> the wrapped tool's, given the parameter names that tool accepts
CONVERT: Mapping[str, Callable[[dict[str, Any], Container[str]], dict[str, Any]]] = {
    "Read": _read, "Write": _write, "Edit": _edit, "MultiEdit": _multi_edit, "Bash": _bash,
    "TaskOutput": _task_output, "TaskStop": _task_stop, "Agent": _agent,
}


def adapt(kernel_tool: Tool, name: str, notebooks: Tool | None = None) -> Tool:
    """``kernel_tool`` under the standard ``name``, taking Claude's arguments (a tool whose
    parameters are Claude's already, ``skill``, ``glob``, ``grep``, keeps them). ``Read``
    given ``notebooks`` (the session's ``notebook_read``) shows a ``.ipynb`` through it."""
    schema = SCHEMAS.get(name, kernel_tool.parameters)
    convert = CONVERT.get(name, _unchanged)
    accepts = frozenset(kernel_tool.parameters.get("properties", {}))

    def prepare(arguments: Mapping[str, Any]) -> Any:
        checked = _check_object(name, schema, arguments)
        try:
            return kernel_tool.prepare_arguments(convert(checked, accepts))
        except ToolArgumentError as exc:
            if exc.tool == name:
                raise
            field = _claude_field(name, exc.field)
            raise ToolArgumentError(name, field, exc.problem) from None

    changes: dict[str, Any] = {}
    if name == "Bash":  # its stdout and stderr apart, for tool_use_result (tool_results.py)
        run = kernel_tool.execute

        def execute(args: Any, ctx: Any) -> Any:
            return run(args, attrs.evolve(ctx, streams_apart=True))

        changes["execute"] = execute
    if name == "Read" and notebooks is not None:
        changes["execute"] = _reading_notebooks(kernel_tool, notebooks)
    return attrs.evolve(kernel_tool, name=name,
                        description=DESCRIPTIONS.get(name, kernel_tool.description),
                        parameters=schema, prepare=prepare, **changes)


def _reading_notebooks(read: Tool, notebooks: Tool) -> Callable[[Any, Any], Any]:
    """Read's ``execute``: a ``.ipynb`` comes back as its cells with their outputs, as Claude
    Code's Read returns a notebook (``offset``/``limit`` do not apply), through the
    ``notebook_read`` tool the session has (builtins:notebooks: the kernel does not import
    it), which also records the read; any other file through ``read``."""
    run = read.execute

    def execute(args: Any, ctx: Any) -> Any:
        path = args.get("path") if isinstance(args, Mapping) else None
        if isinstance(path, str) and path.lower().endswith(".ipynb"):
            return notebooks.execute(notebooks.prepare_arguments({"notebook_path": path}),
                                     ctx)
        return run(args, ctx)

    return execute


#: Claude's search tools: provided by a plugin as ``glob``/``grep`` when installed; otherwise
#: the model still sees their schemas and a call says they are not supported
PLACEHOLDER_SCHEMAS: Mapping[str, Mapping[str, Any]] = {
    "Glob": {"type": "object", "properties": {
        "pattern": {"type": "string", "description": "The glob pattern, e.g. **/*.py."},
        "path": {"type": "string", "description": "The folder to search (default: the "
                                                  "working directory)."},
    }, "required": ["pattern"], "additionalProperties": False},
    "Grep": {"type": "object", "properties": {
        "pattern": {"type": "string", "description": "The regular expression to search for."},
        "path": {"type": "string", "description": "The file or folder to search."},
        "glob": {"type": "string", "description": "Only files matching this glob."},
        "type": {"type": "string", "description": "Only files of this type (py, js ...)."},
        "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"],
                        "description": "What to show (default files_with_matches)."},
        "-i": {"type": "boolean", "description": "Ignore case."},
        "-n": {"type": "boolean", "description": "Show line numbers (content mode)."},
        "-A": {"type": "integer", "description": "Lines of context after each match."},
        "-B": {"type": "integer", "description": "Lines of context before each match."},
        "-C": {"type": "integer", "description": "Lines of context around each match."},
        "head_limit": {"type": "integer", "description": "Show at most this many results."},
        "multiline": {"type": "boolean", "description": "Let . match newlines."},
    }, "required": ["pattern"], "additionalProperties": False},
}


def placeholder(name: str) -> Tool:
    """A search tool this host does not have: its schema, and a call that says so."""

    def execute(args: Any, ctx: Any) -> Any:
        raise ToolFailure(f"{name} is not supported by this host (no search plugin is "
                          "installed); use Bash with find or grep instead")

    return Tool(name, f"{name}: not available in this host; use Bash instead.",
                PLACEHOLDER_SCHEMAS[name], execute,
                ToolMetadata(read_only=True, concurrency_safe=True, side_effects=False))


def standard_tools(found: Sequence[Tool]) -> list[Tool]:
    """The standard tools for the kernel tools (and the Claude adapter's ``skill``) among
    ``found``, and placeholders for the search tools no plugin provides."""
    names = {t.name for t in found}
    notebooks = next((t for t in found if t.name == "notebook_read"), None)
    tools = [adapt(t, STANDARD_NAMES[t.name], notebooks if t.name == "read" else None)
             for t in found if t.name in STANDARD_NAMES]
    tools += [adapt(t, more) for t in found for more in MORE_STANDARD_NAMES.get(t.name, ())]
    tools += [placeholder(n) for n in PLACEHOLDER_SCHEMAS if n.lower() not in names]
    return tools


class StandardToolsPlugin:
    """Adds the standard tools during assembly (``zpi_prepare_tools``); the kernel names they
    stand for are removed by the session's tool selection (``exclude_tools``/``hide_tools``)."""

    @hookimpl
    def zpi_prepare_tools(self, tools: Sequence[Any]) -> list[Tool]:
        return standard_tools(tools)
