"""Hook handlers that are not a command: ``http`` (the event's JSON POSTed to a URL) and
``prompt`` (a model judges the event), answered as Claude Code answers them.

``http``: a 2xx response with an empty body is a success without output; a 2xx with a JSON
object is read as a command's stdout on exit 0 (the same fields and decisions); any other 2xx
body, another status, a redirect (not followed) or a connection failure is a non-blocking
error. ``$VAR`` and ``${VAR}`` in a header value are filled only for the names in
``allowedEnvVars`` (others become empty), from the hook environment, which has no provider
key. No proxy from the environment sees the payload. A project's http hooks are trust-gated
as its command hooks are.

``prompt``: the handler's prompt, with ``$ARGUMENTS`` replaced by the event's JSON (appended
when the prompt does not name it), is a side request to the session's model (or the
handler's ``model``). The answer is ``{"ok": true}`` or ``{"ok": false, "reason": "..."}``;
``ok: false`` blocks as the event allows (a Stop continues the run with the reason, a
PreToolUse denies the call, a UserPromptSubmit blocks the prompt).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .runner import CommandOutcome

if TYPE_CHECKING:
    from ..dialect import Dialect
    from .output import HandlerResult

#: the engine's ``ReadyHandler`` (not imported: the engine imports this module)
ReadyHandler = Any

#: the purpose of a prompt hook's side request (``request.purpose``)
PURPOSE = "hook"
#: most bytes of an http answer read
MAX_BODY = 1 << 20

PROMPT_SYSTEM = (
    "You judge one event of a coding agent's session for a hook. Read the instructions and "
    "the event's JSON, then answer with one JSON object and nothing else: "
    '{"ok": true} when it may proceed, or {"ok": false, "reason": "why, for the agent"} '
    "when it may not.")

_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


async def call_remote(event: str, handler: ReadyHandler, payload: Mapping[str, Any],
                      data: bytes, env: Mapping[str, str], session: Any,
                      dialect: Dialect) -> HandlerResult:
    """Run one ``http`` or ``prompt`` handler and read its answer as a command's."""
    from .output import interpret

    if handler.kind == "http":
        outcome = await post_event(handler, data, env)
    else:
        outcome = await judge_event(event, handler, payload, session)
    return interpret(event, outcome, dialect)


def fill_header(value: str, env: Mapping[str, str], allowed: tuple[str, ...]) -> str:
    """``$VAR`` / ``${VAR}`` filled for the names in ``allowed``; other names become ``""``."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return env.get(name, "") if name in allowed else ""

    return _VARIABLE.sub(fill, value)


async def post_event(handler: ReadyHandler, data: bytes, env: Mapping[str, str]
                     ) -> CommandOutcome:
    """POST the event's JSON to the handler's URL; the response as a command's outcome."""
    import anyio
    import httpx

    headers = {"Content-Type": "application/json"}
    headers.update({name: fill_header(value, env, handler.allowed_env)
                    for name, value in handler.headers})
    try:
        with anyio.fail_after(handler.timeout_s):
            async with httpx.AsyncClient(trust_env=False, follow_redirects=False) as client, \
                    client.stream("POST", handler.command, content=data,
                                  headers=headers) as response:
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_BODY:
                        return CommandOutcome(None, error=f"its answer is over "
                                              f"{MAX_BODY:,} bytes; ignored")
    except TimeoutError:
        return CommandOutcome(None, timed_out=True)
    except httpx.HTTPError as exc:
        return CommandOutcome(None, error=f"POST {handler.command} failed: "
                                          f"{type(exc).__name__}: {exc}")
    status = response.status_code
    if not 200 <= status < 300:
        return CommandOutcome(None, error=f"POST {handler.command} answered HTTP {status}")
    text = body.decode("utf-8", errors="replace").strip()
    if text and not text.startswith("{"):
        return CommandOutcome(None, error=f"POST {handler.command} answered {status} with a "
                                          "body that is not a JSON object; ignored")
    return CommandOutcome(0, stdout=text)


def prompt_text(prompt: str, payload: Mapping[str, Any]) -> str:
    """The handler's prompt with the event's JSON in place of ``$ARGUMENTS`` (appended when
    the prompt does not name it)."""
    event = json.dumps(payload, ensure_ascii=False, default=str)
    if "$ARGUMENTS" in prompt:
        return prompt.replace("$ARGUMENTS", event)
    return f"{prompt}\n\nThe event:\n{event}"


def verdict_answer(event: str, answer: str) -> CommandOutcome:
    """The model's ``{"ok": ..., "reason": ...}`` as the JSON a command would print."""
    text = answer.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start:end + 1]) if start >= 0 else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
        return CommandOutcome(None, error=f"the model did not answer {{\"ok\": true|false}}: "
                                          f"{answer.strip()[:200]!r}")
    if data["ok"]:
        return CommandOutcome(0)
    reason = data.get("reason")
    reason = reason if isinstance(reason, str) and reason.strip() else "the hook's model said no"
    if event == "PreToolUse":
        out: dict[str, Any] = {"hookSpecificOutput": {
            "hookEventName": event, "permissionDecision": "deny",
            "permissionDecisionReason": reason}}
    elif event == "PermissionRequest":
        out = {"hookSpecificOutput": {"hookEventName": event, "decision": {
            "behavior": "deny", "message": reason}}}
    else:
        out = {"decision": "block", "reason": reason}
    return CommandOutcome(0, stdout=json.dumps(out))


async def judge_event(event: str, handler: ReadyHandler, payload: Mapping[str, Any],
                      session: Any) -> CommandOutcome:
    """Ask the model about the event (a side request through the session's model port)."""
    import anyio

    ports = getattr(session, "ports", None)
    model_port = getattr(ports, "model", None)
    if model_port is None:
        return CommandOutcome(None, error="a prompt hook needs a session with a model; "
                                          "skipped")
    try:
        with anyio.fail_after(handler.timeout_s):
            answer = await model_port.complete(system=PROMPT_SYSTEM, purpose=PURPOSE,
                                               prompt=prompt_text(handler.command, payload),
                                               model=handler.model, max_tokens=512)
    except TimeoutError:
        return CommandOutcome(None, timed_out=True)
    except Exception as exc:  # the provider's errors: a non-blocking error, as Claude's
        return CommandOutcome(None, error=f"the hook's model could not answer: "
                                          f"{type(exc).__name__}: {exc}")
    return verdict_answer(event, answer)
