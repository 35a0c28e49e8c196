"""What goes on a client's message stream besides translated events.

The :class:`End` mark that closes a ``query()`` stream, the text of a streamed user-message
dict, a run that raised turned into a failed result (so a reader always gets a
``ResultMessage``), and the forwarding of a sub-agent's tool calls and results.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ..errors import UsageError, ZpiError
from ..support.attrs_methods import FrozenFieldsEq

if TYPE_CHECKING:
    from ..agent.events import Event
    from ..session.agent_session import AgentSession, RunResult

__all__ = ["ChildMessages", "End", "failed_run", "once", "user_text"]


@attrs.frozen(repr=False, eq=False, slots=False)
class End(FrozenFieldsEq):
    """Marks the end of a ``query()`` stream; carries the error that ended it, if any."""

    error: BaseException | None = None


async def once(text: str) -> AsyncIterator[str]:
    """A one-input stream (a plain ``query()`` with a string)."""
    yield text


def user_text(item: Any) -> str:
    """The text of one streamed user-message dict
    (``{"type": "user", "message": {"role": "user", "content": ...}}``)."""
    if isinstance(item, str):
        return item
    message = item.get("message") if isinstance(item, Mapping) else None
    if not isinstance(item, Mapping) or item.get("type") != "user" or \
            not isinstance(message, Mapping):
        raise UsageError(f"a streamed input must be {{'type': 'user', 'message': {{'role': "
                         f"'user', 'content': ...}}}}, got {item!r:.200}")
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for block in content:
            if not isinstance(block, Mapping) or block.get("type") != "text":
                raise UsageError(f"only text content can be streamed in; got {block!r:.100}")
            texts.append(str(block.get("text", "")))
        return "\n".join(texts)
    raise UsageError(f"the message content must be a string or a list of text blocks, got "
                     f"{content!r:.100}")


class ChildMessages:
    """A sub-agent's tool calls and results on the message stream, each marked with the
    ``parent_tool_use_id`` of the call that started it (claude-agent-sdk's default; its text
    is not forwarded). ``client`` has ``_translator`` and ``_send`` (an SDKClient)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._unsubscribe: dict[str, Any] = {}

    async def subagent_started(self, child: AgentSession, link: Any) -> None:
        def forward(event: Event) -> None:
            client = self.client
            if client._translator is None or client._send is None:
                return
            for message in client._translator.subagent(event, link.tool_call_id):
                client._send.send_nowait(message)

        self._unsubscribe[child.session_id] = child.subscribe(forward,
                                                              ["message_end", "tool_end"])

    async def subagent_stopped(self, child: AgentSession, link: Any) -> None:
        unsubscribe = self._unsubscribe.pop(child.session_id, None)
        if unsubscribe is not None:
            unsubscribe()


def failed_run(session: AgentSession, exc: Exception, started: float) -> RunResult:
    """A run that raised (a bug in a callback, a typed error from a plugin) as a failed
    result, so the reader always gets a ResultMessage."""
    from ..providers.messages import Usage
    from ..session.agent_session import RunResult

    what = str(exc) if isinstance(exc, ZpiError) else f"{type(exc).__name__}: {exc}"
    return RunResult(result=what, is_error=True, num_turns=0, session_id=session.session_id,
                     usage=Usage(), duration_ms=int((time.perf_counter() - started) * 1000),
                     stop_reason="error", error=what, failure=exc)
