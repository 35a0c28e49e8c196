"""The plugin contract: every hook the host calls, when, with what, and how answers combine.

This module is the single source of truth for hook names and signatures; ``docs/hooks.md``
mirrors it and a test keeps the two in step. Implement a hook by writing a function with the
same name (and any subset of its arguments) decorated with :data:`hookimpl`::

    from zpi_host import hookimpl

    @hookimpl
    def zpi_before_tool(call):
        if call.name == "bash" and "rm -rf /" in call.arguments.get("command", ""):
            return ToolDecision.deny("refusing to wipe the disk")

Rules that hold for every hook:

* Implementations may be plain functions or ``async def``; the host awaits whatever is
  awaitable. Hook wrappers (``wrapper=True`` / ``hookwrapper=True``) are refused, because the
  host calls implementations one by one to await them and attribute their answers.
* Call order is pluggy's: ``tryfirst`` implementations, then the most recently registered
  first, then ``trylast``. "In call order" below means this order.
* ``None`` always means "no answer" and is skipped when answers are combined.
* Arguments are keyword-only from the host's side; an implementation names the ones it wants.

Type names in the signatures (``Tool``, ``ToolCall``, ``SessionView`` ...) are the kernel's
public types; ``docs/hooks.md`` links each one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

if TYPE_CHECKING:
    from .decisions import (
        CompactDecision,
        Instruction,
        PromptDecision,
        StopDecision,
        ToolDecision,
        ToolResultPatch,
    )

PROJECT_NAME = "zpi"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


class LoadingHost(Protocol):
    """What ``zpi_load_plugins`` receives: the plugin host that is loading plugins
    (:class:`~zpi_host.contract.plugins.PluginHost`)."""

    @property
    def config(self) -> Any: ...

    def register_plugin(self, plugin: object, name: str, **options: Any) -> Any: ...


# --------------------------------------------------------------------------------------------
# Registration: called while a session is assembled; what they return is frozen for the session.
# --------------------------------------------------------------------------------------------


@hookspec
def zpi_load_plugins(host: LoadingHost) -> None:
    """Register further plugins; how compat adapters add one plugin per discovered folder.

    When: once, after the kernel plugins and every entry point are registered, before any other
    hook is called. A plugin registered from here gets its own ``zpi_load_plugins`` call too,
    until no new plugin appears.

    Arguments:
        host: the :class:`~zpi_host.contract.plugins.PluginHost`. Call
            ``host.register_plugin(obj, name, source=..., contributes=...)``; ``source`` is one
            of ``"claude"``, ``"zcode"`` or ``"local"``.

    Returns: nothing; a returned value is ignored.

    Combining: every implementation runs. If one raises, the plugin that implements it is
    marked failed, every plugin it registered during this call is unregistered, and the other
    plugins go on (``ZPI_STRICT_PLUGINS=1`` makes it an error instead).

    Async: allowed.
    """


@hookspec
def zpi_register_tools(cwd: Path, settings: Mapping[str, Any]) -> Sequence[Any] | None:
    """Contribute new tools to every session.

    When: during assembly, before resources are loaded; the result is frozen for the session.

    Arguments:
        cwd: the session's working directory (absolute).
        settings: the merged settings, read-only.

    Returns: a sequence of :class:`~zpi_host.tools.Tool`, or ``None``.

    Combining: all lists are concatenated in call order. The host validates each tool,
    refuses a name that another plugin already registered (the later one fails with the
    reason) and records which plugin contributed which tool.

    Async: allowed.
    """


@hookspec
def zpi_tool_overrides(cwd: Path, settings: Mapping[str, Any]) -> Sequence[Any] | None:
    """Replace kernel tools (``read``, ``write``, ``edit``, ``bash``) by name.

    When: during assembly, right after ``zpi_register_tools``.

    Arguments:
        cwd: the session's working directory.
        settings: the merged settings, read-only.

    Returns: a sequence of :class:`~zpi_host.tools.Tool` whose names are kernel tool names,
    or ``None``.

    Combining: an override of a name that is not a kernel tool is an error for that plugin.
    Two plugins overriding the same name: the first in call order wins, the other is
    reported in diagnostics.

    Async: allowed.
    """


@hookspec
def zpi_register_providers(settings: Mapping[str, Any]) -> Sequence[Any] | None:
    """Contribute model providers (wire-protocol adapters such as ``openai`` or ``scripted``).

    When: during assembly, before the model is chosen.

    Arguments:
        settings: the merged settings, read-only.

    Returns: a sequence of :class:`~zpi_host.providers.ProviderFactory`, or ``None``.

    Combining: concatenated in call order; a provider name registered twice fails the later
    plugin with the reason.

    Async: allowed.
    """


@hookspec
def zpi_register_commands(cwd: Path, settings: Mapping[str, Any]) -> Sequence[Any] | None:
    """Contribute slash commands (``/name``) that expand into a prompt or run code.

    When: during assembly, with the other registration hooks.

    Arguments:
        cwd: the session's working directory.
        settings: the merged settings, read-only.

    Returns: a sequence of :class:`~zpi_host.resources.Command`, or ``None``.

    Combining: concatenated in call order; duplicate names fail the later plugin.

    Async: allowed.
    """


@hookspec
def zpi_register_resources(cwd: Path, settings: Mapping[str, Any]) -> Sequence[Any] | None:
    """Add places the ResourceLoader searches for skills, commands, agents and context files.

    When: during assembly, before the ResourceLoader loads.

    Arguments:
        cwd: the session's working directory.
        settings: the merged settings, read-only.

    Returns: a sequence of :class:`~zpi_host.resources.ResourceSource` (a folder laid out like
    ``.zpi/`` plus a namespace and the kinds it holds), or ``None``.

    Combining: concatenated in call order; sources are searched in that order.

    Async: allowed.
    """


@hookspec
def zpi_register_search_backends(settings: Mapping[str, Any]) -> Sequence[Any] | None:
    """Contribute web search backends, which a search tool (``builtins:web``'s
    ``web_search``) sends its queries to.

    When: the first time a session's search tool asks for its backends (through
    ``SessionView.ports.search``), once per session.

    Arguments:
        settings: the session's merged settings, read-only (a backend reads its URL there).

    Returns: a sequence of :class:`~zpi_host.session.ports.SearchBackend` (a ``name`` and an async
    ``search(query, limit)`` giving :class:`~zpi_host.session.ports.SearchHit` objects), or
    ``None``.
    Return only backends that are configured.

    Combining: concatenated in call order; a name registered twice is an error naming both
    plugins (the search tool reports it).

    Async: allowed.
    """


@hookspec
def zpi_prepare_tools(
    tools: Sequence[Any], resources: Any, cwd: Path, settings: Mapping[str, Any]
) -> Sequence[Any] | None:
    """Add tools that depend on loaded resources (a skill tool that lists the loaded skills).

    When: during assembly, after the ResourceLoader loaded and before tool selection rules
    (``tools``, ``exclude_tools`` ...) apply.

    Arguments:
        tools: the tools registered so far (read-only).
        resources: the session's :class:`~zpi_host.resources.ResourceLoader`.
        cwd: the session's working directory.
        settings: the merged settings, read-only.

    Returns: a sequence of additional :class:`~zpi_host.tools.Tool`, or ``None``.

    Combining: concatenated in call order; names may not collide with existing tools.

    Async: allowed.
    """


# --------------------------------------------------------------------------------------------
# The system prompt
# --------------------------------------------------------------------------------------------


@hookspec
def zpi_instructions(
    cwd: Path, settings: Mapping[str, Any], resources: Any
) -> str | Instruction | Sequence[str | Instruction] | None:
    """Contribute instruction fragments to the system prompt.

    When: during assembly, after tool selection; frozen for the session.

    Arguments:
        cwd: the session's working directory.
        settings: the merged settings, read-only.
        resources: the session's ResourceLoader (context files, skills).

    Returns: a string, an :class:`~zpi_host.contract.decisions.Instruction`, a sequence of them, or
    ``None``.

    Combining: all fragments are kept in call order, each attributed to its plugin. The host
    validates them: a fragment that is not text, or is empty, is a diagnostic for its plugin
    and is dropped.

    Async: allowed.
    """


@hookspec
def zpi_system_prompt(
    prompt: str, tools: Sequence[Any], instructions: Sequence[Instruction], resources: Any
) -> str | None:
    """See, and optionally replace, the final system prompt.

    When: during assembly, after instructions are validated; frozen for the session.

    Arguments:
        prompt: the prompt as built so far (by the host, then by earlier implementations).
        tools: the final enabled tools.
        instructions: the validated instruction fragments.
        resources: the session's ResourceLoader.

    Returns: a replacement prompt, or ``None`` to keep it.

    Combining: chained in call order: each implementation receives the prompt as the previous
    one left it.

    Async: allowed.
    """


# --------------------------------------------------------------------------------------------
# Before each model request
# --------------------------------------------------------------------------------------------


@hookspec
def zpi_before_request(session: Any, request: Any) -> None:
    """Check a model request before it is sent.

    When: before every model request, including retries after compaction.

    Arguments:
        session: a read-only :class:`~zpi_host.session.view.SessionView`.
        request: the :class:`~zpi_host.providers.ModelRequest` about to be sent.

    Returns: nothing. Raise a typed error to stop the request; raising
    :class:`~zpi_host.errors.ContextOverflowError` makes the loop compact and retry once.

    Combining: every implementation runs in call order; the first error stops the request.

    Async: allowed.
    """


@hookspec
def zpi_request_options(session: Any, request: Any) -> Mapping[str, Any] | None:
    """Supply dynamic request options (temperature, reasoning effort, max tokens ...).

    When: before every model request, after ``zpi_before_request``.

    Arguments:
        session: a read-only SessionView.
        request: the ModelRequest about to be sent.

    Returns: a mapping of option names to values, or ``None``.

    Combining: merged in call order; a key set by a later implementation replaces the
    earlier value. A value that is not a mapping is a diagnostic for its plugin.

    Async: allowed.
    """


# --------------------------------------------------------------------------------------------
# Compaction
# --------------------------------------------------------------------------------------------


@hookspec
def zpi_before_compact(session: Any, preparation: Any) -> CompactDecision | None:
    """Cancel a compaction or supply its summary.

    When: before the history is summarised, whether triggered by the token threshold, by a
    context-overflow error (``trigger="auto"``) or by ``compact()`` (``trigger="manual"``).

    Arguments:
        session: a read-only SessionView.
        preparation: a :class:`~zpi_host.agent.compaction.CompactionPreparation`: ``trigger``, the
            records to summarise, the first kept record, tokens before, custom instructions.

    Returns: a :class:`~zpi_host.contract.decisions.CompactDecision` (``cancel`` with a reason, or
    ``summary`` text), or ``None``.

    Combining: any cancel wins (its reasons joined); otherwise the first summary in call
    order is used and the model is not asked.

    Async: allowed.
    """


@hookspec
def zpi_after_compact(session: Any, result: Any) -> None:
    """Observe a finished compaction.

    When: after the compaction record is written.

    Arguments:
        session: a read-only SessionView.
        result: the :class:`~zpi_host.agent.compaction.CompactionResult` (summary, first kept
            record, tokens before and after, files read and modified).

    Returns: nothing.

    Combining: every implementation runs.

    Async: allowed.
    """


# --------------------------------------------------------------------------------------------
# Lifecycle
# --------------------------------------------------------------------------------------------


@hookspec
def zpi_session_start(session: Any, source: str) -> str | Sequence[str] | None:
    """Add context when a session starts.

    When: once per session start, before the first user input is handled.

    Arguments:
        session: a read-only SessionView.
        source: ``"startup"`` (new session), ``"resume"``, ``"clear"`` or ``"compact"``.

    Returns: context text (or several) for the model, or ``None``.

    Combining: all texts are kept in call order; each becomes a synthetic context message
    attributed to its plugin, persisted in the transcript and shown to the model once.

    Async: allowed.
    """


@hookspec
def zpi_user_prompt(session: Any, prompt: str) -> PromptDecision | str | None:
    """See a user prompt before the model does; block it or add context.

    When: for each user input, before it is recorded.

    Arguments:
        session: a read-only SessionView.
        prompt: the text the user submitted.

    Returns: a :class:`~zpi_host.contract.decisions.PromptDecision` (``block`` with a reason shown
    to
    the user, and/or ``context``), a context string, or ``None``.

    Combining: any block wins (the prompt is dropped, reasons joined); contexts are kept in
    call order.

    Async: allowed.
    """


@hookspec
def zpi_turn_start(session: Any, turn: int) -> None:
    """Observe the start of a turn (one model request and the tools it calls).

    When: before each model request of a run.

    Arguments:
        session: a read-only SessionView.
        turn: the 1-based turn number within the run.

    Returns: nothing.

    Combining: every implementation runs.

    Async: allowed.
    """


@hookspec
def zpi_before_tool(session: Any, call: Any, tool: Any) -> ToolDecision | None:
    """Allow, ask about, or deny a tool call; optionally replace its input.

    When: for every tool call, after its arguments are complete and validated, before the
    permission rules and before it runs. While any implementation of this hook (or of
    ``zpi_after_tool`` / ``zpi_tool_failed``) is registered, read-only calls are not started
    early while the model is still streaming.

    Arguments:
        session: a read-only SessionView.
        call: the :class:`~zpi_host.tools.ToolCall` (``id``, ``name``, ``arguments``).
        tool: the :class:`~zpi_host.tools.Tool` that will run.

    Returns: a :class:`~zpi_host.contract.decisions.ToolDecision` (``allow``, ``ask`` or ``deny``, a
    ``reason``, optional ``updated_input``, optional ``context``;
    ``ToolDecision.context_only(text)``: no verdict, context that reaches the model with the
    call's result however the call is then decided), or ``None``.

    Combining: deny > ask > allow. Reasons of the winning kind are joined in call order and
    shown to the model on deny. ``updated_input``: the last one in call order wins and is
    validated against the tool's schema again. Contexts are kept in call order.

    Async: allowed.
    """


@hookspec
def zpi_permission_request(session: Any, call: Any, tool: Any, reason: str) -> ToolDecision | None:
    """Answer a permission question before the embedding program's callback is asked.

    When: when the hooks and rules of a tool call end at ``ask``.

    Arguments:
        session: a read-only SessionView.
        call: the ToolCall in question.
        tool: the Tool.
        reason: why the host asks (the rule or mode that asked).

    Returns: a ToolDecision with ``allow`` or ``deny`` (``ask`` is treated as no answer), or
    ``None`` to leave the question to the callback.

    Combining: deny > allow; ``updated_input`` as for ``zpi_before_tool``.

    Async: allowed.
    """


@hookspec
def zpi_after_tool(session: Any, call: Any, result: Any) -> ToolResultPatch | str | None:
    """See a tool's successful result; add context or replace the content the model sees.

    When: after a tool call finished without error, before its result is recorded.

    Arguments:
        session: a read-only SessionView.
        call: the ToolCall.
        result: the :class:`~zpi_host.tools.ToolResult`.

    Returns: a :class:`~zpi_host.contract.decisions.ToolResultPatch` (``context`` and/or replacement
    ``content``), a context string, or ``None``.

    Combining: patches apply in call order (a later replacement replaces an earlier one);
    contexts are kept in call order.

    Async: allowed.
    """


@hookspec
def zpi_tool_failed(session: Any, call: Any, result: Any) -> str | None:
    """See a failed tool call (error result, timeout, denial is not a failure).

    When: after a tool call ended with ``is_error`` set, before its result is recorded.

    Arguments:
        session: a read-only SessionView.
        call: the ToolCall.
        result: the error ToolResult.

    Returns: context text for the model, or ``None``.

    Combining: contexts are kept in call order.

    Async: allowed.
    """


@hookspec
def zpi_unknown_tool(session: Any, call: Any, available: Sequence[str]) -> str | None:
    """Explain a call to a tool the session does not have.

    When: a tool call names no tool of the session, before its error result is recorded
    (``zpi_tool_failed`` follows, as for any error result).

    Arguments:
        session: a read-only SessionView.
        call: the ToolCall (``name`` is the unknown name).
        available: the names of the session's tools, sorted.

    Returns: text added to the error result, after the host's own line (``unknown tool
    'x'; available tools: ...``), or ``None``.

    Combining: texts are kept in call order, one paragraph each.

    Async: allowed.
    """


@hookspec
def zpi_turn_end(session: Any, turn: int, message: Any) -> None:
    """Observe the end of a turn.

    When: after the assistant message of the turn and all its tool results are recorded.

    Arguments:
        session: a read-only SessionView.
        turn: the 1-based turn number within the run.
        message: the turn's :class:`~zpi_host.providers.messages.AssistantMessage`.

    Returns: nothing.

    Combining: every implementation runs.

    Async: allowed.
    """


@hookspec
def zpi_stop(session: Any, message: Any, continuation: int) -> StopDecision | None:
    """Decide whether the agent may stop, or must go on.

    When: when the model ends a turn without tool calls and the run would finish.

    Arguments:
        session: a read-only SessionView.
        message: the final AssistantMessage.
        continuation: how many consecutive continuations hooks have already forced
            (0 the first time; ``> 0`` is Claude's ``stop_hook_active``).

    Returns: a :class:`~zpi_host.contract.decisions.StopDecision` (``continue_with`` a reason that
    becomes the next user input), or ``None`` to let the run stop.

    Combining: any continue wins; reasons are joined in call order. The host caps
    consecutive continuations (setting ``hooks.max_stop_continuations``, default 8).

    Async: allowed.
    """


@hookspec
def zpi_subagent_start(session: Any, agent_type: str, agent_id: str, prompt: str) -> str | None:
    """Add context when a sub-agent starts.

    When: when a sub-agent (a child session) is started by a tool such as ``task``.

    Arguments:
        session: the parent's read-only SessionView.
        agent_type: the agent definition's name.
        agent_id: the child session's id.
        prompt: the task given to the sub-agent.

    Returns: context text for the sub-agent, or ``None``.

    Combining: contexts are kept in call order.

    Async: allowed.
    """


@hookspec
def zpi_subagent_stop(
    session: Any, agent_type: str, agent_id: str, message: Any, continuation: int
) -> StopDecision | None:
    """Decide whether a sub-agent may stop.

    When: when a sub-agent's run would finish.

    Arguments:
        session: the parent's read-only SessionView.
        agent_type: the agent definition's name.
        agent_id: the child session's id.
        message: the sub-agent's final AssistantMessage.
        continuation: consecutive continuations already forced.

    Returns: a StopDecision, or ``None``.

    Combining: as ``zpi_stop``.

    Async: allowed.
    """


@hookspec
def zpi_notification(session: Any, message: str, title: str | None, kind: str) -> None:
    """Observe a notification the host raises for the user (permission needed, idle ...).

    When: whenever the host would notify the user.

    Arguments:
        session: a read-only SessionView.
        message: the notification text.
        title: an optional title.
        kind: ``"permission_prompt"``, ``"idle_prompt"``, or a plugin-defined kind.

    Returns: nothing.

    Combining: every implementation runs.

    Async: allowed.
    """


@hookspec
def zpi_run_end(session: Any, result: Any) -> None:
    """Observe the end of a run: the model stopped, a limit or an error ended it, or it was
    aborted.

    When: once per ``run()``, after its last record is written and before ``run()`` returns
    (after every ``zpi_stop`` decision, so a continued run ends only once). Not called for
    sub-agents. A warning it raises (``session.warn``) is delivered before ``run()`` returns.

    Arguments:
        session: a read-only SessionView.
        result: the run's :class:`~zpi_host.session.RunResult` (``is_error``,
            ``stop_reason``, ``duration_ms``, ``num_turns`` ...).

    Returns: nothing.

    Combining: every implementation runs.

    Async: allowed.
    """


@hookspec
def zpi_session_end(session: Any, reason: str) -> None:
    """Observe the end of a session.

    When: once, when the session is disposed.

    Arguments:
        session: a read-only SessionView.
        reason: ``"clear"``, ``"resume"``, ``"logout"``, ``"prompt_input_exit"`` or
            ``"other"``.

    Returns: nothing.

    Combining: every implementation runs.

    Async: allowed.
    """


@hookspec
def zpi_event(session: Any, event: Any) -> None:
    """Observe every event the session emits (run, turn, message, tool start/update/end ...).

    When: for each event, in the order emitted, before ``session.subscribe`` callbacks.

    Arguments:
        session: a read-only SessionView.
        event: the :class:`~zpi_host.agent.events.Event`.

    Returns: nothing.

    Combining: every implementation runs; an observer that raises is logged (it does not
    stop the run).

    Async: allowed.
    """


#: the markers, the loading host's type and every hook (what plugin authors may name)
__all__ = ["PROJECT_NAME", "LoadingHost", "hookimpl", "hookspec",
           *sorted(name for name in dict(globals()) if name.startswith("zpi_"))]
