"""ClaudeHooks: one plugin folder's hook handlers, run from the kernel's ``zpi_*`` hooks.

Which ``zpi_*`` hook runs which Claude event is the table in ``docs/hooks.md`` ("Claude Code
and ZCode events"); ``docs/claude-hooks.md`` describes the whole engine.

Costs: an object exposes hook implementations only for the events its configuration has (they
are installed per instance in ``__init__``), so a folder without tool events does not switch
off the loop's early start of read-only calls, and unused hooks cost nothing. Each
implementation is a plain function that matches first (precompiled matchers, a per-value
cache) and returns ``None`` at once when no handler matches; only a match returns a coroutine,
which the kernel awaits within its budget. The transcript rendering, the event JSON and the
environment are built only then.
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zpi_host.contract.hookspecs import hookimpl

from .engine import HookEngine, ReadyHandler, join_texts
from .responses import EDITING_TOOLS, Originals, claude_tool_response, images_of
from .toolnames import (
    CLAUDE_NAMES,
    claude_tool_input,
    claude_tool_name,
    host_tool_input,
    host_tool_name,
)

if TYPE_CHECKING:
    from .output import HandlerResult

#: kernel hook -> (the private method that implements it, the events that need it)
KERNEL_HOOKS: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "zpi_session_start": ("_session_start", ("SessionStart",)),
    "zpi_user_prompt": ("_user_prompt", ("UserPromptSubmit",)),
    # PostToolUse of Write/Edit: the file is kept before the call for ``originalFile``
    "zpi_before_tool": ("_before_tool", ("PreToolUse", "PostToolUse")),
    "zpi_permission_request": ("_permission_request", ("PermissionRequest",)),
    "zpi_after_tool": ("_after_tool", ("PostToolUse",)),
    "zpi_tool_failed": ("_tool_failed", ("PostToolUseFailure",)),
    "zpi_stop": ("_stop", ("Stop",)),
    "zpi_subagent_start": ("_subagent_start", ("SubagentStart",)),
    "zpi_subagent_stop": ("_subagent_stop", ("SubagentStop",)),
    "zpi_before_compact": ("_before_compact", ("PreCompact",)),
    "zpi_after_compact": ("_after_compact", ("PostCompact",)),
    "zpi_notification": ("_notification", ("Notification",)),
    "zpi_session_end": ("_session_end", ("SessionEnd",)),
}


#: what the model reads when a PermissionRequest handler denies without a message (Claude
#: Code's words)
PERMISSION_HOOK_DENIED = "Permission denied by hook"

#: Seconds beyond a handler's timeout for stopping its process group (SIGTERM, SIGKILL after
#: 1.5 s, waiting for it to go) and reading what is left in its pipes.
STOP_GRACE_S = 10.0


class ClaudeHooks(HookEngine):
    """The hook handlers of one Claude plugin folder (or settings file), as a zpi plugin.

    Arguments: ``name``, the plugin's name (``claude:<folder>``) used in diagnostics; ``root``,
    the plugin folder (``CLAUDE_PLUGIN_ROOT``); ``hooks``, the parsed configuration;
    ``data_dir``, its persistent data folder (``CLAUDE_PLUGIN_DATA``, created on first use);
    ``env``, extra environment for its commands (``CLAUDE_PLUGIN_OPTION_<KEY>`` ...);
    ``substitute``, applied to each command once (``${CLAUDE_PLUGIN_ROOT}``,
    ``${user_config.KEY}`` ...); ``timeout_s``, the default handler timeout (setting
    ``compat.claude.hook_timeout``).

    Register the object itself (or an object of a subclass, initialised with this
    ``__init__``), or copy :meth:`hookimpls` onto a combined plugin object.
    """

    def __init__(self, **options: Any) -> None:
        """The keyword arguments of :class:`HookEngine`."""
        super().__init__(**options)
        self._originals = Originals()
        for hook, method in self.hookimpls().items():
            setattr(self, hook, method)
        #: the kernel budget each implementation needs (``zpi_host.contract.hookrunner``): its
        #: handlers' own timeouts govern, a timed-out handler is a non-blocking error
        self.zpi_budget_floors = self.budget_floors()

    def budget_floors(self) -> dict[str, float]:
        """Per kernel hook: the longest handler timeout of each Claude event it runs, added
        up over those events, plus the time to stop a timed-out handler and read its output."""
        floors = {}
        for hook, (_, events) in KERNEL_HOOKS.items():
            longest = [max(h.timeout_s for _, group in self._groups.get(event, ()) for h in group)
                       for event in events if event in self._groups]
            if longest:
                floors[hook] = sum(longest) + STOP_GRACE_S
        return floors

    def hookimpls(self) -> dict[str, Callable[..., Any]]:
        """The ``zpi_*`` hook implementations this configuration needs, bound to this object
        and marked with ``@hookimpl``; copy them onto another object to combine plugins."""
        out: dict[str, Callable[..., Any]] = {}
        for hook, (private, events) in KERNEL_HOOKS.items():
            if any(event in self._groups for event in events):
                out[hook] = _marked(getattr(type(self), private), hook, self)
        return out

    # ------------------------------------------------------------------ hook implementations
    # Each is a plain function: None when nothing matches, else a coroutine the kernel awaits.

    def _session_start(self, session: Any, source: str) -> Any:
        handlers = self._due(session, self._matching("SessionStart", source))
        if not handlers:
            return None
        return self._on_session_start(session, source, handlers)

    async def _on_session_start(self, session: Any, source: str,
                                handlers: tuple[ReadyHandler, ...]) -> list[str] | None:
        import tempfile

        fields = {"source": source, "model": getattr(session, "model", "")}
        if not self.dialect.env_file:
            results = await self._run("SessionStart", session, handlers, fields)
            return [c for r in results for c in r.contexts] or None
        fd, name = tempfile.mkstemp(prefix="zpi-claude-env-", suffix=".sh")
        os.close(fd)
        env_file = Path(name)
        try:
            results = await self._run("SessionStart", session, handlers, fields,
                                      env_file=env_file)
            self._apply_env_file(session, env_file)
        finally:
            env_file.unlink(missing_ok=True)
        contexts = [c for r in results for c in r.contexts]
        return contexts or None

    def _apply_env_file(self, session: Any, env_file: Path) -> None:
        from .runner import parse_env_file

        try:
            text = env_file.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            self._report("SessionStart", None, f"could not read CLAUDE_ENV_FILE: {exc}")
            return
        if not text.strip():
            return
        base = {**os.environ, **dict(getattr(session, "environment", {}) or {})}
        found, problems = parse_env_file(text, base)
        for problem in problems:
            self._report("SessionStart", None, problem)
        for name, value in found:
            try:
                session.set_environment(name, value)
            except Exception as exc:
                self._report("SessionStart", None, f"could not export {name}: {exc}")

    def _user_prompt(self, session: Any, prompt: str) -> Any:
        handlers = self._due(session, self._matching("UserPromptSubmit", None))
        if not handlers:
            return None
        return self._on_user_prompt(session, prompt, handlers)

    async def _on_user_prompt(self, session: Any, prompt: str,
                              handlers: tuple[ReadyHandler, ...]) -> Any:
        from zpi_host.contract.decisions import PromptDecision

        results = await self._run("UserPromptSubmit", session, handlers, {"prompt": prompt})
        blocked = any(r.block or r.stop for r in results)
        context = join_texts(c for r in results for c in r.contexts)
        if not blocked and context is None:
            return None
        reason = self._blocked_reason("UserPromptSubmit", results, handlers, "blocked")
        return PromptDecision(block=blocked, reason=(reason or None) if blocked else None,
                              context=context)

    # tools ------------------------------------------------------------------------------

    def _tool_fields(self, session: Any, call: Any) -> dict[str, Any]:
        cwd = getattr(session, "cwd", None) or os.getcwd()
        return {"tool_name": claude_tool_name(call.name),
                "tool_input": claude_tool_input(call.name, call.arguments, cwd),
                "tool_use_id": call.id}

    def _before_tool(self, session: Any, call: Any, tool: Any) -> Any:
        host_name = host_tool_name(call.name)
        if host_name in EDITING_TOOLS and self._matching(
                "PostToolUse", claude_tool_name(host_name)):
            self._originals.keep(call.id, call.name, call.arguments,
                                 getattr(session, "cwd", None) or os.getcwd())
        elif host_name == "bash" and self._matching("PostToolUse", "Bash"):
            # tool_response.stderr: the bash tool keeps the streams apart for this call
            keep_apart = getattr(session, "keep_streams_apart", None)
            if callable(keep_apart):
                keep_apart(call.id)
        handlers = self._matching("PreToolUse", CLAUDE_NAMES.get(call.name, call.name))
        handlers = self._for_call(handlers, host_name, call.arguments, _cwd(session))
        if not handlers or not (handlers := self._due(session, handlers)):
            return None
        return self._on_before_tool(session, call, handlers)

    async def _on_before_tool(self, session: Any, call: Any,
                              handlers: tuple[ReadyHandler, ...]) -> Any:
        from zpi_host.contract.decisions import ToolDecision

        event = "PreToolUse"
        results = await self._run(event, session, handlers, self._tool_fields(session, call))
        context = join_texts(c for r in results for c in r.contexts)
        behavior = _winner(results, ("deny", "ask", "allow"))
        if behavior == "deny":
            tool = claude_tool_name(call.name)
            for result in results:
                if result.exit2 and result.reason:
                    result.reason = self.dialect.exit2_deny.format(
                        event=event, tool=tool, reason=result.reason)
            return ToolDecision.deny(
                self._blocked_reason(event, results, handlers, "denied"), context=context)
        updated = self._updated_input(event, call, results, behavior)
        if behavior is None:
            # context without a decision: the kernel appends it to the call's result however
            # the call is then decided (a rule's or the mode's deny included)
            return None if context is None else ToolDecision.context_only(context)
        reason = "; ".join(r.permission_reason for r in results
                           if r.permission == behavior and r.permission_reason) or None
        return ToolDecision("ask" if behavior == "ask" else "allow", reason, updated, context)

    def _updated_input(self, event: str, call: Any, results: Sequence[HandlerResult],
                       behavior: str | None) -> dict[str, Any] | None:
        updated = None
        for result in results:
            if result.updated_input is None:
                continue
            if result.permission in ("allow", "ask"):
                updated = result.updated_input
            elif result.permission is None:
                self._report(event, None, "updatedInput without permissionDecision allow or "
                                          "ask is ignored (Claude applies it only with one)")
        if updated is None or behavior not in ("allow", "ask"):
            return None
        return host_tool_input(call.name, updated)

    def _permission_request(self, session: Any, call: Any, tool: Any, reason: str) -> Any:
        handlers = self._due(session, self._for_call(
            self._matching("PermissionRequest", claude_tool_name(call.name)),
            host_tool_name(call.name), call.arguments, _cwd(session)))
        if not handlers:
            return None
        return self._on_permission_request(session, call, handlers)

    async def _on_permission_request(self, session: Any, call: Any,
                                     handlers: tuple[ReadyHandler, ...]) -> Any:
        from zpi_host.contract.decisions import ToolDecision

        event = "PermissionRequest"
        fields = self._tool_fields(session, call)
        if "permission_suggestions" in self.dialect.input_extras:
            # Claude Code 2.1's PermissionRequest input: no tool_use_id, suggestions instead
            del fields["tool_use_id"]
            fields["permission_suggestions"] = permission_suggestions(
                fields["tool_name"], fields["tool_input"])
        results = await self._run(event, session, handlers, fields)
        behavior = _winner(results, ("deny", "allow"))
        if behavior == "deny":
            # the model reads the hook's message alone, as Claude Code gives it (its default
            # when there is none)
            return ToolDecision.deny("; ".join(r.reason or PERMISSION_HOOK_DENIED
                                               for r in results if r.block)
                                     or PERMISSION_HOOK_DENIED)
        if behavior == "allow":
            updated = None
            for result in results:
                if result.permission == "allow" and result.updated_input is not None:
                    updated = host_tool_input(call.name, result.updated_input)
            return ToolDecision.allow(updated_input=updated)
        return None

    def _add_duration(self, fields: dict[str, Any], result: Any) -> None:
        """``duration_ms`` (whole milliseconds the call took), where the dialect sends it."""
        if "duration_ms" in self.dialect.input_extras:
            duration = (result.details or {}).get("duration_ms")
            fields["duration_ms"] = round(duration) if isinstance(
                duration, int | float) and not isinstance(duration, bool) else 0

    def _after_tool(self, session: Any, call: Any, result: Any) -> Any:
        handlers = self._matching("PostToolUse", CLAUDE_NAMES.get(call.name, call.name))
        handlers = self._for_call(handlers, host_tool_name(call.name), call.arguments,
                                  _cwd(session))
        if not handlers or not (handlers := self._due(session, handlers)):
            return None
        return self._on_after_tool(session, call, result, handlers)

    async def _on_after_tool(self, session: Any, call: Any, result: Any,
                             handlers: tuple[ReadyHandler, ...]) -> Any:
        from zpi_host.contract.decisions import ToolResultPatch

        event = "PostToolUse"
        cwd = getattr(session, "cwd", None) or os.getcwd()
        fields = self._tool_fields(session, call)
        original = None
        if host_tool_name(call.name) in EDITING_TOOLS:
            original = self._originals.take(call.id, claude_tool_input(
                call.name, call.arguments, cwd).get("file_path"))
        fields["tool_response"] = claude_tool_response(
            call.name, call.arguments, result.text_content, result.details, cwd, original,
            images_of(result.content))
        self._add_duration(fields, result)
        results = await self._run(event, session, handlers, fields)
        contexts = [c for r in results for c in r.contexts]
        content = None
        for handler_result in results:
            if handler_result.updated_output is not None:
                content = handler_result.updated_output
        if content is not None and self.dialect.output_replacement_mcp_only and not (
                fields["tool_name"].startswith("mcp__")):
            self._report(event, None, f"updatedToolOutput replaces the output of MCP tools "
                                      f"only (as documented); ignored for {fields['tool_name']}")
            content = None
        context = join_texts(contexts)
        if context is None and content is None:
            return None
        return ToolResultPatch(context=context, content=content)

    def _tool_failed(self, session: Any, call: Any, result: Any) -> Any:
        handlers = self._due(session, self._for_call(
            self._matching("PostToolUseFailure", claude_tool_name(call.name)),
            host_tool_name(call.name), call.arguments, _cwd(session)))
        if not handlers:
            return None
        return self._on_tool_failed(session, call, result, handlers)

    async def _on_tool_failed(self, session: Any, call: Any, result: Any,
                              handlers: tuple[ReadyHandler, ...]) -> Any:
        event = "PostToolUseFailure"
        fields = self._tool_fields(session, call)
        fields["error"] = result.text_content
        fields["is_interrupt"] = bool((result.details or {}).get("interrupted"))
        self._add_duration(fields, result)
        results = await self._run(event, session, handlers, fields)
        return join_texts(c for r in results for c in r.contexts)

    # stopping ---------------------------------------------------------------------------

    def _stop(self, session: Any, message: Any, continuation: int) -> Any:
        handlers = self._due(session, self._matching("Stop", None))
        if not handlers:
            return None
        fields = {"stop_hook_active": continuation > 0,
                  "last_assistant_message": getattr(message, "text", "")}
        if self.dialect.response_text:
            fields["responseText"] = fields["last_assistant_message"]
        if "background_tasks" in self.dialect.input_extras:
            # the session's task registry (builtins:tasks) through the host's task port
            fields["background_tasks"] = background_tasks(session)
        return self._on_stop("Stop", session, handlers, fields, continuation)

    def _subagent_stop(self, session: Any, agent_type: str, agent_id: str, message: Any,
                       continuation: int) -> Any:
        handlers = self._due(session, self._matching("SubagentStop", agent_type))
        if not handlers:
            return None
        fields = {"stop_hook_active": continuation > 0, "agent_id": agent_id,
                  "agent_type": agent_type,
                  "last_assistant_message": getattr(message, "text", "")}
        return self._on_stop("SubagentStop", session, handlers, fields)

    async def _on_stop(self, event: str, session: Any, handlers: tuple[ReadyHandler, ...],
                       fields: Mapping[str, Any], continuation: int = 0) -> Any:
        from zpi_host.contract.decisions import StopDecision

        results = await self._run(event, session, handlers, fields)  # continue: false raised
        cap = self.dialect.max_stop_continuations
        if cap is not None and continuation >= cap and any(r.block for r in results):
            self._report(event, None, f"{self.dialect.product} allows at most {cap} "
                                      "consecutive continuations from Stop hooks; the run "
                                      "stops", "warning")
            return None
        reasons = []
        for handler, result in zip(handlers, results, strict=True):
            if result.block:
                if not result.reason:
                    self._report(event, handler.command, "blocked stopping without a reason; "
                                                         "the model is asked to go on")
                reasons.append(result.reason or f"A {event} hook asked you to continue.")
        if not reasons:
            return None
        return StopDecision(self.dialect.stop_feedback.format(event=event,
                                                              reason="\n\n".join(reasons)))

    # sub-agents, compaction, observers ----------------------------------------------------

    def _subagent_start(self, session: Any, agent_type: str, agent_id: str, prompt: str) -> Any:
        handlers = self._due(session, self._matching("SubagentStart", agent_type))
        if not handlers:
            return None
        return self._on_context_event("SubagentStart", session, handlers,
                                      {"agent_id": agent_id, "agent_type": agent_type})

    async def _on_context_event(self, event: str, session: Any, handlers: tuple[ReadyHandler, ...],
                                fields: Mapping[str, Any]) -> str | None:
        results = await self._run(event, session, handlers, fields)
        return join_texts(c for r in results for c in r.contexts)

    def _before_compact(self, session: Any, preparation: Any) -> Any:
        trigger = str(getattr(preparation, "trigger", "auto"))
        handlers = self._due(session, self._matching("PreCompact", trigger))
        if not handlers:
            return None
        fields = {"trigger": trigger,
                  "custom_instructions": getattr(preparation, "instructions", None) or ""}
        return self._on_before_compact(session, handlers, fields)

    async def _on_before_compact(self, session: Any, handlers: tuple[ReadyHandler, ...],
                                 fields: Mapping[str, Any]) -> Any:
        from zpi_host.contract.decisions import CompactDecision

        event = "PreCompact"
        results = await self._run(event, session, handlers, fields)
        if any(r.block or r.stop for r in results):
            return CompactDecision(cancel=True, reason=self._blocked_reason(
                event, results, handlers, "cancelled"))
        return None

    def _after_compact(self, session: Any, result: Any) -> Any:
        trigger = str(getattr(result, "trigger", "auto"))
        return self._observe("PostCompact", session, trigger, {
            "trigger": trigger, "compact_summary": getattr(result, "summary", "")})

    def _notification(self, session: Any, message: str, title: str | None, kind: str) -> Any:
        return self._observe("Notification", session, kind, {
            "message": message, "title": title, "notification_type": kind})

    def _session_end(self, session: Any, reason: str) -> Any:
        return self._observe("SessionEnd", session, reason, {"reason": reason})

    def _observe(self, event: str, session: Any, value: str | None,
                 fields: Mapping[str, Any]) -> Any:
        handlers = self._due(session, self._matching(event, value))
        if not handlers:
            return None
        return self._on_observe(event, session, handlers, fields)

    async def _on_observe(self, event: str, session: Any, handlers: tuple[ReadyHandler, ...],
                          fields: Mapping[str, Any]) -> None:
        results = await self._run(event, session, handlers, fields)
        self._unsupported_stop(event, results, "it goes on")
        return None


def background_tasks(session: Any) -> list[dict[str, Any]]:
    """The Stop input's ``background_tasks``: the session's running background commands (the
    task port; empty without a task service)."""
    ports = getattr(session, "ports", None)
    tasks = getattr(ports, "tasks", None)
    if tasks is None:
        return []
    return [{"task_id": t.task_id, "task_type": "local_bash", "status": t.status,
             "description": t.description, "command": t.command,
             "output_file": t.output_file} for t in tasks.running()]


def permission_suggestions(tool: str, tool_input: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What Claude Code offers to remember when it asks about a call (PermissionRequest's
    ``permission_suggestions``): file edits suggest the ``acceptEdits`` mode for the session;
    reading outside the workspace adds the folder to the session; a Bash command a rule for
    that command; any other tool a rule for the tool."""
    if tool in ("Write", "Edit", "MultiEdit", "NotebookEdit"):
        return [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]
    place = tool_input.get("file_path") or tool_input.get("path")
    if tool in ("Read", "Glob", "Grep", "LS") and isinstance(place, str) and place:
        folder = os.path.dirname(place) if tool == "Read" else place
        return [{"type": "addDirectories", "directories": [folder], "destination": "session"}]
    rule: dict[str, Any] = {"toolName": tool}
    if tool == "Bash" and isinstance(tool_input.get("command"), str):
        rule["ruleContent"] = tool_input["command"]
    return [{"type": "addRules", "rules": [rule], "behavior": "allow",
             "destination": "localSettings"}]


def _winner(results: Sequence[HandlerResult], order: Sequence[str]) -> str | None:
    """The strongest permission among ``results`` (``continue: false`` counts as deny)."""
    present = {r.permission for r in results} | ({"deny"} if any(r.stop for r in results)
                                                 else set())
    return next((kind for kind in order if kind in present), None)


def _marked(function: Any, hook: str, owner: ClaudeHooks) -> Any:
    """``function`` (a method of ClaudeHooks) bound to ``owner`` as the hook implementation
    ``hook``: a copy of the function carries the ``@hookimpl`` mark, so the class itself
    exposes no hook and each object only the hooks its configuration needs."""
    clone = types.FunctionType(function.__code__, function.__globals__, hook,
                               function.__defaults__, function.__closure__)
    clone.__qualname__ = f"{type(owner).__name__}.{hook}"
    clone.__doc__ = function.__doc__
    return types.MethodType(hookimpl(clone), owner)


def _cwd(session: Any) -> str:
    return getattr(session, "cwd", None) or os.getcwd()
