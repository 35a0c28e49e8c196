"""Executing one tool call: validate, ask the hooks, run, protect the output, report.

Every failure becomes an error result the model can read; nothing here raises except
cancellation, so one bad call never ends a run.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from ..providers.messages import ToolResultMessage, reminder
from ..tools.base import (
    TextContent,
    ToolArgumentError,
    ToolCall,
    ToolContext,
    ToolFailure,
    ToolResult,
    ToolUpdate,
    no_update,
)
from ..tools.threads import execute
from .events import ToolEnd, ToolStart, ToolUpdateEvent

if TYPE_CHECKING:
    from ..permissions import PermissionPolicy, PermissionResult
    from .state import SessionState

DEFAULT_OUTPUT_LIMIT = 32 * 1024


@functools.cache
def _output_guard() -> Callable[..., ToolResult]:
    """``tools.output.protect_result``: imported at the first call's end (a run without tool
    calls does not import it), then looked up once rather than imported on every call."""
    from ..tools.output import protect_result

    return protect_result


def is_parallel_safe(session: SessionState, name: str) -> bool:
    tool = session.tools.get(name)
    return tool is not None and tool.metadata.read_only and tool.metadata.concurrency_safe


class ToolCallRunner:
    """Runs calls for one session."""

    def __init__(self, session: SessionState, permissions: PermissionPolicy | None = None
                 ) -> None:
        self.session = session
        #: the policy calls are checked by (default: the session's; a command's shell blocks
        #: add its ``allowed-tools``)
        self.permissions = permissions if permissions is not None else session.permissions
        self.hooks = session.host.hooks
        self._tool_hooks = self.hooks.tool_hooks_registered
        limit = session.settings.get("tools", {}).get("output_limit_bytes", DEFAULT_OUTPUT_LIMIT)
        self.output_limit = int(limit)

    async def run(self, call: ToolCall) -> ToolResultMessage:
        """Run one call to its result message. The caller records it, then calls
        :meth:`report_end` (a ``tool_end`` comes only after the result is recorded).

        What hooks add for the model about this call (``zpi_before_tool``, ``zpi_after_tool``
        and ``zpi_tool_failed`` contexts) is appended inside its result as
        ``<system-reminder>`` blocks, next to what it is about."""
        session = self.session
        if session.wants_event("tool_start"):
            await session.emit(ToolStart(call.id, call.name, dict(call.arguments)))
        started = time.perf_counter()
        contexts: list[str] = []
        result, ran, denied = await self._execute(call, contexts)
        details = dict(result.details or {})
        details.setdefault("duration_ms", round((time.perf_counter() - started) * 1000, 3))
        result = ToolResult(result.content, result.is_error, details)
        if denied or not self._tool_hooks:
            pass  # a denied call is not a failure (docs/hooks.md, zpi_tool_failed)
        elif result.is_error:
            contexts.extend(c.value for c in await self.hooks.tool_failed(
                session.view, ran, result))
        else:
            patch = await self.hooks.after_tool(session.view, ran, result)
            if patch.content is not None:
                result = ToolResult((TextContent(patch.content),), result.is_error, details)
            contexts.extend(c.value for c in patch.contexts)
        session.streams_apart.discard(call.id)
        content = result.content + tuple(TextContent(reminder(c)) for c in contexts)
        return ToolResultMessage(call.id, call.name, content, result.is_error, details)

    async def report_end(self, message: ToolResultMessage) -> None:
        """The ``tool_end`` event of a call whose result is recorded (or, for a command's bash,
        final: it is not part of the transcript)."""
        if self.session.wants_event("tool_end"):
            await self.session.emit(ToolEnd(message))

    async def _execute(self, call: ToolCall, contexts: list[str]
                       ) -> tuple[ToolResult, ToolCall, bool]:
        """The call's result, the call as it ran (its input after a hook's or the approver's
        replacement) and whether it was denied. Hook contexts are added to ``contexts``."""
        session = self.session
        tool = session.tools.get(call.name)
        if tool is None:
            return ToolResult.error(await self._unknown_tool_text(call)), call, False
        try:
            prepared = tool.prepare_arguments(call.arguments)
        except ToolArgumentError as exc:
            return ToolResult.error(str(exc)), call, False
        decision = None
        arguments: Any = None  # replaced input (hook or approver); None: the model's
        if self._tool_hooks:
            decision = await self.hooks.before_tool(session.view, call, tool)
            contexts.extend(c.value for c in decision.contexts)
            arguments = decision.updated_input
        verdict = await self._permission(call, tool, decision, arguments)
        if not verdict.allowed:
            await session.record_denial(verdict.denial(call.name, call.id, arguments
                                                 if arguments is not None else call.arguments))
            if verdict.interrupt:
                session.request_interrupt(verdict.message(call.name))
            text = self._hook_worded(decision, verdict) or verdict.message(call.name)
            return ToolResult.error(text, details=verdict.details()), call, True
        if verdict.updated_input is not None:
            arguments = verdict.updated_input
        if arguments is not None:
            try:
                prepared = tool.prepare_arguments(arguments)
            except ToolArgumentError as exc:
                return ToolResult.error(f"the input was replaced (by a hook or the approver) "
                                        f"with invalid arguments: {exc}"), call, False
            call = ToolCall(call.id, call.name, dict(arguments))
        await session.journal_tool_call(call, arguments)
        refusal = next((r for guard in list(session.tool_guards)
                        if (r := guard(call)) is not None), None) if session.tool_guards else None
        if refusal is not None:  # allowed, but not now: the model reads why and goes on
            return ToolResult.error(refusal, details={"soft_refusal": True}), call, False
        try:
            value = await self._invoke(tool, prepared, call, verdict)
        except ToolFailure as exc:
            return ToolResult.error(str(exc), details=exc.details), call, False
        except ToolArgumentError as exc:
            return ToolResult.error(str(exc)), call, False
        except Exception as exc:
            return ToolResult.error(f"tool {call.name!r} failed: {type(exc).__name__}: {exc}",
                                    details={"exception": type(exc).__name__}), call, False
        if not isinstance(value, ToolResult):
            return ToolResult.error(
                f"tool {call.name!r} returned {type(value).__name__}, not a ToolResult"), \
                call, False
        return _output_guard()(value, limit_bytes=self.output_limit,
                              spill_dir=session.spill_dir), call, False

    async def _unknown_tool_text(self, call: ToolCall) -> str:
        """The error text for a call to a tool the session lacks: the available names, then
        what ``zpi_unknown_tool`` plugins add (the closest names, a disabled plugin)."""
        available = tuple(sorted(self.session.tools))
        text = f"unknown tool {call.name!r}; available tools: {', '.join(available) or 'none'}"
        if not self.hooks.has_implementations("zpi_unknown_tool"):
            return text
        hints = await self.hooks.unknown_tool(self.session.view, call, available)
        return "\n\n".join([text, *(hint.value for hint in hints)])

    @staticmethod
    def _hook_worded(decision: Any, verdict: PermissionResult) -> str | None:
        """The text of a denial the ``zpi_before_tool`` hooks worded for the model: their
        deny, or their ask that found no approver to ask. Other denials (rules, modes,
        approvers) get the host's wording, which says what denied the call."""
        if decision is None or not decision.reason:
            return None
        if decision.behavior == "deny":
            return str(decision.reason)
        if decision.behavior == "ask" and verdict.source == "hook" and verdict.unapproved:
            return str(decision.reason)
        return None

    async def _permission(self, call: ToolCall, tool: Any, decision: Any,
                          arguments: Any) -> PermissionResult:
        """Hooks, rules, mode, approver: see docs/permissions.md for the order."""
        ask_hook = None
        if self.hooks.has_implementations("zpi_permission_request"):
            def ask_hook(reason: str) -> Any:
                return self.hooks.permission_request(self.session.view, call, tool, reason)
        notify = None
        if self.hooks.has_implementations("zpi_notification"):
            def notify(context: Any) -> Any:
                return self.session.notify(f"{context.tool} needs your approval: "
                                           f"{context.reason}", "Permission needed",
                                           "permission_prompt")
        return await self.permissions.check(tool, call, arguments, decision,
                                            ask_hook=ask_hook, notify=notify)

    async def _invoke(self, tool: Any, prepared: Any, call: ToolCall,
                      verdict: PermissionResult) -> Any:
        """Run ``execute``; when someone listens, a pump task turns the tool's synchronous
        progress updates into events while it runs."""
        if not self.session.wants_event("tool_update"):
            return await execute(tool, prepared, self._context(call, no_update, verdict))
        send, receive = anyio.create_memory_object_stream[ToolUpdate](64)

        def on_update(update: ToolUpdate) -> None:
            # a slow subscriber drops progress; so does a threaded call after its end
            with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError):
                send.send_nowait(update)

        async def pump() -> None:
            async with receive:
                async for update in receive:
                    await self.session.emit(ToolUpdateEvent(update.call_id, update.text))

        value: Any = None
        error: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            try:
                value = await execute(tool, prepared, self._context(call, on_update, verdict))
            except Exception as exc:  # re-raised outside, so the task group does not wrap it
                error = exc
            finally:
                send.close()
        if error is not None:
            raise error
        return value

    def _context(self, call: ToolCall, on_update: Any, verdict: PermissionResult
                 ) -> ToolContext:
        session = self.session
        return ToolContext(
            cwd=session.cwd,
            call_id=call.id,
            model=session.view.model,
            reasoning_level=session.reasoning_level,
            session=session.view,
            system_prompt=session.system_prompt,
            file_state=session.file_state,
            spill_dir=session.spill_dir,
            cancel_scope=session.cancel_scope,
            is_idle=lambda: not session.is_running,
            get_tool=session.tools.get,
            on_update=on_update,
            env=session.environment or None,
            hidden_env=session.hidden_variables,
            judged_paths={j.raw: j for j in verdict.judged},
            streams_apart=call.id in session.streams_apart,
            output_limit=self.output_limit,
            before_change=(session.file_checkpoints.before_change
                           if session.file_checkpoints is not None else None),
        )


def interrupted_result(call: Any) -> ToolResultMessage:
    """The result recorded for a call that was cut off by an abort (never re-run)."""
    return ToolResultMessage(call.id, call.name, (TextContent(
        "interrupted: the run was aborted before this tool call finished"),), True,
        {"interrupted": True})


def not_run_result(call: Any, why: str) -> ToolResultMessage:
    """The result recorded for a call that was not run (its response broke off, or the
    approver interrupted the run): the model is told why."""
    return ToolResultMessage(call.id, call.name, (TextContent(f"not run: {why}"),), True,
                             {"not_run": True})
